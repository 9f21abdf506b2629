#include "model/record.hpp"

#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <random>

namespace ctx {

const char* unit_name(Unit unit) {
  switch (unit) {
    case Unit::ns: return "ns";
    case Unit::cycles: return "cycles";
    case Unit::instructions: return "instructions";
    case Unit::msgs_per_s: return "msgs/s";
  }
  return "ns";
}

std::optional<Unit> unit_from_name(const std::string& name) {
  for (Unit unit : {Unit::ns, Unit::cycles, Unit::instructions, Unit::msgs_per_s})
    if (name == unit_name(unit)) return unit;
  return std::nullopt;
}

const char* status_name(Status status) {
  switch (status) {
    case Status::ok: return "ok";
    case Status::suspect: return "suspect";
    case Status::unsupported: return "unsupported";
    case Status::failed: return "failed";
  }
  return "failed";
}

const char* reason_name(Reason reason) {
  switch (reason) {
    case Reason::too_few_switches: return "too_few_switches";
    case Reason::too_many_switches: return "too_many_switches";
    case Reason::count_mismatch: return "count_mismatch";
    case Reason::migrated: return "migrated";
    case Reason::placement_unavailable: return "placement_unavailable";
    case Reason::nonpositive_after_baseline: return "nonpositive_after_baseline";
    case Reason::high_spread: return "high_spread";
    case Reason::timer_quantization: return "timer_quantization";
    case Reason::unstable: return "unstable";
    case Reason::not_supported_here: return "not_supported_here";
    case Reason::permission_denied: return "permission_denied";
    case Reason::built_without: return "built_without";
    case Reason::child_failed: return "child_failed";
    case Reason::timeout: return "timeout";
    case Reason::interrupted: return "interrupted";
    case Reason::error: return "error";
    case Reason::interference: return "interference";
  }
  return "error";
}

void Verdict::add(Status at_least, Reason reason, std::string detail) {
  auto rank = [](Status s) {
    switch (s) {
      case Status::ok: return 0;
      case Status::suspect: return 1;
      case Status::unsupported: return 2;
      case Status::failed: return 3;
    }
    return 3;
  };
  if (rank(at_least) > rank(status)) status = at_least;
  reasons.emplace_back(reason, std::move(detail));
}

nlohmann::json summary_to_json(const Summary& s) {
  nlohmann::json j = {{"n", s.n},           {"min", s.min}, {"median", s.median}, {"mean", s.mean},
                      {"stddev", s.stddev}, {"p90", s.p90}, {"p99", s.p99},       {"max", s.max}};
  if (s.median_ci) {
    j["median_ci"] = {{"low", s.median_ci->low},
                      {"high", s.median_ci->high},
                      {"level", s.median_ci->level},
                      {"method", s.median_ci->method}};
  } else {
    j["median_ci"] = nullptr;
  }
  return j;
}

nlohmann::json matrix_to_json(const Matrix& m) {
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& c : m.cells) {
    nlohmann::json cell = {{"row", c.row},
                           {"column", c.column},
                           {"class", c.pair_class},
                           {"first_sample", c.first_sample},
                           {"n", c.summary.n},
                           {"median", c.summary.median},
                           {"min", c.summary.min},
                           {"p99", c.summary.p99},
                           {"ops_per_sample", c.ops_per_sample},
                           {"observed", c.observed},
                           {"ok", c.problems.empty()}};
    cell["median_ci"] = c.summary.median_ci ? nlohmann::json({{"low", c.summary.median_ci->low},
                                                              {"high", c.summary.median_ci->high},
                                                              {"level", c.summary.median_ci->level}})
                                            : nlohmann::json(nullptr);
    if (c.switches_expected && c.switches_observed)
      cell["switches"] = {{"expected", *c.switches_expected}, {"observed", *c.switches_observed}};
    if (!c.problems.empty()) cell["problems"] = c.problems;
    cells.push_back(cell);
  }
  nlohmann::json classes = nlohmann::json::array();
  for (const auto& k : m.classes) {
    nlohmann::json entry = {{"class", k.name}, {"pairs", k.pairs}, {"measured", k.measured}};
    entry["summary"] = k.summary ? summary_to_json(*k.summary) : nlohmann::json(nullptr);
    if (k.summary) {
      entry["lowest_cell_median"] = k.lowest_cell_median;
      entry["highest_cell_median"] = k.highest_cell_median;
    }
    classes.push_back(entry);
  }
  return {{"cpus", m.cpus},
          {"rows", m.rows},
          {"columns", m.columns},
          {"diagonal", m.diagonal},
          {"cells", cells},
          {"classes", classes},
          {"selection", {{"pairs", m.pairs}, {"limit", m.limit}, {"sampled", m.sampled}, {"rule", m.rule}}},
          {"topology", m.topology},
          {"topology_root", m.topology_root}};
}

