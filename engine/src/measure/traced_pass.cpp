// The traced pass (traced_pass.hpp): open, run the variant again, read,
// analyze, and say in the record what the figures are and how they relate.
#include "measure/traced_pass.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "measure/harness.hpp"
#include "model/record.hpp"
#include "os/tasks.hpp"
#include "trace/trace.hpp"

namespace ctx {

namespace {

constexpr const char* method =
    "perf_event_open on tracepoints, one event per tracepoint per CPU the variant's tasks may use: the "
    "scheduler, idle and interrupt events of every task there, the system calls of the variant's tasks only "
    "(the measuring task's events, inherited by the tasks it creates); each CPU's events in one mmap ring read "
    "after the pass; timestamps on CLOCK_MONOTONIC_RAW; only the variant's tasks (the measuring task and every "
    "task it forked or cloned while traced) are followed";
constexpr const char* correction_rule =
    "each phase is given as measured under tracing: its mean per switch (total time / matched switches) and its "
    "typical share of a switch (median x switches that had it / matched switches); corrected = typical less "
    "event_cost_ns x the events recorded inside it on the CPU where it ends (its start event counted, its end "
    "event not), taken the same way (median count x switches that had it / matched switches). "
    "event_cost_ns is getppid's time with its two syscall events recorded less its time without, halved. "
    "untraced_explained_share = the corrected phases' sum / the untraced median. These figures are kept for "
    "reference: the corrected phases over-explain a same-CPU switch (tracing costs more than its per-event cost), "
    "and explain sets the phases against the figure by the tiling instead (tiling.rule)";

constexpr const char* tiling_rule =
    "the traced run's kept samples are timed on CLOCK_MONOTONIC_RAW, the events' clock, and the median one is "
    "tiled (the middle two of an even count: the traced counterpart of a median figure); each chain (a call "
    "entry through the hand-over to the woken task's next call, which is the next chain's call entry) is cut "
    "into intervals between consecutive marks, and each instant of the tiled time is given to the phase of "
    "the chain covering it (the earliest-starting one where two overlap, the overlap said), or to none. A "
    "phase's share is its time over the tiled time; per_switch_ns is its time over the tiled switches "
    "(operations). covered_share, the shares' sum, is at most 1; what it leaves is the traced time no chain "
    "covers (switches not followed, events lost, gaps between chains)";

// A short run: enough switches for the phases' distributions, few enough
// that every CPU's ring holds them (32 MiB a CPU on two CPUs, about 100
// bytes an event). A sample lasts long enough for about 500 switches at
// twice the untraced figure, between 2 and 50 ms: a fixed 2 ms let one slow
// first round trip across CPUs calibrate a cross-CPU sample to a single one.
HarnessOptions traced_options(double untraced_ns_per_switch) {
  HarnessOptions options = HarnessOptions::quick_run();
  options.samples = 5;
  options.warmup_samples = 1;
  options.min_sample_s = std::clamp(500 * 2 * untraced_ns_per_switch * 1e-9, 0.002, 0.05);
  options.max_variant_s = 3;
  options.retries = 0;
  options.reference = nullptr;
  options.defer_retries = false;
  return options;
}

// ns of a getppid call: the least of `rounds` loops of `calls` calls.
double getppid_ns(Clock& clock, int rounds, int calls) {
  double best = 0;
  for (int r = 0; r < rounds; ++r) {
    const std::uint64_t t0 = clock.now();
    for (int i = 0; i < calls; ++i) syscall(SYS_getppid);
    const double ns = clock.ticks_to_ns(clock.now() - t0) / calls;
    if (r == 0 || ns < best) best = ns;
  }
  return best;
}

// CTXBENCH_TRACE_EVENTS=FILE: the recorded events as text, one a line
// ("ts cpu tid kind a b"), the seed task first: what the unit tests' event
// sequences were cut from (docs/tracing.md).
void write_events(const char* path, const std::vector<TraceEvent>& events, int seed) {
  std::FILE* out = std::fopen(path, "w");
  if (!out) return;
  std::fprintf(out, "seed %d\n", seed);
  for (const auto& e : events)
    std::fprintf(out, "%llu %d %d %d %lld %lld\n", static_cast<unsigned long long>(e.ts), e.cpu, e.tid,
                 static_cast<int>(e.kind), static_cast<long long>(e.a), static_cast<long long>(e.b));
  std::fclose(out);
}

// Runs the calling thread on `cpus` for the guard's lifetime, then restores its mask.
class RunOn {
 public:
  explicit RunOn(const std::vector<int>& cpus) {
    saved_ok_ = sched_getaffinity(0, sizeof saved_, &saved_) == 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus) CPU_SET(cpu, &set);
    if (saved_ok_ && !cpus.empty()) sched_setaffinity(0, sizeof set, &set);
  }
  ~RunOn() {
    if (saved_ok_) sched_setaffinity(0, sizeof saved_, &saved_);
  }
  RunOn(const RunOn&) = delete;
  RunOn& operator=(const RunOn&) = delete;

