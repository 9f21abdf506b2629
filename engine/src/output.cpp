#include "output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ctx {

void Counts::add(Status status) {
  switch (status) {
    case Status::ok: ++ok; break;
    case Status::suspect: ++suspect; break;
    case Status::unsupported: ++unsupported; break;
    case Status::failed: ++failed; break;
  }
}

std::string format_params(const Params& params) {
  std::string text;
  for (const auto& [key, value] : params) text += fmt::format("{}{}={}", text.empty() ? "" : " ", key, value);
  return text.empty() ? "-" : text;
}

std::string format_ns(double ns) {
  const double magnitude = std::fabs(ns);
  if (magnitude >= 1e6) return fmt::format("{:.2f} ms", ns / 1e6);
  if (magnitude >= 1e4) return fmt::format("{:.1f} us", ns / 1e3);
  if (magnitude >= 100) return fmt::format("{:.0f} ns", ns);
  return fmt::format("{:.1f} ns", ns);
}

std::string format_value(double value, Unit unit) {
  if (unit == Unit::ns) return format_ns(value);
  if (unit == Unit::msgs_per_s) return fmt::format("{:.0f} msgs/s", value);
  return fmt::format("{:.1f} {}", value, unit_name(unit));
}

void JsonLinesReporter::line(const nlohmann::json& j) {
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::fputs(text.c_str(), out_);
  std::fputc('\n', out_);
  std::fflush(out_);
}

void JsonLinesReporter::begin(const nlohmann::json& env) { line(env); }
void JsonLinesReporter::result(const Result& result) { line(result_to_json(result)); }
void JsonLinesReporter::end(const nlohmann::json& run_end) { line(run_end); }

void TableReporter::begin(const nlohmann::json& env) {
  fmt::print(out_, "# ctxbench-engine {}  run {}\n# {} | {} cpus | kernel {} | virt {} | timer {}\n",
             env["producer"]["version"].get<std::string>(), env["run_id"].get<std::string>(),
             env["cpu"]["model"].get<std::string>(), env["cpu"]["logical"].get<long>(),
             env["kernel"]["release"].get<std::string>(), env["virtualization"]["detected"].get<std::string>(),
             env["cpu"]["tsc"]["timer"].get<std::string>());
  fmt::print(out_, "{:<28} {:<36} {:>10} {:>10} {:>21} {:>10} {:>10}  {}\n", "probe", "params", "median", "p99",
             "95% CI of median", "baseline", "corrected", "verdict");
  std::fflush(out_);
}

void TableReporter::result(const Result& r) {
  std::string median = "-", p99 = "-", ci = "-", baseline = "-", corrected = "-";
  if (r.summary) {
    median = format_value(r.summary->median, r.unit);
    p99 = format_value(r.summary->p99, r.unit);
    if (r.summary->median_ci)
      ci = fmt::format("{} .. {}", format_value(r.summary->median_ci->low, r.unit),
                       format_value(r.summary->median_ci->high, r.unit));
    if (r.baseline) {
      baseline = format_value(r.baseline->value, r.baseline->unit);
      corrected = format_value(r.summary->median - r.baseline->value, r.unit);
    }
  }
  fmt::print(out_, "{:<28} {:<36} {:>10} {:>10} {:>21} {:>10} {:>10}  {}\n", r.probe, format_params(r.params), median,
             p99, ci, baseline, corrected, status_name(r.verdict.status));
  for (const auto& [code, detail] : r.verdict.reasons) fmt::print(out_, "    {}: {}\n", reason_name(code), detail);
  std::fflush(out_);
}

void TableReporter::end(const nlohmann::json& run_end) {
  const auto& c = run_end["counts"];
  fmt::print(out_, "# {} ok, {} suspect, {} unsupported, {} failed{}\n", c["ok"].get<int>(), c["suspect"].get<int>(),
             c["unsupported"].get<int>(), c["failed"].get<int>(),
             run_end["interrupted"].get<bool>() ? " (interrupted: partial run)" : "");
  std::fflush(out_);
}

void ComparisonReporter::result(const Result& r) {
  const std::string label = r.probe + " " + format_params(r.params);
  if (r.summary && (r.verdict.status == Status::ok || r.verdict.status == Status::suspect))
    rows_.push_back({label, r.unit, r.summary->median});
  else
    unmeasured_.push_back(fmt::format("{}: {}", label, status_name(r.verdict.status)));
}

void ComparisonReporter::end(const nlohmann::json&) {
  fmt::print(out_, "# {}\n", title_);
  for (const auto& row : rows_) {
    double cheapest = row.median;
    for (const auto& other : rows_)
      if (other.unit == row.unit && other.median > 0) cheapest = std::min(cheapest, other.median);
    const std::string ratio =
        cheapest > 0 && row.median > 0 ? fmt::format("{:.1f}x the cheapest", row.median / cheapest) : "no ratio";
    fmt::print(out_, "#   {}: {} ({})\n", row.label, format_value(row.median, row.unit), ratio);
  }
  for (const auto& line : unmeasured_) fmt::print(out_, "#   {} (not measured)\n", line);
  std::fflush(out_);
}

void Output::begin(const nlohmann::json& env) {
  std::lock_guard guard(mutex_);
  for (auto& r : reporters_) r->begin(env);
}

void Output::result(const Result& result) {
  std::lock_guard guard(mutex_);
  counts_.add(result.verdict.status);
  for (auto& r : reporters_) r->result(result);
}

void Output::end(const std::string& run_id, double duration_s, bool interrupted) {
  if (ended_) return;
  ended_ = true;
  const nlohmann::json run_end = {{"schema", schema_version},
                                  {"kind", "run_end"},
                                  {"run_id", run_id},
                                  {"finished_at", utc_now_iso()},
                                  {"duration_s", duration_s},
                                  {"counts",
                                   {{"ok", counts_.ok},
                                    {"suspect", counts_.suspect},
                                    {"unsupported", counts_.unsupported},
                                    {"failed", counts_.failed}}},
                                  {"interrupted", interrupted}};
  for (auto& r : reporters_) r->end(run_end);
}

}  // namespace ctx