nlohmann::json params_to_json(const Params& values, const std::map<std::string, double>& numbers) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [key, value] : values) {
    auto numeric = numbers.find(key);
    if (numeric != numbers.end()) {
      const double v = numeric->second;
      // Whole numbers stay integers in JSON (procs: 4, not 4.0).
      if (v == std::floor(v) && std::fabs(v) < 9e15)
        params[key] = static_cast<std::int64_t>(v);
      else
        params[key] = v;
    } else {
      params[key] = value;
    }
  }
  return params;
}

nlohmann::json set_aside_to_json(const std::vector<double>& kept, const std::vector<double>& set_aside,
                                 const std::vector<SetAsideReason>& reasons) {
  if (set_aside.empty()) return nullptr;
  std::vector<double> all = kept;
  all.insert(all.end(), set_aside.begin(), set_aside.end());
  nlohmann::json j = {{"samples", set_aside}, {"summary_with_them", summary_to_json(summarize(all))}};
  if (reasons.size() == set_aside.size()) {
    nlohmann::json why = nlohmann::json::array();
    for (const auto reason : reasons) why.push_back(set_aside_reason_name(reason));
    j["reasons"] = why;
  }
  return j;
}

nlohmann::json counters_to_json(const CounterTotals& c) {
  const SampleCounters& k = c.kept;
  nlohmann::json kept = {{"samples", c.kept_samples},      {"wall_ns", k.wall_ns},   {"exec_ns", k.exec_ns},
                         {"run_delay_ns", k.run_delay_ns}, {"steal_ns", k.steal_ns}, {"interfered", c.kept_interfered}};
  if (c.sharing == Sharing::one_cpu)
    kept["other_share"] = k.wall_ns > 0 ? std::max(0.0, k.wall_ns - k.exec_ns) / k.wall_ns : 0.0;
  if (c.sharing == Sharing::own_cpus) {
    kept["involuntary"] = k.involuntary;
    kept["wait_share"] = k.wall_ns > 0 ? k.run_delay_ns / k.wall_ns : 0.0;
  }
  nlohmann::json set_aside = nlohmann::json::object();
  for (int i = 0; i < set_aside_reason_count; ++i)
    set_aside[set_aside_reason_name(static_cast<SetAsideReason>(i))] = c.set_aside[static_cast<std::size_t>(i)];
  nlohmann::json j = {{"sharing", sharing_name(c.sharing)},
                      {"tasks", c.tasks},
                      {"cpus", c.cpus},
                      {"other_share_limit", other_share_limit},
                      {"own_cpus_wait_limit", own_cpus_wait_limit},
                      {"kept_interfered_limit", kept_interfered_limit},
                      {"kept", kept},
                      {"set_aside", set_aside}};
  if (!c.read_ns.empty()) j["read_ns"] = summarize(c.read_ns).median;
  if (!c.unread.empty()) j["unread"] = c.unread;
  return j;
}