 private:
  cpu_set_t saved_{};
  bool saved_ok_ = false;
};

nlohmann::json not_traced(const std::string& status, const std::string& reason) {
  return {{"status", status}, {"reason", reason}, {"method", method}};
}

}  // namespace

std::vector<std::string> silent_idle_events(std::vector<std::string> missing, const std::vector<TraceEvent>& events) {
  std::size_t idle_events = 0, to_idle = 0;
  for (const auto& e : events) {
    if (e.kind == TraceKind::cpu_idle) ++idle_events;
    if (e.kind == TraceKind::sched_switch && e.b == 0) ++to_idle;
  }
  const bool opened = std::find(missing.begin(), missing.end(), "power:cpu_idle") == missing.end();
  if (opened && idle_events == 0 && to_idle > 0)
    missing.push_back(fmt::format("power:cpu_idle (opened, never fired, though the CPUs went idle {} times)", to_idle));
  return missing;
}

bool wants_traced_pass(const ProbeDescriptor& probe, const Result& untraced) {
  return untraced.family == "switch" && !probe.matrix && untraced.summary &&
         (untraced.verdict.status == Status::ok || untraced.verdict.status == Status::suspect);
}

nlohmann::json trace_block(const PhaseReport& report, const std::optional<Summary>& traced,
                           std::optional<double> untraced_median, std::optional<double> event_cost_ns) {
  auto maybe = [](std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& p : report.phases)
    phases.push_back({{"from", p.from},
                      {"to", p.to},
                      {"count", p.count},
                      {"summary", summary_to_json(p.summary)},
                      {"mean_per_switch_ns", p.mean_per_switch_ns},
                      {"typical_per_switch_ns", p.typical_per_switch_ns},
                      {"events_per_switch", p.events_per_switch},
                      {"corrected_per_switch_ns", maybe(p.corrected_per_switch_ns)}});
  nlohmann::json block = {
      {"status", "ok"},
      {"method", method},
      {"switches",
       {{"tasks", report.tasks},
        {"woken", report.woken},
        {"matched", report.matched},
        {"direct", report.direct},
        {"cross_cpu", report.cross_cpu},
        {"without_switch", report.without_switch}}},
      {"period", report.period ? summary_to_json(*report.period) : nlohmann::json(nullptr)},
      {"phases", phases},
      {"attributed_per_switch_ns", report.attributed_per_switch_ns},
      {"typical_per_switch_ns", report.typical_per_switch_ns},
      {"traced_summary", traced ? summary_to_json(*traced) : nlohmann::json(nullptr)},
      {"untraced_median", maybe(untraced_median)},
      {"event_cost_ns", maybe(event_cost_ns)},
      {"corrected_per_switch_ns", maybe(report.corrected_per_switch_ns)},
      {"correction_rule", correction_rule},
  };
  const bool both = traced && untraced_median && traced->median > 0 && *untraced_median > 0;
  if (report.tiling) {
    const Tiling& t = *report.tiling;
    nlohmann::json tiled = nlohmann::json::array();
    for (const auto& p : t.phases)
      tiled.push_back({{"from", p.from}, {"to", p.to}, {"per_switch_ns", p.per_switch_ns}, {"share", p.share}});
    block["tiling"] = {{"rule", tiling_rule},
                       {"samples", t.samples},
                       {"batches", t.batches},
                       {"switches", t.switches},
                       {"batch_ns", t.batch_ns},
                       {"traced_per_switch_ns", t.traced_per_switch_ns},
                       {"covered_share", t.covered_share},
                       {"overlap_ns", t.overlap_ns},
                       {"chains", t.chains},
                       {"phases", tiled}};
  }
  block["overhead_ratio"] = both ? nlohmann::json(traced->median / *untraced_median) : nlohmann::json(nullptr);
  block["untraced_explained_share"] = report.corrected_per_switch_ns && untraced_median && *untraced_median > 0
                                          ? nlohmann::json(*report.corrected_per_switch_ns / *untraced_median)
                                          : nlohmann::json(nullptr);
  block["explained_share"] = traced && traced->median > 0 && report.matched > 0
                                 ? nlohmann::json(report.attributed_per_switch_ns / traced->median)
                                 : nlohmann::json(nullptr);
  if (report.matched == 0) {
    block["status"] = "failed";
    block["reason"] =
        "no switch between the variant's tasks was followed from a call's entry to the woken task's return in "
        "the events recorded";
  }
  return block;
}

