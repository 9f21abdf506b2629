// ctxbench-engine: the command line. Parses options, expands the selection
// into variants, runs each through the harness and hands every finished
// record to the reporters at once. A monitor thread owns the signals: on
// Ctrl-C (SIGINT/SIGTERM/SIGHUP) it kills and reaps every child, writes the
// closing record (interrupted) after the records already written, and exits
// 130; on a variant that overruns its time limit it kills the children, which
// makes the variant fail with `timeout` and the run go on.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>

#include "describe.hpp"
#include "env.hpp"
#include "harness.hpp"
#include "output.hpp"
#include "presets.hpp"
#include "selection.hpp"
#include "tasks.hpp"
#include "timer.hpp"

namespace {

using namespace ctx;

constexpr int exit_usage = 2;

int usage_error(const std::string& message) {
  fmt::print(stderr, "ctxbench-engine: error: {}\n", message);
  return exit_usage;
}

struct Monitor {
  Output* output = nullptr;
  std::string run_id;
  std::uint64_t run_started_ns = 0;
  std::atomic<std::uint64_t> variant_deadline_ns{0};
  std::atomic<bool> variant_timed_out{false};
  std::atomic<bool> stop{false};

  void loop() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    const timespec tick{0, 100 * 1000 * 1000};
    while (!stop.load()) {
      const int sig = sigtimedwait(&set, nullptr, &tick);
      if (sig > 0) {
        interrupted_flag().store(true);
        std::lock_guard guard(output->lock());  // let a record being written finish; write nothing after
        kill_and_reap_children();
        fmt::print(
            stderr, "ctxbench-engine: interrupted by {}; {} records kept, children reaped\n", strsignal(sig),
            output->counts().ok + output->counts().suspect + output->counts().unsupported + output->counts().failed);
        output->end(run_id, static_cast<double>(monotonic_raw_ns() - run_started_ns) / 1e9, true);
        std::fflush(nullptr);
        _exit(130);
      }
      const std::uint64_t deadline = variant_deadline_ns.load();
      if (deadline != 0 && monotonic_raw_ns() > deadline && !variant_timed_out.exchange(true)) {
        fmt::print(stderr, "ctxbench-engine: a variant overran its time limit; killing its children\n");
        kill_and_reap_children();
      }
    }
  }
};

struct RunOptions {
  std::vector<std::string> probes;
  bool quick = false;
  std::string samples, min_time, timeout;
  std::string cpus, between;
  bool hold_idle = false;
  std::vector<std::string> params;
  bool json = false;
  std::string out;
  bool progress = false;
  std::string preset;
  bool dry_run = false;
};