nlohmann::json clean_to_json(const CleanSampling& c, std::size_t kept, std::size_t set_aside) {
  nlohmann::json j = {{"needed", c.needed},        {"clean", c.clean},     {"filled", c.filled},
                      {"taken", kept + set_aside}, {"kept", kept},         {"set_aside", set_aside},
                      {"budget_s", c.budget_s},    {"spent_s", c.spent_s}, {"got", got_clean(c)}};
  if (c.tail_figure) j["tail"] = {{"method", tail_method}, {"value", *c.tail_figure}};
  if (c.filled > 0) j["filled_inside"] = c.filled_inside;
  return j;
}

namespace {

nlohmann::json baseline_to_json(const Result& r) {
  if (!r.baseline) return nullptr;
  nlohmann::json b = {{"name", r.baseline->name}, {"value", r.baseline->value}, {"unit", unit_name(r.baseline->unit)}};
  if (!r.baseline->probe.empty()) b["probe"] = r.baseline->probe;
  if (r.baseline->summary) b["summary"] = summary_to_json(*r.baseline->summary);
  if (!r.baseline->set_aside.empty())
    b["set_aside"] = set_aside_to_json(r.baseline->samples, r.baseline->set_aside, r.baseline->set_aside_reasons);
  return b;
}

nlohmann::json corrected_to_json(const Result& r) {
  if (!r.baseline || !r.summary) return nullptr;
  const double median = r.summary->median - r.baseline->value;
  // One constant (the baseline's median) is subtracted from every figure,
  // so corrected values keep the raw ones' order (min <= median <= p99).
  const double minimum = r.summary->min - r.baseline->value;
  return {
      {"median", median}, {"min", minimum}, {"p99", r.summary->p99 - r.baseline->value}, {"nonpositive", median <= 0}};
}

nlohmann::json stability_to_json(const Stability& stability) {
  nlohmann::json modes = nlohmann::json::array();
  for (const auto& m : stability.modes)
    modes.push_back({{"center", m.center}, {"low", m.low}, {"high", m.high}, {"share", m.share}});
  return {{"method", fmt::format("modes split where a sorted sample exceeds the one before by over {}x, "
                                 "holding at least {:.0f}% of the samples ({} or more); unstable with two or more "
                                 "modes or p75/p25 over {}",
                                 mode_gap_ratio, 100 * min_mode_share, min_mode_samples, max_middle_spread)},
          {"middle_spread", stability.middle_spread},
          {"modes", modes},
          {"outside_modes", stability.outside_modes},
          {"unstable", stability.unstable}};
}

nlohmann::json timer_to_json(const Result& r) {
  return {{"source", r.timer_source.empty() ? std::string("none") : r.timer_source},
          {"overhead_ns", r.timer_overhead_ns ? nlohmann::json(*r.timer_overhead_ns) : nlohmann::json(nullptr)},
          {"resolution_ns", r.timer_resolution_ns ? nlohmann::json(*r.timer_resolution_ns) : nlohmann::json(nullptr)},
          {"corrected", r.timer_corrected}};
}

nlohmann::json placement_to_json(const Result& r) {
  nlohmann::json placement = {{"requested", r.placement_requested}};
  placement["cpus"] = r.placement_cpus;
  if (!r.observed_start.empty()) placement["observed_start"] = r.observed_start;
  if (!r.observed_end.empty()) placement["observed_end"] = r.observed_end;
  if (!r.placement_why.empty()) placement["why"] = r.placement_why;
  return placement;
}

nlohmann::json checks_to_json(const std::vector<Check>& all) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : all) {
    nlohmann::json cj = {{"name", c.name}, {"ok", c.ok}};
    if (!c.expected.is_null()) cj["expected"] = c.expected;
    if (!c.observed.is_null()) cj["observed"] = c.observed;
    if (c.ratio) cj["ratio"] = *c.ratio;
    if (c.most != 1) cj["most"] = c.most;
    if (!c.detail.empty()) cj["detail"] = c.detail;
    checks.push_back(cj);
  }
  return checks;
}

