#include "cli/run_command.hpp"

#include <fmt/format.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>

#include "cli/exits.hpp"
#include "cli/monitor.hpp"
#include "measure/harness.hpp"
#include "measure/traced_pass.hpp"
#include "os/env.hpp"
#include "os/shield.hpp"
#include "os/tasks.hpp"
#include "os/timer.hpp"
#include "plan/presets.hpp"
#include "plan/schedule.hpp"
#include "report/output.hpp"
#include "report/wording.hpp"
#include "trace/trace.hpp"

namespace ctx {

namespace {

// The engine ends (as on SIGTERM: children reaped, run_end written) when the
// process that started it dies, even by SIGKILL. For a front end such as
// ctxbench, which starts the engine in a session of its own where no
// terminal hang-up reaches it. The kernel signals it (PR_SET_PDEATHSIG);
// where a sandbox refuses prctl, the monitor watches the parent instead.
struct ParentWatch {
  bool gone = false;  // the parent died before the watch began: nobody will signal us
  pid_t poll = 0;     // the parent the monitor must watch (0: the kernel signals us)
  int refused = 0;    // the errno prctl gave
};

ParentWatch die_with_parent() {
  ParentWatch watch;
  const pid_t parent = getppid();
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) {
    watch.refused = errno;
    watch.poll = parent;
  }
  watch.gone = getppid() != parent;
  return watch;
}

// --die-with-parent: the exit status when the run must not start.
std::optional<int> watch_parent(const RunOptions& o, ParentWatch& parent) {
  if (!o.die_with_parent) return std::nullopt;
  parent = die_with_parent();
  if (parent.gone) {
    diagnostic(parent_gone_error());
    return exit_interrupted;
  }
  if (parent.refused != 0) diagnostic(parent_watch_refused_note(parent.refused));
  return std::nullopt;
}

// --trace: checked before anything is measured, while the engine has one
// thread (a mount namespace of its own is the whole process's only then).
std::optional<int> check_tracing(const RunOptions& o) {
  if (!o.trace) return std::nullopt;
  bool mounted = false;
  if (const auto problem = prepare_tracing(&mounted)) {
    if (!o.trace_optional) return usage_error(trace_unavailable_error(*problem));
    if (!o.dry_run) diagnostic(trace_unavailable_note(*problem));
  } else if (mounted && !o.dry_run) {
    diagnostic(tracefs_mounted_note());
  }
  return std::nullopt;
}

// Where the records go (stdout, --out) and how they are shown (JSON Lines, a
// table, a preset's comparison). The sinks outlive the reporters that use them.
struct Sinks {
  std::optional<Sink> stdout_sink, out_sink;
};
std::optional<int> open_outputs(const RunOptions& o, const Selection& selection, Sinks& sinks, Output& output) {
  std::FILE* out_file = nullptr;
  if (!o.out.empty()) {
    out_file = std::fopen(o.out.c_str(), "w");
    if (!out_file) return usage_error(out_unwritable_error(o.out, errno));
  }
  sinks.stdout_sink.emplace(stdout, "stdout");
  if (out_file) sinks.out_sink.emplace(out_file, o.out);
  if (o.json) {
    output.add(std::make_unique<JsonLinesReporter>(sinks.out_sink ? *sinks.out_sink : *sinks.stdout_sink));
    return std::nullopt;
  }
  if (!o.preset.empty()) {
    const PresetDescriptor& preset = find_preset(o.preset);
    const auto laps = selection.choices.find("laps");
    output.add(std::make_unique<ComparisonReporter>(
        *sinks.stdout_sink,
        preset_title(preset.name, preset.description, laps == selection.choices.end() ? nullptr : &laps->second)));
  }
  output.add(std::make_unique<TableReporter>(*sinks.stdout_sink));
  if (sinks.out_sink) output.add(std::make_unique<JsonLinesReporter>(*sinks.out_sink));
  return std::nullopt;
}

// The env record's `options`: how the run was asked to measure.
nlohmann::json run_options_record(const RunOptions& o, const RunPlan& plan) {
  const HarnessOptions& harness = plan.harness;
  const ScheduleOptions& schedule = plan.schedule;
  nlohmann::json options = {{"quick", o.quick},
                            {"samples", harness.samples},
                            {"min_time_s", harness.min_sample_s},
                            {"warmup_samples", harness.warmup_samples},
                            {"retries", harness.retries},
                            {"clean_budget_s", harness.clean_budget_s},
                            {"host_reference", plan.host_reference ? "on" : "off"},
                            {"interleave", schedule.interleave ? "rounds" : "off"},
                            {"probes", o.probes},
                            {"preset", o.preset.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.preset)},
                            {"variants", plan.variants.size()}};
  if (schedule.interleave) {
    options["rounds"] = schedule.rounds;
    options["seed"] = schedule.seed;
  }
  return options;
}

// Runs `measure` under the variant time limit; a timeout names the limit.
Result measure_limited(Monitor& monitor, double timeout_s, const std::function<Result()>& measure) {
  timeout_flag().store(false);
  monitor.variant_deadline_ns.store(monotonic_raw_ns() + static_cast<std::uint64_t>(timeout_s * 1e9));
  Result result = measure();
  monitor.variant_deadline_ns.store(0);
  if (timeout_flag().load() && result.verdict.status == Status::failed) {
    auto& reasons = result.verdict.reasons;
    std::erase_if(reasons, [](const auto& reason) { return reason.first == Reason::timeout; });
    reasons.insert(reasons.begin(), {Reason::timeout, variant_overran_detail(timeout_s)});
  }
  return result;
}

