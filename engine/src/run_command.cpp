#include "run_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
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

#include "env.hpp"
#include "exits.hpp"
#include "harness.hpp"
#include "monitor.hpp"
#include "output.hpp"
#include "presets.hpp"
#include "schedule.hpp"
#include "tasks.hpp"
#include "timer.hpp"
#include "trace.hpp"
#include "traced_pass.hpp"

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

}  // namespace

int run_command(const RunOptions& o) {
  RunPlan plan;
  try {
    plan = plan_run(o);
  } catch (const UsageError& e) {
    return usage_error(e.what());
  }
  HarnessOptions& harness = plan.harness;
  const ScheduleOptions& schedule = plan.schedule;
  const double variant_timeout_s = plan.variant_timeout_s;
  const Selection& selection = plan.selection;
  const std::vector<Variant>& variants = plan.variants;
  ParentWatch parent;
  if (o.die_with_parent) {
    parent = die_with_parent();
    if (parent.gone) {
      diagnostic("error: the process that started the engine is gone; nothing was run");
      return exit_interrupted;
    }
    if (parent.refused != 0)
      diagnostic(
          fmt::format("note: prctl(PR_SET_PDEATHSIG) was refused ({}: a sandbox's seccomp filter?); the "
                      "engine checks every 0.1 s that the process that started it is still there instead",
                      std::strerror(parent.refused)));
  }
  // Checked before anything is measured, while the engine has one thread
  // (a mount namespace of its own is the whole process's only then).
  if (o.trace) {
    bool mounted = false;
    if (const auto problem = prepare_tracing(&mounted)) {
      if (!o.trace_optional)
        return usage_error(fmt::format("--trace: {}; or give --trace-optional to run untraced", *problem));
      if (!o.dry_run) diagnostic(fmt::format("note: --trace: {}; running untraced (--trace-optional)", *problem));
    } else if (mounted && !o.dry_run) {
      diagnostic(
          "note: --trace: tracefs was not mounted; the engine mounted it at /sys/kernel/tracing in a mount "
          "namespace of its own, which ends with the run (nothing changed outside it)");
    }
  }
  if (o.dry_run) {
    std::string text;
    for (const auto& v : variants) text += variant_json(v).dump() + "\n";
    return print_checked(text);
  }

  std::optional<Sink> stdout_sink, out_sink;  // outlive the reporters and the monitor that use them
  Output output;
  Monitor monitor;
  monitor.output = &output;
  monitor.parent = parent.poll;
  std::thread monitor_thread;
  try {
    monitor_thread = std::thread([&] { monitor.loop(); });
  } catch (const std::system_error& e) {
    diagnostic(
        fmt::format("error: cannot start the engine's monitor thread: {}; nothing was run (is the process "
                    "limit, ulimit -u, too low?)",
                    e.code().message()));
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

  std::FILE* out_file = nullptr;
  if (!o.out.empty()) {
    out_file = std::fopen(o.out.c_str(), "w");
    if (!out_file)
      return usage_error(
          fmt::format("--out: cannot write '{}': {}; choose a writable path", o.out, std::strerror(errno)));
  }
  stdout_sink.emplace(stdout, "stdout");
  if (out_file) out_sink.emplace(out_file, o.out);
  if (o.json)
    output.add(std::make_unique<JsonLinesReporter>(out_sink ? *out_sink : *stdout_sink));
  else {
    if (!o.preset.empty()) {
      const PresetDescriptor& preset = find_preset(o.preset);
      // The header states the laps this run makes (a --param laps=... replaces the preset's).
      std::string title = preset.name + ": " + preset.description;
      if (auto laps = selection.choices.find("laps"); laps != selection.choices.end())
        title += fmt::format("; {} laps each (one lap is one switch by every worker)", fmt::join(laps->second, ", "));
      output.add(std::make_unique<ComparisonReporter>(*stdout_sink, title));
    }
    output.add(std::make_unique<TableReporter>(*stdout_sink));
    if (out_sink) output.add(std::make_unique<JsonLinesReporter>(*out_sink));
  }

  std::string timer_note;
  auto clock = make_best_clock(o.quick ? 0.02 : 0.1, &timer_note);
  const TimerInfo timer = characterize(*clock);
  const bool host_reference = plan.host_reference;
  std::optional<HostReference> reference;
  if (host_reference) {
    reference.emplace(*clock, 20000, o.quick ? 0.25 : 1.0);
    harness.reference = &*reference;
  }
  // The kernel's counters around each sample, and a same-CPU variant on the
  // least busy CPU (kernel_counters.hpp).
  ProcCounters counters;
  harness.counters = &counters;
  harness.place_on_least_busy = true;
  const std::string run_id = new_run_id();
  nlohmann::json env = capture_environment(run_id, timer, timer_note);
  env["options"] = {{"quick", o.quick},
                    {"samples", harness.samples},
                    {"min_time_s", harness.min_sample_s},
                    {"warmup_samples", harness.warmup_samples},
                    {"retries", harness.retries},
                    {"host_reference", host_reference ? "on" : "off"},
                    {"interleave", schedule.interleave ? "rounds" : "off"},
                    {"probes", o.probes},
                    {"preset", o.preset.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.preset)},
                    {"variants", variants.size()}};
  if (schedule.interleave) {
    env["options"]["rounds"] = schedule.rounds;
    env["options"]["seed"] = schedule.seed;
  }

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
  const bool tty_progress = !o.progress && isatty(STDERR_FILENO);
  auto announce = [&](std::size_t i, std::size_t attempt, int round) {
    const Variant& v = variants[i];
    const int rounds = rounds_for(*v.probe, harness.samples, schedule);
    if (o.progress) {
      nlohmann::json line = {
          {"index", i + 1}, {"total", variants.size()}, {"probe", v.probe->name}, {"params", nlohmann::json(v.params)}};
      if (attempt > 1) line["attempt"] = attempt;
      if (round > 0) {
        line["round"] = round;
        line["rounds"] = rounds;
      }
      to_stderr(fmt::format("@progress {}\n", line.dump()));
    } else if (tty_progress) {
      to_stderr(fmt::format("[{}/{}] {} {}{}{}\n", i + 1, variants.size(), v.probe->name, format_params(v.params),
                            round > 0 ? fmt::format(" (round {}/{})", round, rounds) : "",
                            attempt > 1 ? fmt::format(" (attempt {}, host interference)", attempt) : ""));
    }
  };
  // Runs `measure` under the variant time limit; a timeout names the limit.
  auto limited = [&](const std::function<Result()>& measure) {
    timeout_flag().store(false);
    monitor.variant_deadline_ns.store(monotonic_raw_ns() + static_cast<std::uint64_t>(variant_timeout_s * 1e9));
    Result result = measure();
    monitor.variant_deadline_ns.store(0);
    if (timeout_flag().load() && result.verdict.status == Status::failed) {
      auto& reasons = result.verdict.reasons;
      std::erase_if(reasons, [](const auto& reason) { return reason.first == Reason::timeout; });
      reasons.insert(reasons.begin(), {Reason::timeout, fmt::format("the variant overran its {:g} s limit (--timeout)",
                                                                    variant_timeout_s)});
    }
    return result;
  };
  Scheduler scheduler(variants, harness, schedule, *clock, timer, output, run_id,
                      {announce, limited,
                       [&](const Variant& v, Result& r) {
                         if (o.trace && wants_traced_pass(*v.probe, r)) add_traced_pass(r, *v.probe, v.params, *clock);
                       },
                       [&](const OutputError& failure) {
                         monitor.end_now(output_exit_code(failure.error),
                                         fmt::format("error: {}; the run stopped", failure.what()));
                       },
                       [&](const Result& so_far) {
                         // Beside the progress: a front end keeps the rounds taken should the
                         // engine be killed (SIGKILL, SIGSYS) before the variant's record.
                         if (o.progress) to_stderr(fmt::format("@partial {}\n", result_to_json(so_far).dump()));
                       }});
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

}  // namespace ctx