nlohmann::json verdict_to_json(const Verdict& verdict) {
  nlohmann::json reasons = nlohmann::json::array();
  for (const auto& [code, detail] : verdict.reasons)
    reasons.push_back({{"code", reason_name(code)}, {"detail", detail}});
  return {{"status", status_name(verdict.status)}, {"reasons", reasons}};
}

nlohmann::json interference_to_json(const Interference& in) {
  nlohmann::json attempts = nlohmann::json::array();
  for (const auto& a : in.attempts) {
    attempts.push_back({{"median", a.median},
                        {"reference_ratio", in.best_ns > 0 ? a.reference_median_ns / in.best_ns : 0.0},
                        {"slowed_share", a.slowed_share},
                        {"samples", a.samples},
                        {"set_aside", a.set_aside}});
    if (a.set_aside_median) attempts.back()["set_aside_median"] = *a.set_aside_median;
  }
  return {{"reference", in.reference},
          {"best_ns", in.best_ns},
          {"slowed_ratio", slowed_ratio},
          {"retries", in.retries},
          {"attempts", attempts},
          {"kept", in.kept},
          {"slowed", !in.attempts.empty() && slowed(in.attempts[in.kept], in.best_ns)}};
}

}  // namespace

nlohmann::json result_to_json(const Result& r) {
  const nlohmann::json params = params_to_json(r.params, r.numeric_params);
  nlohmann::json j = {
      {"schema", schema_version}, {"kind", "result"}, {"run_id", r.run_id},        {"probe", r.probe},
      {"family", r.family},       {"params", params}, {"unit", unit_name(r.unit)}, {"op", r.op},
  };
  if (r.variant_index > 0) j["variant_index"] = r.variant_index;
  if (r.ops_per_sample > 0) j["ops_per_sample"] = r.ops_per_sample;
  j["warmup_samples"] = r.warmup_samples;
  j["samples"] = r.samples;
  j["summary"] = r.summary ? summary_to_json(*r.summary) : nlohmann::json(nullptr);
  if (!r.set_aside.empty() && !r.samples.empty())
    j["set_aside"] = set_aside_to_json(r.samples, r.set_aside, r.set_aside_reasons);
  j["baseline"] = baseline_to_json(r);
  j["corrected"] = corrected_to_json(r);
  if (r.stability) j["stability"] = stability_to_json(*r.stability);
  j["derived"] = r.derived;
  j["timer"] = timer_to_json(r);
  j["placement"] = placement_to_json(r);
  j["checks"] = checks_to_json(r.checks);
  j["verdict"] = verdict_to_json(r.verdict);
  if (!r.started_at.empty()) j["started_at"] = r.started_at;
  j["duration_s"] = r.duration_s;
  j["source"] = "engine";
  if (!r.notes.empty()) j["notes"] = r.notes;
  if (r.matrix) j["matrix"] = matrix_to_json(*r.matrix);
  j["host_reference"] = r.host_reference ? "on" : "off";
  if (!r.trace.is_null()) j["trace"] = r.trace;
  if (!r.schedule.is_null()) j["schedule"] = r.schedule;
  if (r.counters) j["counters"] = counters_to_json(*r.counters);
  if (r.clean) j["clean"] = clean_to_json(*r.clean, r.samples.size(), r.set_aside.size());
  if (r.interference) j["interference"] = interference_to_json(*r.interference);
  return j;
}

std::string utc_now_iso() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm utc{};
  gmtime_r(&ts.tv_sec, &utc);
  char buffer[32];
  strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::string new_run_id() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm utc{};
  gmtime_r(&ts.tv_sec, &utc);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  std::random_device entropy;
  return fmt::format("{}-{:08x}", stamp, entropy() ^ static_cast<unsigned>(getpid()));
}

}  // namespace ctx
