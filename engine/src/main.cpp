// ctxbench-engine: the command line. Parses options, expands the selection
// into variants and hands them to the run's scheduler (schedule.hpp), which
// measures them through the harness and writes every finished record at
// once; the monitor thread (monitor.hpp) owns the signals and the variant
// time limit.
//
// Exit status (docs/cli.md): 0 done, 1 failed (e.g. no thread could be
// started), 2 usage, 3 an output could not be written, 130 interrupted,
// 141 the reader of an output pipe went away (as a SIGPIPE death reads).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <system_error>
#include <thread>

#include "describe.hpp"
#include "env.hpp"
#include "harness.hpp"
#include "monitor.hpp"
#include "output.hpp"
#include "presets.hpp"
#include "schedule.hpp"
#include "selection.hpp"
#include "tasks.hpp"
#include "timer.hpp"
#include "trace.hpp"
#include "traced_pass.hpp"

namespace {

using namespace ctx;

constexpr int exit_failure = 1;
constexpr int exit_usage = 2;
constexpr int exit_output = 3;

int usage_error(const std::string& message) {
  diagnostic("error: " + message);
  return exit_usage;
}

int output_exit_code(int error) { return error == EPIPE ? exit_broken_pipe : exit_output; }

// After an output failed nothing more is flushed: the FILE may still hold
// the bytes that did not fit, and a regular file was cut to whole lines.
[[noreturn]] void exit_after(const OutputError& failure, const std::string& what_happened = "") {
  diagnostic(fmt::format("error: {}{}", failure.what(), what_happened));
  _exit(output_exit_code(failure.error));
}

// Writes a command's whole output to stdout and flushes it, checked.
int print_checked(const std::string& text) {
  Sink out(stdout, "stdout");
  try {
    out.write(text);
    out.close();
  } catch (const OutputError& failure) {
    exit_after(failure);
  }
  return 0;
}

struct RunOptions {
  std::vector<std::string> probes;
  bool quick = false;
  std::string samples, min_time, timeout, retries, host_reference;
  std::string interleave, rounds, seed;
  std::string cpus, between;
  bool hold_idle = false;
  std::vector<std::string> params;
  bool json = false;
  std::string out;
  bool progress = false;
  bool die_with_parent = false;
  std::string preset;
  bool dry_run = false;
  bool trace = false;
  bool trace_optional = false;
};

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

int run_command(const RunOptions& o) {
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
  HarnessOptions harness;
  ScheduleOptions schedule;
  double variant_timeout_s = 120;
  Selection selection;
  std::vector<Variant> variants;
  try {
    if (o.quick) {
      harness = HarnessOptions::quick_run();
      variant_timeout_s = 30;
    }
    if (!o.samples.empty()) harness.samples = static_cast<int>(parse_positive(o.samples, "--samples", 1000000));
    if (!o.min_time.empty()) harness.min_sample_s = parse_seconds(o.min_time, "--min-time");
    if (!o.timeout.empty()) variant_timeout_s = parse_seconds(o.timeout, "--timeout");
    if (!o.retries.empty()) harness.retries = static_cast<int>(parse_whole(o.retries, "--retries", 0, 10));
    if (!o.interleave.empty() && o.interleave != "off" && o.interleave != "rounds")
      throw UsageError(
          fmt::format("--interleave: '{}' is not off or rounds; give --interleave off or rounds", o.interleave));
    if (!o.interleave.empty()) schedule.interleave = o.interleave == "rounds";
    if (!o.rounds.empty()) schedule.rounds = static_cast<int>(parse_positive(o.rounds, "--rounds", 1000));
    if (!o.seed.empty())
      schedule.seed = static_cast<std::uint32_t>(parse_whole(o.seed, "--seed", 0, 4294967295L));
    else
      schedule.seed = std::random_device{}();
    if ((!o.rounds.empty() || !o.seed.empty()) && !schedule.interleave)
      throw UsageError(
          "--rounds and --seed schedule interleaved rounds, which --interleave off turns off; drop one "
          "or the other");
    if (!o.host_reference.empty() && o.host_reference != "on" && o.host_reference != "off")
      throw UsageError(
          fmt::format("--host-reference: '{}' is not on or off; give --host-reference on or off", o.host_reference));
    if (!o.preset.empty()) {
      if (!o.probes.empty()) throw UsageError("--preset runs its own probes; drop the probe names or the --preset");
      selection = preset_selection(o.preset);
    } else {
      selection.patterns = o.probes;
    }
    if (!o.cpus.empty()) add_axis_choice(selection, all_probes(), "cpus", o.cpus, "--cpus");
    if (!o.between.empty()) add_axis_choice(selection, all_probes(), "between", o.between, "--between");
    // The user's --param values replace a preset's for the same parameter;
    // a parameter the user gives twice is still refused.
    Selection given;
    for (const auto& p : o.params) add_param_choice(given, p);
    for (auto& [name, values] : given.choices) {
      if (selection.axes.count(name))
        throw UsageError(fmt::format("--{} and --param {}=... both choose that axis; keep one", name, name));
      selection.choices[name] = std::move(values);
    }
    if (o.hold_idle) {
      if (selection.choices.count("idle"))
        throw UsageError("--hold-idle and --param idle=... both choose the idle axis; keep one");
      add_axis_choice(selection, all_probes(), "idle", "held", "--hold-idle");  // --param idle=... stays strict
    }
    variants = expand(all_probes(), selection);
  } catch (const UsageError& e) {
    return usage_error(e.what());
  }
  // Checked before anything is measured, while the engine has one thread
  // (a mount namespace of its own is the whole process's only then).
  if (o.trace_optional && !o.trace) return usage_error("--trace-optional goes with --trace; add --trace or drop it");
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
  const bool host_reference = o.host_reference.empty() ? host_reference_by_default : o.host_reference == "on";
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

}  // namespace

int main(int argc, char** argv) try {
  // A write to a pipe whose reader died, or past the file-size limit, must
  // fail (EPIPE, EFBIG) and be reported, not kill us silently.
  signal(SIGPIPE, SIG_IGN);
  signal(SIGXFSZ, SIG_IGN);
  // Only the monitor thread takes these; every thread made later inherits the block.
  sigset_t handled;
  sigemptyset(&handled);
  sigaddset(&handled, SIGINT);
  sigaddset(&handled, SIGTERM);
  sigaddset(&handled, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &handled, nullptr);

  CLI::App app{"ctxbench-engine: measures what switching really costs on this machine"};
  app.set_version_flag("--version", std::string("ctxbench-engine ") + CTXBENCH_VERSION);
  app.require_subcommand(1);

  auto* list = app.add_subcommand("list", "List every probe: what one op is, unit, baseline, params, supported here");
  bool list_json = false;
  list->add_flag("--json", list_json, "Print a JSON array of probe descriptors");

  auto* env_cmd = app.add_subcommand("env", "Print the environment capture alone");
  bool env_json = false;
  env_cmd->add_flag("--json", env_json, "Print the env record as JSON");

  auto* docs = app.add_subcommand(
      "docs", "Print generated documentation (probes: docs/probes.md; probe-names: schema/probe-names.json)");
  std::string docs_what;
  docs->add_option("what", docs_what, "probes | probe-names")->required();
  std::string docs_figures;
  docs->add_option("--figures", docs_figures, "A run's JSON Lines whose medians docs/probes.md shows");

  RunOptions run_options;
  auto* run = app.add_subcommand("run", "Run probes (all by default) and print a table, or JSON Lines with --json");
  run->add_option("probes", run_options.probes, "Probe names or globs (e.g. 'switch.*'); a family name selects it all");
  run->add_flag("--quick", run_options.quick, "Fewer, shorter samples: the whole catalogue in about a minute");
  run->add_option("--samples", run_options.samples, "Timed samples per variant (default 30; 10 with --quick)");
  run->add_option("--min-time", run_options.min_time, "Least seconds one sample (batch) lasts (default 0.01)");
  run->add_option("--timeout", run_options.timeout,
                  "Seconds a variant may run before its children are killed (default 120)");
  run->add_option("--retries", run_options.retries,
                  "Measure a variant again, up to N times, when a reference loop timed before each sample shows the "
                  "host slowed the CPU; keep the attempt whose reference ran fastest (default 2, 1 with --quick). A "
                  "sample taken while it ran slowed is set aside and taken again; 0 records the reference and "
                  "takes nothing again");
  run->add_option("--interleave", run_options.interleave,
                  fmt::format("off: measure each variant whole, one after the other; rounds: split every variant's "
                              "samples into --rounds rounds and visit the variants in a seeded random order in each "
                              "round (default {})",
                              interleave_by_default ? "rounds" : "off"));
  run->add_option("--rounds", run_options.rounds,
                  fmt::format("Rounds per variant with --interleave rounds (default {}; at most one per sample)",
                              rounds_by_default));
  run->add_option("--seed", run_options.seed,
                  "Seed of the rounds' order with --interleave rounds (0 to 4294967295; default: drawn, and recorded)");
  run->add_option("--host-reference", run_options.host_reference,
                  fmt::format("on: time the host reference before each sample and judge the samples by it; off: "
                              "take no reference and set nothing aside (default {})",
                              host_reference_by_default ? "on" : "off"));
  run->add_option("--cpus", run_options.cpus,
                  "Placements to run: same,cross,any (the default runs), smt,llc,remote (by CPU topology)");
  run->add_option("--between", run_options.between, "Task kinds to run: threads,processes");
  run->add_flag("--hold-idle", run_options.hold_idle,
                "Hold every CPU out of deep idle (/dev/cpu_dma_latency = 0) during each variant that has the idle "
                "axis (idle=held); needs root, otherwise those variants are unsupported");
  run->add_option("--param", run_options.params, "Parameter values: NAME=V1,V2 (repeatable), e.g. procs=2,8")
      ->allow_extra_args(false);
  run->add_flag("--json", run_options.json, "Write JSON Lines (env, one record per variant, run_end)");
  run->add_option("--out", run_options.out, "Write JSON Lines to this file (with --json: instead of stdout)");
  run->add_option("--preset", run_options.preset,
                  "Run a named experiment, a set of probe variants, instead of probes (e.g. fibers-vs-threads)");
  run->add_flag("--trace-optional", run_options.trace_optional,
                "With --trace: where the traced pass cannot record here (no tracefs, no permission), say so once "
                "and run untraced, each record saying why, instead of stopping before the run");
  run->add_flag("--trace", run_options.trace,
                "After each switch variant, run it again with the kernel's tracepoints recorded and split its "
                "switches into phases (the record's trace block; needs root or CAP_PERFMON and tracefs)");
  run->add_flag("--progress", run_options.progress, "Write '@progress {json}' lines to stderr before each variant");
  run->add_flag("--die-with-parent", run_options.die_with_parent,
                "Stop (as on SIGTERM) when the process that started the engine dies");
  run->add_flag("--dry-run", run_options.dry_run,
                "Print the variants the selection expands to (JSON Lines: probe, params) and run nothing");

  if (argc > 1 && argv[1][0] != '-') {
    const std::string command = argv[1];
    if (command != "run" && command != "list" && command != "env" && command != "docs")
      return usage_error(fmt::format("unknown command '{}'; use run, list, env or docs (see --help)", command));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return print_checked(app.help());
  } catch (const CLI::CallForVersion&) {
    return print_checked(fmt::format("ctxbench-engine {}\n", CTXBENCH_VERSION));
  } catch (const CLI::CallForAllHelp&) {
    return print_checked(app.help("", CLI::AppFormatMode::All));
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    for (auto& c : message)
      if (c == '\n') c = ' ';
    return usage_error(message + " (see ctxbench-engine --help)");
  }
  // An option given an empty value ('') is a mistake, never "the default":
  // `--preset ''` must not run everything.
  for (const CLI::App* command : app.get_subcommands())
    for (const CLI::Option* option : command->get_options())
      for (const auto& value : option->results())
        if (value.empty())
          return usage_error(fmt::format("{}: empty value; give a value, or leave the option out", option->get_name()));

  if (*list) {
    if (list_json) {
      nlohmann::json all = nlohmann::json::array();
      for (const auto& p : all_probes()) all.push_back(describe_probe(p));
      return print_checked(all.dump(2) + "\n");
    }
    return print_checked(probes_table());
  }
  if (*env_cmd) {
    std::string note;
    auto clock = make_best_clock(0.05, &note);
    const auto env = capture_environment(new_run_id(), characterize(*clock), note);
    return print_checked((env_json ? env.dump() : env.dump(2)) + "\n");
  }
  if (*docs) {
    if (docs_what == "probes") {
      std::vector<nlohmann::json> reference;
      try {
        if (!docs_figures.empty()) reference = read_reference_run(docs_figures);
      } catch (const std::exception& e) {
        return usage_error(fmt::format("--figures: {}; give the JSON Lines of one `run --json`", e.what()));
      }
      return print_checked(probes_markdown(reference));
    }
    if (docs_what == "probe-names") return print_checked(probe_names_json());
    return usage_error(fmt::format("docs: unknown '{}'; use probes or probe-names", docs_what));
  }
  return run_command(run_options);
} catch (const std::exception& e) {
  // Nothing escapes as std::terminate: whatever was not handled where it
  // happened (e.g. a thread that could not be started) is one line.
  diagnostic(fmt::format("error: {}", e.what()));
  return exit_failure;
}