namespace {

// The CPUs the traced pass records: the variant's placement, sorted, each
// once; `why` says why a placement was refused.
std::vector<int> traced_pass_cpus(const Result& untraced, const ProbeDescriptor& probe, const Params& params,
                                  std::string* why) {
  std::vector<int> cpus;
  const auto requested = params.find("cpus");
  if (const auto placement =
          resolve_placement(requested == params.end() ? "none" : requested->second, probe.tasks(params), why))
    cpus = placement->cpus;
  // A same-CPU variant ran on the CPU that was least busy when it began: the
  // traced pass runs there too, so its phases explain that figure.
  const bool same_cpu = untraced.placement_requested == "same" && !untraced.placement_cpus.empty();
  if (same_cpu) cpus.assign(1, untraced.placement_cpus.front());
  if (cpus.empty()) cpus = allowed_cpus();
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

// What the session recorded beside the phases: where, how much, what was lost.
void add_session_facts(nlohmann::json& block, const TraceSession& session, const std::vector<int>& cpus,
                       const std::vector<TraceEvent>& events, std::uint64_t lost, bool full) {
  block["method"] = method;
  block["tracefs"] = session.tracefs();
  block["events"] = session.events();
  block["missing_events"] = silent_idle_events(session.missing(), events);
  block["cpus"] = cpus;
  block["ring_kib"] = session.ring_bytes() / 1024;
  block["recorded"] = events.size();
  block["lost"] = lost;
  block["ring_full"] = full;
}

}  // namespace

void add_traced_pass(Result& untraced, const ProbeDescriptor& probe, const Params& params, Clock& clock) {
  std::string why;
  const std::vector<int> cpus = traced_pass_cpus(untraced, probe, params, &why);
  const bool same_cpu = untraced.placement_requested == "same" && !untraced.placement_cpus.empty();
  bool denied = false;
  auto session = TraceSession::open(cpus, &why, &denied);
  if (!session) {
    untraced.trace = not_traced("unsupported", why);
    untraced.notes.push_back("no traced pass: " + why);
    return;
  }
  // The variant's tasks are followed from this thread's forks, recorded on
  // the traced CPUs only: a variant measured on a thread of its own (the
  // seccomp axis) starts that thread from here, so this thread runs on the
  // traced CPUs while the variant runs, and its fork is recorded.
  RunOn traced_cpus(cpus);
  // The cost of recording one event: getppid with its two syscall events
  // recorded, against without (each the least of five loops).
  const double plain_ns = getppid_ns(clock, 5, 1000);
  session->enable();
  const double recorded_ns = getppid_ns(clock, 5, 1000);
  const int seed = static_cast<int>(syscall(SYS_gettid));
  // The baseline (the same calls in one task) is the untraced record's: here
  // its calls would only fill the rings.
  ProbeDescriptor without_baseline = probe;
  without_baseline.make_baseline = nullptr;
  // Timed on the events' clock, so the kept samples' batches place the
  // events in time (the tiling, phases.hpp).
  MonotonicRawClock raw_clock;
  const TimerInfo raw_timer = characterize(raw_clock, 2000);
  std::vector<TimedBatch> batches;
  HarnessOptions options = traced_options(untraced.summary ? untraced.summary->median : 0);
  options.kept_batches = &batches;
  if (same_cpu) {
    options.place_on_least_busy = true;  // with same_cpu set: that CPU, no new choice
    options.same_cpu = cpus.front();
  }
  const Result traced = run_variant(without_baseline, params, raw_clock, raw_timer, options);
  session->disable();
  std::uint64_t lost = 0;
  bool full = false;
  const std::vector<TraceEvent> events = session->read(&lost, &full);
  if (const char* dump = std::getenv("CTXBENCH_TRACE_EVENTS"); dump && *dump) write_events(dump, events, seed);

  nlohmann::json block;
  if (!traced.summary) {
    block = not_traced("failed", "the traced run gave no figure: " + (traced.verdict.reasons.empty()
                                                                          ? std::string("no samples")
                                                                          : traced.verdict.reasons.front().second));
  } else {
    const double event_cost_ns = std::max(0.0, (recorded_ns - plain_ns) / 2);  // a call records two events
    const PhaseReport report = analyze_switches(events, seed, event_cost_ns, batches);
    block =
        trace_block(report, traced.summary,
                    untraced.summary ? std::optional<double>(untraced.summary->median) : std::nullopt, event_cost_ns);
    block["traced_verdict"] = status_name(traced.verdict.status);
  }
  add_session_facts(block, *session, cpus, events, lost, full);
  if (lost > 0 || full)
    untraced.notes.push_back(
        "the traced pass filled a ring buffer and lost events: the switches after it are not followed");
  untraced.trace = std::move(block);
}

}  // namespace ctx
