// ctxbench-engine: the command line, and only that. Declares the commands
// (run, list, env, docs, profile) and their options with CLI11, parses them into
// plain values, and hands each command to the code that does it: a run to
// run_command (run_command.hpp, which checks its values through run_plan).
// Exit statuses: exits.hpp.
#include <fmt/format.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "cli/exits.hpp"
#include "cli/profile.hpp"
#include "cli/run_command.hpp"
#include "os/env.hpp"
#include "os/timer.hpp"
#include "plan/schedule.hpp"
#include "report/describe.hpp"
#include "report/output.hpp"

using namespace ctx;

namespace {

void prepare_signals() {
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
}

// Parses the command line into the values `app` declares; the exit status
// when the engine stops here (help, version, or a usage error).
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  if (argc > 1 && argv[1][0] != '-') {
    const std::string command = argv[1];
    if (command != "run" && command != "list" && command != "env" && command != "docs" && command != "profile")
      return usage_error(
          fmt::format("unknown command '{}'; use run, list, env, docs or profile (see --help)", command));
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
  return std::nullopt;
}

int list_command(bool json) {
  if (json) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& p : all_probes()) all.push_back(describe_probe(p));
    return print_checked(all.dump(2) + "\n");
  }
  return print_checked(probes_table());
}

int env_command(bool json) {
  std::string note;
  auto clock = make_best_clock(0.05, &note);
  const auto env = capture_environment(new_run_id(), characterize(*clock), note);
  return print_checked((json ? env.dump() : env.dump(2)) + "\n");
}

int docs_command(const std::string& what, const std::string& figures) {
  if (what == "probes") {
    std::vector<nlohmann::json> reference;
    try {
      if (!figures.empty()) reference = read_reference_run(figures);
    } catch (const std::exception& e) {
      return usage_error(fmt::format("--figures: {}; give the JSON Lines of one `run --json`", e.what()));
    }
    return print_checked(probes_markdown(reference));
  }
  if (what == "probe-names") return print_checked(probe_names_json());
  return usage_error(fmt::format("docs: unknown '{}'; use probes or probe-names", what));
}

}  // namespace

int main(int argc, char** argv) try {
  prepare_signals();

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
  run->add_option("--clean-budget", run_options.clean_budget,
                  fmt::format("Seconds a variant may spend taking samples again until it has --samples samples the "
                              "kernel's counters and the host reference call clean of interference; past it the "
                              "figure is the clean samples' and the variant is suspect (default {:g}, {:g} with "
                              "--quick; shared by its rounds)",
                              clean_budget_by_default_s, quick_clean_budget_by_default_s));
  run->add_option("--shield", run_options.shield,
                  "weight: put the engine's tasks in a cgroup of the highest CPU weight for the run, so other work "
                  "of ordinary weight gets the CPU after them (needs root or a delegated cgroup; where not "
                  "permitted the run goes on unshielded and the env record says why; removed on every exit). "
                  "Off by default");
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

  ProfileOptions profile_options;
  auto* profile =
      app.add_subcommand("profile",
                         "Count a program's switches, wake-ups, system calls and faults: profile -- CMD [ARGS], or "
                         "profile --pid PID --duration S (one JSON profile record)");
  profile->add_option("--pid", profile_options.pid, "Attach to this running process instead of running a command");
  profile->add_option("--duration", profile_options.duration, "With --pid: seconds to count");
  profile->add_option("--out", profile_options.out, "Write the record to this file instead of stdout");
  profile->add_flag("--trace", profile_options.trace,
                    "Also record every CPU's switches: wake-ups that found the target CPU idle, and each wake-up's "
                    "latency in place");
  profile->add_option("command", profile_options.command, "The command and its arguments, after --");

  if (const auto stop = parse_command_line(app, argc, argv)) return *stop;
  if (*list) return list_command(list_json);
  if (*env_cmd) return env_command(env_json);
  if (*docs) return docs_command(docs_what, docs_figures);
  if (*profile) return profile_command(profile_options);
  return run_command(run_options);
} catch (const std::exception& e) {
  // Nothing escapes as std::terminate: whatever was not handled where it
  // happened (e.g. a thread that could not be started) is one line.
  diagnostic(fmt::format("error: {}", e.what()));
  return exit_failure;
}
