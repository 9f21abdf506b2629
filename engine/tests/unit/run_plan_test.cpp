// The run command's options turned into a plan: defaults, what each option
// sets, and every value the run cannot take refused as a usage error.
#include "plan/run_plan.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {
namespace CTXBENCH_UNITY_ID {

using namespace ctx;

RunOptions probes(std::vector<std::string> names) {
  RunOptions o;
  o.probes = std::move(names);
  return o;
}

std::string refusal(const RunOptions& o) {
  try {
    plan_run(o);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(RunPlan, DefaultsAreTheHarnessAndScheduleDefaults) {
  const RunPlan plan = plan_run(probes({"syscall.getpid"}));
  EXPECT_EQ(plan.harness.samples, HarnessOptions{}.samples);
  EXPECT_EQ(plan.schedule.interleave, interleave_by_default);
  EXPECT_EQ(plan.schedule.rounds, rounds_by_default);
  EXPECT_EQ(plan.host_reference, host_reference_by_default);
  EXPECT_EQ(plan.variant_timeout_s, 120);
  ASSERT_EQ(plan.variants.size(), 1U);
  EXPECT_EQ(plan.variants[0].probe->name, "syscall.getpid");
}

TEST(RunPlan, EachOptionSetsItsValue) {
  RunOptions o = probes({"syscall.getpid"});
  o.quick = true;
  EXPECT_EQ(plan_run(o).harness.samples, HarnessOptions::quick_run().samples);
  EXPECT_EQ(plan_run(o).variant_timeout_s, 30);  // --quick's own limit
  o.samples = "7";
  o.min_time = "0.5";
  o.timeout = "9";
  o.retries = "0";
  o.rounds = "3";
  o.seed = "42";
  o.host_reference = "off";
  const RunPlan plan = plan_run(o);
  EXPECT_EQ(plan.harness.samples, 7);
  EXPECT_EQ(plan.harness.min_sample_s, 0.5);
  EXPECT_EQ(plan.variant_timeout_s, 9);
  EXPECT_EQ(plan.harness.retries, 0);
  EXPECT_EQ(plan.schedule.rounds, 3);
  EXPECT_EQ(plan.schedule.seed, 42U);
  EXPECT_FALSE(plan.host_reference);
  o = probes({"syscall.getpid"});
  o.interleave = "off";
  EXPECT_FALSE(plan_run(o).schedule.interleave);
}

TEST(RunPlan, ValuesTheRunCannotTakeAreRefusedNamingTheOption) {
  RunOptions o = probes({"syscall.getpid"});
  o.interleave = "sometimes";
  EXPECT_NE(refusal(o).find("--interleave: 'sometimes' is not off or rounds"), std::string::npos);
  o = probes({"syscall.getpid"});
  o.interleave = "off";
  o.rounds = "3";
  EXPECT_NE(refusal(o).find("--interleave off turns off"), std::string::npos);
  o = probes({"syscall.getpid"});
  o.host_reference = "maybe";
  EXPECT_NE(refusal(o).find("--host-reference: 'maybe'"), std::string::npos);
  o = probes({"syscall.getpid"});
  o.trace_optional = true;
  EXPECT_NE(refusal(o).find("--trace-optional goes with --trace"), std::string::npos);
  o = probes({"syscall.getpid"});
  o.preset = "fibers-vs-threads";
  EXPECT_NE(refusal(o).find("--preset runs its own probes"), std::string::npos);
  o = probes({"syscall.getpid"});
  o.samples = "0";
  EXPECT_NE(refusal(o).find("--samples"), std::string::npos);
  o = probes({"switch.pipe"});
  o.hold_idle = true;
  o.params = {"idle=free"};
  EXPECT_NE(refusal(o).find("--hold-idle and --param idle"), std::string::npos);
  o = probes({"switch.pipe"});
  o.cpus = "same";
  o.params = {"cpus=cross"};
  EXPECT_NE(refusal(o).find("--cpus and --param cpus=... both choose that axis"), std::string::npos);
}

TEST(RunPlan, APresetsParameterGivesWayToTheUsers) {
  RunOptions o;
  o.preset = "fibers-vs-threads";
  const RunPlan preset = plan_run(o);
  ASSERT_FALSE(preset.variants.empty());
  ASSERT_TRUE(preset.selection.choices.count("laps"));
  ASSERT_NE(preset.selection.choices.at("laps"), std::vector<std::string>{"10000"});  // the preset's own
  o.params = {"laps=10000"};
  const RunPlan mine = plan_run(o);
  ASSERT_TRUE(mine.selection.choices.count("laps"));
  EXPECT_EQ(mine.selection.choices.at("laps"), std::vector<std::string>{"10000"});
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