int run_command(const RunOptions& o) {
  HarnessOptions harness;
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
    if (!o.preset.empty()) {
      if (!o.probes.empty()) throw UsageError("--preset runs its own probes; drop the probe names or the --preset");
      selection = preset_selection(o.preset);
    } else {
      selection.patterns = o.probes;
    }
    if (!o.cpus.empty()) add_axis_choice(selection, all_probes(), "cpus", o.cpus, "--cpus");
    if (!o.between.empty()) add_axis_choice(selection, all_probes(), "between", o.between, "--between");
    for (const auto& p : o.params) add_param_choice(selection, p);  // after the preset's: the user's win
    if (o.hold_idle) {
      if (selection.choices.count("idle"))
        throw UsageError("--hold-idle and --param idle=... both choose the idle axis; keep one");
      add_axis_choice(selection, all_probes(), "idle", "held", "--hold-idle");  // --param idle=... stays strict
    }
    variants = expand(all_probes(), selection);
  } catch (const UsageError& e) {
    return usage_error(e.what());
  }
  if (o.dry_run) {
    for (const auto& v : variants) fmt::print("{}\n", variant_json(v).dump());
    return 0;
  }

  std::FILE* out_file = nullptr;
  if (!o.out.empty()) {
    out_file = std::fopen(o.out.c_str(), "w");
    if (!out_file)
      return usage_error(
          fmt::format("--out: cannot write '{}': {}; choose a writable path", o.out, std::strerror(errno)));
  }

  Output output;
  if (o.json)
    output.add(std::make_unique<JsonLinesReporter>(out_file ? out_file : stdout));
  else {
    if (!o.preset.empty()) {
      const PresetDescriptor& preset = find_preset(o.preset);
      output.add(std::make_unique<ComparisonReporter>(stdout, preset.name + ": " + preset.description));
    }
    output.add(std::make_unique<TableReporter>(stdout));
    if (out_file) output.add(std::make_unique<JsonLinesReporter>(out_file));
  }

  std::string timer_note;
  auto clock = make_best_clock(o.quick ? 0.02 : 0.1, &timer_note);
  const TimerInfo timer = characterize(*clock);
  const std::string run_id = new_run_id();
  nlohmann::json env = capture_environment(run_id, timer, timer_note);
  env["options"] = {{"quick", o.quick},
                    {"samples", harness.samples},
                    {"min_time_s", harness.min_sample_s},
                    {"warmup_samples", harness.warmup_samples},
                    {"probes", o.probes},
                    {"preset", o.preset.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.preset)},
                    {"variants", variants.size()}};

  Monitor monitor;
  monitor.output = &output;
  monitor.run_id = run_id;
  monitor.run_started_ns = monotonic_raw_ns();
  std::thread monitor_thread([&] { monitor.loop(); });

  output.begin(env);
  const bool tty_progress = !o.progress && isatty(STDERR_FILENO);
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const auto& v = variants[i];
    if (o.progress) {
      nlohmann::json params = v.params;
      fmt::print(
          stderr, "@progress {}\n",
          nlohmann::json{{"index", i + 1}, {"total", variants.size()}, {"probe", v.probe->name}, {"params", params}}
              .dump());
    } else if (tty_progress) {
      fmt::print(stderr, "[{}/{}] {} {}\n", i + 1, variants.size(), v.probe->name, format_params(v.params));
    }
    monitor.variant_timed_out.store(false);
    monitor.variant_deadline_ns.store(monotonic_raw_ns() + static_cast<std::uint64_t>(variant_timeout_s * 1e9));
    Result result = run_variant(*v.probe, v.params, *clock, timer, harness);
    monitor.variant_deadline_ns.store(0);
    if (monitor.variant_timed_out.load() && result.verdict.status == Status::failed)
      result.verdict.reasons.insert(
          result.verdict.reasons.begin(),
          {Reason::timeout, fmt::format("the variant overran its {:.0f} s limit (--timeout)", variant_timeout_s)});
    result.run_id = run_id;
    output.result(result);
  }
  {
    std::lock_guard guard(output.lock());
    output.end(run_id, static_cast<double>(monotonic_raw_ns() - monitor.run_started_ns) / 1e9, false);
  }
  monitor.stop.store(true);
  monitor_thread.join();
  if (out_file) std::fclose(out_file);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A write to a pipe whose reader died must fail with EPIPE, not kill us.
  signal(SIGPIPE, SIG_IGN);
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
  run->add_flag("--progress", run_options.progress, "Write '@progress {json}' lines to stderr before each variant");
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
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion&) {
    fmt::print("ctxbench-engine {}\n", CTXBENCH_VERSION);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    for (auto& c : message)
      if (c == '\n') c = ' ';
    return usage_error(message + " (see ctxbench-engine --help)");
  }

  if (*list) {
    if (list_json) {
      nlohmann::json all = nlohmann::json::array();
      for (const auto& p : all_probes()) all.push_back(describe_probe(p));
      fmt::print("{}\n", all.dump(2));
    } else {
      std::fputs(probes_table().c_str(), stdout);
    }
    return 0;
  }
  if (*env_cmd) {
    std::string note;
    auto clock = make_best_clock(0.05, &note);
    const auto env = capture_environment(new_run_id(), characterize(*clock), note);
    fmt::print("{}\n", env_json ? env.dump() : env.dump(2));
    return 0;
  }
  if (*docs) {
    if (docs_what == "probes") {
      std::vector<nlohmann::json> reference;
      try {
        if (!docs_figures.empty()) reference = read_reference_run(docs_figures);
      } catch (const std::exception& e) {
        return usage_error(fmt::format("--figures: {}; give the JSON Lines of one `run --json`", e.what()));
      }
      std::fputs(probes_markdown(reference).c_str(), stdout);
    } else if (docs_what == "probe-names")
      std::fputs(probe_names_json().c_str(), stdout);
    else
      return usage_error(fmt::format("docs: unknown '{}'; use probes or probe-names", docs_what));
    return 0;
  }
  return run_command(run_options);
}
