#include "plan/run_plan.hpp"

#include <fmt/format.h>

#include <random>

#include "model/registry.hpp"
#include "plan/presets.hpp"

namespace ctx {

RunPlan plan_run(const RunOptions& o) {
  RunPlan p;
  if (o.trace_optional && !o.trace) throw UsageError("--trace-optional goes with --trace; add --trace or drop it");
  if (o.quick) {
    p.harness = HarnessOptions::quick_run();
    p.variant_timeout_s = 30;
  }
  if (!o.samples.empty()) p.harness.samples = static_cast<int>(parse_positive(o.samples, "--samples", 1000000));
  if (!o.min_time.empty()) p.harness.min_sample_s = parse_seconds(o.min_time, "--min-time");
  if (!o.timeout.empty()) p.variant_timeout_s = parse_seconds(o.timeout, "--timeout");
  if (!o.retries.empty()) p.harness.retries = static_cast<int>(parse_whole(o.retries, "--retries", 0, 10));
  if (!o.clean_budget.empty()) p.harness.clean_budget_s = parse_seconds(o.clean_budget, "--clean-budget");
  if (!o.shield.empty() && o.shield != "weight")
    throw UsageError(fmt::format(
        "--shield: '{}' is not offered; give --shield weight (docs/accuracy.md says why cpuset and rt are not)",
        o.shield));
  if (!o.interleave.empty() && o.interleave != "off" && o.interleave != "rounds")
    throw UsageError(
        fmt::format("--interleave: '{}' is not off or rounds; give --interleave off or rounds", o.interleave));
  if (!o.interleave.empty()) p.schedule.interleave = o.interleave == "rounds";
  if (!o.rounds.empty()) p.schedule.rounds = static_cast<int>(parse_positive(o.rounds, "--rounds", 1000));
  if (!o.seed.empty())
    p.schedule.seed = static_cast<std::uint32_t>(parse_whole(o.seed, "--seed", 0, 4294967295L));
  else
    p.schedule.seed = std::random_device{}();
  if ((!o.rounds.empty() || !o.seed.empty()) && !p.schedule.interleave)
    throw UsageError(
        "--rounds and --seed schedule interleaved rounds, which --interleave off turns off; drop one "
        "or the other");
  if (!o.host_reference.empty() && o.host_reference != "on" && o.host_reference != "off")
    throw UsageError(
        fmt::format("--host-reference: '{}' is not on or off; give --host-reference on or off", o.host_reference));
  if (!o.preset.empty()) {
    if (!o.probes.empty()) throw UsageError("--preset runs its own probes; drop the probe names or the --preset");
    p.selection = preset_selection(o.preset);
  } else {
    p.selection.patterns = o.probes;
  }
  if (!o.cpus.empty()) add_axis_choice(p.selection, all_probes(), "cpus", o.cpus, "--cpus");
  if (!o.between.empty()) add_axis_choice(p.selection, all_probes(), "between", o.between, "--between");
  // The user's --param values replace a preset's for the same parameter;
  // a parameter the user gives twice is still refused.
  Selection given;
  for (const auto& param : o.params) add_param_choice(given, param);
  for (auto& [name, values] : given.choices) {
    if (p.selection.axes.count(name))
      throw UsageError(fmt::format("--{} and --param {}=... both choose that axis; keep one", name, name));
    p.selection.choices[name] = std::move(values);
  }
  if (o.hold_idle) {
    if (p.selection.choices.count("idle"))
      throw UsageError("--hold-idle and --param idle=... both choose the idle axis; keep one");
    add_axis_choice(p.selection, all_probes(), "idle", "held", "--hold-idle");  // --param idle=... stays strict
  }
  p.variants = expand(all_probes(), p.selection);
  if (!o.host_reference.empty()) p.host_reference = o.host_reference == "on";
  return p;
}

}  // namespace ctx