// What the scheduler calls back into the run for, by name.
ScheduleHooks run_hooks(const RunOptions& o, const RunPlan& plan, Monitor& monitor, Clock& clock) {
  const bool tty_progress = !o.progress && isatty(STDERR_FILENO);
  return ScheduleHooks{
      .announce =
          [&o, &plan, tty_progress](std::size_t i, std::size_t attempt, int round) {
            const Variant& v = plan.variants[i];
            const ProgressPoint at{i, plan.variants.size(), attempt, round,
                                   rounds_for(*v.probe, plan.harness.samples, plan.schedule)};
            if (o.progress)
              to_stderr(progress_line(at, v.probe->name, v.params));
            else if (tty_progress)
              to_stderr(progress_text(at, v.probe->name, v.params));
          },
      .limited =
          [&monitor, &plan](const std::function<Result()>& measure) {
            return measure_limited(monitor, plan.variant_timeout_s, measure);
          },
      .after_measured =
          [&o, &clock](const Variant& v, Result& r) {
            if (o.trace && wants_traced_pass(*v.probe, r)) add_traced_pass(r, *v.probe, v.params, clock);
          },
      .output_failed =
          [&monitor](const OutputError& failure) {
            monitor.end_now(output_exit_code(failure.error), fmt::format("error: {}; the run stopped", failure.what()));
          },
      .round_kept =
          [&o](const Result& so_far) {
            // Beside the progress: a front end keeps the rounds taken should the
            // engine be killed (SIGKILL, SIGSYS) before the variant's record.
            if (o.progress) to_stderr(fmt::format("@partial {}\n", result_to_json(so_far).dump()));
          },
  };
}

// Measures every variant and writes run_end; the exit status.
int measure_run(const RunPlan& plan, Monitor& monitor, Output& output, Clock& clock, const TimerInfo& timer,
                const std::string& run_id, ScheduleHooks hooks) {
  Scheduler scheduler(plan.variants, plan.harness, plan.schedule, clock, timer, output, run_id, std::move(hooks));
  {
    std::lock_guard guard(output.lock());
    monitor.scheduler = &scheduler;
  }
  scheduler.run();
  {
    std::lock_guard guard(output.lock());
    monitor.scheduler = nullptr;  // everything is written; the scheduler ends before the monitor thread
  }
  std::optional<OutputError> failure;
  {
    std::lock_guard guard(output.lock());
    failure = output.end(run_id, static_cast<double>(monotonic_raw_ns() - monitor.run_started_ns) / 1e9, false);
  }
  if (failure) exit_after(*failure, "; the run had finished, but its closing record was not written");
  return 0;
}

}  // namespace

int run_command(const RunOptions& o) {
  RunPlan plan;
  try {
    plan = plan_run(o);
  } catch (const UsageError& e) {
    return usage_error(e.what());
  }
  ParentWatch parent;
  if (const auto status = watch_parent(o, parent)) return *status;
  if (const auto status = check_tracing(o)) return *status;
  if (o.dry_run) {
    std::string text;
    for (const auto& v : plan.variants) text += variant_json(v).dump() + "\n";
    return print_checked(text);
  }

  Shield shield(o.shield);  // before any thread starts: its watcher is forked; released on every way out
  Sinks sinks;              // outlive the reporters and the monitor that use them
  Output output;
  Monitor monitor;
  monitor.output = &output;
  monitor.parent = parent.poll;
  std::thread monitor_thread;
  try {
    monitor_thread = std::thread([&] { monitor.loop(); });
  } catch (const std::system_error& e) {
    diagnostic(no_monitor_thread_error(e.code().message()));
    return exit_failure;
  }
  struct StopMonitor {
    Monitor& monitor;
    std::thread& thread;
    ~StopMonitor() {
      monitor.stop.store(true);
      thread.join();
    }
  } stop_monitor{monitor, monitor_thread};
  if (const auto status = open_outputs(o, plan.selection, sinks, output)) return *status;

  std::string timer_note;
  auto clock = make_best_clock(o.quick ? 0.02 : 0.1, &timer_note);
  const TimerInfo timer = characterize(*clock);
  std::optional<HostReference> reference;
  if (plan.host_reference) {
    reference.emplace(*clock, 20000, o.quick ? 0.25 : 1.0);
    plan.harness.reference = &*reference;
  }
  // The kernel's counters around each sample, and a same-CPU variant on the
  // least busy CPU (kernel_counters.hpp).
  ProcCounters counters;
  plan.harness.counters = &counters;
  plan.harness.place_on_least_busy = true;
  const std::string run_id = new_run_id();
  nlohmann::json env = capture_environment(run_id, timer, timer_note);
  env["options"] = run_options_record(o, plan);
  if (!o.shield.empty()) env["shield"] = shield.record();
  {
    std::lock_guard guard(output.lock());
    monitor.run_id = run_id;
    monitor.run_started_ns = monotonic_raw_ns();
  }
  try {
    output.begin(env);
  } catch (const OutputError& failure) {
    exit_after(failure, "; nothing was run");
  }
  return measure_run(plan, monitor, output, *clock, timer, run_id, run_hooks(o, plan, monitor, *clock));
}

}  // namespace ctx
