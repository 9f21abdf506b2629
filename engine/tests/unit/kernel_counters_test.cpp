// The set-aside rule on recorded counter values (never live timings), the
// /proc/stat parsing, the least-busy CPU choice, and the harness with scripted
// counters: which samples it sets aside, with which reason, and when the
// verdict says the figure still carries interference.
#include "kernel_counters.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "fake_clocks.hpp"
#include "harness.hpp"
#include "record.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {

using namespace ctx;

SampleCounters sample(double wall, double exec, double steal = 0, long involuntary = 0, double run_delay = 0) {
  SampleCounters s;
  s.wall_ns = wall;
  s.exec_ns = exec;
  s.steal_ns = steal;
  s.involuntary = involuntary;
  s.run_delay_ns = run_delay;
  return s;
}

// Values of a quiet same-CPU pipe switch on this project's 2-vCPU KVM guest:
// 2 ms of wall time, the two tasks ran all but 0.4% of it, each waited for
// the other a good part of it (the wake-up waits by design).
TEST(SetAsideRule, AQuietSameCpuSwitchIsKept) {
  EXPECT_FALSE(judge_sample(sample(2.0e6, 1.992e6, 0, 3, 0.9e6), Sharing::one_cpu));
}

TEST(SetAsideRule, OneCpuGivenToAnotherTaskIsCpuTaken) {
  // 0.6 ms of a 2 ms sample ran something else (a CFS slice of another task).
  EXPECT_EQ(judge_sample(sample(2.0e6, 1.4e6), Sharing::one_cpu), SetAsideReason::cpu_taken);
}

TEST(SetAsideRule, OneCpuWithTheStealCounterMovingIsSteal) {
  EXPECT_EQ(judge_sample(sample(2.0e6, 1.4e6, 10e6), Sharing::one_cpu), SetAsideReason::steal);
  // The steal counter moved (its 10 ms step) but the tasks ran the whole
  // sample: the stolen time fell outside it, and the sample is kept.
  EXPECT_FALSE(judge_sample(sample(2.0e6, 1.999e6, 10e6), Sharing::one_cpu));
}

TEST(SetAsideRule, TheOtherShareLimitIsTheBoundary) {
  const double wall = 1e6;
  EXPECT_FALSE(judge_sample(sample(wall, wall * (1 - other_share_limit)), Sharing::one_cpu));
  EXPECT_EQ(judge_sample(sample(wall, wall * (1 - other_share_limit) - 1), Sharing::one_cpu),
            SetAsideReason::cpu_taken);
}

TEST(SetAsideRule, OneCpuIgnoresSwitchesAndRunQueueWaits) {
  // A same-CPU wake-up preempts the waker: involuntary switches and long
  // run-queue waits are the mechanism, not interference.
  EXPECT_FALSE(judge_sample(sample(2.0e6, 2.0e6, 0, 5000, 1.9e6), Sharing::one_cpu));
}

TEST(SetAsideRule, OwnCpusJudgeInvoluntarySwitchesAndStealNotIdle) {
  // Cross-CPU tasks idle while they wait for each other: CPU time under wall is no sign.
  EXPECT_FALSE(judge_sample(sample(2.0e6, 0.9e6, 0, 0, 0.01e6), Sharing::own_cpus));
  EXPECT_EQ(judge_sample(sample(2.0e6, 0.9e6, 0, 1), Sharing::own_cpus), SetAsideReason::preempted);
  EXPECT_EQ(judge_sample(sample(2.0e6, 0.9e6, 10e6, 0), Sharing::own_cpus), SetAsideReason::steal);
}

// A quiet cross-CPU pipe switch's tasks on this project's KVM guest waited
// about 1% of the time on their run queues; beside stress-ng --cpu 1 on the
// partner's CPU, 35-99%: a task woken on its own CPU waits only behind another task.
TEST(SetAsideRule, OwnCpusJudgeRunQueueWaitsPastTheLimit) {
  const double wall = 2.0e6;
  EXPECT_FALSE(judge_sample(sample(wall, 0.9e6, 0, 0, 0.01 * wall), Sharing::own_cpus));
  EXPECT_FALSE(judge_sample(sample(wall, 0.9e6, 0, 0, own_cpus_wait_limit * wall), Sharing::own_cpus));
  EXPECT_EQ(judge_sample(sample(wall, 0.9e6, 0, 0, 0.55 * wall), Sharing::own_cpus), SetAsideReason::cpu_taken);
  EXPECT_EQ(judge_sample(sample(wall, 0.9e6, 10e6, 0, 0.55 * wall), Sharing::own_cpus), SetAsideReason::steal);
  // On one CPU the same wait is the switch's own: not judged.
  EXPECT_FALSE(judge_sample(sample(wall, wall, 0, 0, 0.55 * wall), Sharing::one_cpu));
}

TEST(SetAsideRule, UnknownTasksAreJudgedByStealAlone) {
  // A create probe's children ran most of the sample: not interference.
  EXPECT_FALSE(judge_sample(sample(2.0e6, 0.2e6, 0, 4), Sharing::unknown));
  EXPECT_EQ(judge_sample(sample(2.0e6, 0.2e6, 10e6), Sharing::unknown), SetAsideReason::steal);
}

TEST(SetAsideRule, DifferenceSumsTasksAndNeverGoesNegative) {
  CounterSnapshot before, after;
  before.at_ns = 1000;
  after.at_ns = 3000;
  before.tasks = {{100, 10, 1}, {500, 50, 0}};
  after.tasks = {{1100, 30, 2}, {400, 60, 0}};  // the second task's time went back: a new task, not negative time
  before.steal_ns = 0;
  after.steal_ns = 10000000;
  const SampleCounters d = difference(before, after);
  EXPECT_DOUBLE_EQ(d.wall_ns, 2000);
  EXPECT_DOUBLE_EQ(d.exec_ns, 1000);
  EXPECT_DOUBLE_EQ(d.run_delay_ns, 30);
  EXPECT_EQ(d.involuntary, 1);
  EXPECT_DOUBLE_EQ(d.steal_ns, 10000000);
}

// /proc/stat of this project's 2-vCPU KVM guest, as read.
constexpr const char* proc_stat =
    "cpu  18568 3217 4014 27135 277 0 56 51 0 0\n"
    "cpu0 8193 1366 1756 15285 19 0 5 24 0 0\n"
    "cpu1 10374 1851 2258 11850 257 0 51 26 0 0\n"
    "intr 1 2 3\n"
    "ctxt 12345\n";

TEST(ProcStat, BusyAndStealTicksPerCpu) {
  const auto busy = busy_ticks(proc_stat);
  ASSERT_EQ(busy.size(), 2u);  // the all-CPU line is not a CPU
  EXPECT_EQ(busy[0], std::make_pair(0, std::uint64_t{8193 + 1366 + 1756 + 0 + 5 + 24}));
  EXPECT_EQ(busy[1], std::make_pair(1, std::uint64_t{10374 + 1851 + 2258 + 0 + 51 + 26}));
  const auto steal = steal_ticks(proc_stat);
  ASSERT_EQ(steal.size(), 2u);
  EXPECT_EQ(steal[0].second, 24u);
  EXPECT_EQ(steal[1].second, 26u);
}

TEST(LeastBusyCpu, TakesTheCpuWhoseBusyTimeGrewLeast) {
  const std::vector<std::pair<int, std::uint64_t>> before = {{0, 100}, {1, 200}, {2, 50}};
  const std::vector<std::pair<int, std::uint64_t>> after = {{0, 102}, {1, 200}, {2, 52}};
  const CpuChoice choice = least_busy_cpu({0, 1}, before, after, 0.02);
  EXPECT_EQ(choice.cpu, 1);
  EXPECT_NE(choice.why.find("CPU 0 100%"), std::string::npos) << choice.why;  // 2 ticks of 10 ms over 20 ms
  EXPECT_NE(choice.why.find("CPU 1 0%"), std::string::npos) << choice.why;
  EXPECT_EQ(choice.why.find("CPU 2"), std::string::npos) << "CPU 2 is not allowed: " << choice.why;
}

TEST(LeastBusyCpu, ATieGoesToTheFirstAllowed) {
  const std::vector<std::pair<int, std::uint64_t>> same = {{0, 5}, {1, 5}};
  EXPECT_EQ(least_busy_cpu({0, 1}, same, same, 0.02).cpu, 0);
  EXPECT_EQ(least_busy_cpu({1, 0}, same, same, 0.02).cpu, 1);
  EXPECT_EQ(least_busy_cpu({3}, same, same, 0.02).cpu, -1);  // nothing read for it
}

// ---- the harness with scripted counters -----------------------------------------

using ctx::testing::CostWork;
using ctx::testing::StepClock;

// Counters whose every second read (after a sample) moves by what `script`
// says of that sample (by its index, set-aside samples included): the share
// of its 1 ms the task did not run, and the steal.
class ScriptedCounters final : public KernelCounters {
 public:
  struct Step {
    double other_share = 0;
    double steal_ns = 0;
  };
  explicit ScriptedCounters(std::function<Step(std::size_t)> script) : script_(std::move(script)) {}
  CounterSnapshot read(const std::vector<TaskId>& tasks, const std::vector<int>&, bool) override {
    if (reads_++ % 2 == 1) {
      const Step step = script_(samples_++);
      state_.at_ns += 1000000;
      exec_ += static_cast<std::uint64_t>(1000000 * (1 - step.other_share));
      state_.steal_ns += static_cast<std::uint64_t>(step.steal_ns);
    }
    CounterSnapshot snap = state_;
    snap.ok = true;
    snap.tasks.assign(tasks.size(), TaskCounters{});
    if (!snap.tasks.empty()) snap.tasks[0].exec_ns = exec_;
    return snap;
  }
  std::size_t samples() const { return samples_; }

 private:
  std::function<Step(std::size_t)> script_;
  CounterSnapshot state_;
  std::uint64_t exec_ = 0;
  std::size_t reads_ = 0, samples_ = 0;
};

ProbeDescriptor one_task_probe(StepClock& clock) {
  ProbeDescriptor probe;
  probe.name = "test.counted";
  probe.op = "one fake operation costing 100 ns";
  probe.ops_per_iteration = constant(1);
  probe.tasks = [](const Params&) { return 1; };
  probe.make = [&clock](Context&) { return std::make_unique<CostWork>(clock, 100); };
  return probe;
}

Result run_counted(const std::function<ScriptedCounters::Step(std::size_t)>& script, int retries,
                   std::size_t* samples_taken = nullptr) {
  StepClock clock;
  ScriptedCounters counters(script);
  HarnessOptions options;
  options.samples = 10;
  options.min_sample_s = 1e-5;
  options.retries = retries;
  options.counters = &counters;
  Result r = run_variant(one_task_probe(clock), {}, clock, ctx::testing::fake_timer(), options);
  if (samples_taken) *samples_taken = counters.samples();
  return r;
}

TEST(CountedSamples, InterferedSamplesAreSetAsideWithTheirReasonAndTakenAgain) {
  std::size_t taken = 0;
  // Samples 2 and 5 ran 40% for someone else; sample 7 also while the steal counter moved.
  const Result r = run_counted(
      [](std::size_t i) -> ScriptedCounters::Step {
        if (i == 2 || i == 5) return {0.4, 0};
        if (i == 7) return {0.4, 10e6};
        return {0.001, 0};
      },
      2, &taken);
  ASSERT_EQ(r.verdict.status, Status::ok) << (r.verdict.reasons.empty() ? "" : r.verdict.reasons[0].second);
  EXPECT_EQ(r.samples.size(), 10u);
  EXPECT_EQ(taken, 13u);
  ASSERT_EQ(r.set_aside.size(), 3u);
  EXPECT_EQ(r.set_aside_reasons,
            (std::vector<SetAsideReason>{SetAsideReason::cpu_taken, SetAsideReason::cpu_taken, SetAsideReason::steal}));
  ASSERT_TRUE(r.counters);
  EXPECT_EQ(r.counters->sharing, Sharing::one_cpu);
  EXPECT_EQ(r.counters->kept_samples, 10u);
  EXPECT_EQ(r.counters->kept_interfered, 0u);
  EXPECT_EQ(r.counters->set_aside[static_cast<std::size_t>(SetAsideReason::cpu_taken)], 2u);
  EXPECT_EQ(r.counters->set_aside[static_cast<std::size_t>(SetAsideReason::steal)], 1u);
  EXPECT_NEAR(r.counters->kept.wall_ns, 10e6, 1);
  EXPECT_NEAR(r.counters->kept.exec_ns, 10e6 * 0.999, 1);

  // The record carries each set-aside sample's reason and the counters.
  const auto j = nlohmann::json::parse(result_to_json(r).dump());
  EXPECT_EQ(j["set_aside"]["reasons"], nlohmann::json({"cpu_taken", "cpu_taken", "steal"}));
  EXPECT_EQ(j["counters"]["sharing"], "one_cpu");
  EXPECT_EQ(j["counters"]["set_aside"]["cpu_taken"], 2);
  EXPECT_EQ(j["counters"]["kept"]["samples"], 10);
  EXPECT_NEAR(j["counters"]["kept"]["other_share"].get<double>(), 0.001, 1e-6);
}

TEST(CountedSamples, AVariantInterferedThroughoutIsSuspectNeverOk) {
  // Every sample ran a third for someone else (the "every figure 1.5x slower
  // together" spell): the re-takes run out, the rest are kept, and the
  // verdict says the figure carries it.
  const Result r = run_counted([](std::size_t) { return ScriptedCounters::Step{1.0 / 3, 0}; }, 2);
  EXPECT_EQ(r.verdict.status, Status::suspect);
  ASSERT_FALSE(r.verdict.reasons.empty());
  const auto& [code, detail] = r.verdict.reasons.back();
  EXPECT_EQ(code, Reason::interference);
  EXPECT_NE(detail.find("10 of 10 kept samples"), std::string::npos) << detail;
  EXPECT_NE(detail.find("33.3%"), std::string::npos) << detail;
  EXPECT_EQ(r.set_aside.size(), 10u);
  ASSERT_TRUE(r.counters);
  EXPECT_EQ(r.counters->kept_interfered, 10u);
}

TEST(CountedSamples, RetriesZeroRecordsTakesNothingAgainAndStillJudges) {
  std::size_t taken = 0;
  const Result r = run_counted([](std::size_t i) { return ScriptedCounters::Step{i < 5 ? 0.5 : 0.0, 0}; }, 0, &taken);
  EXPECT_EQ(taken, 10u);
  EXPECT_TRUE(r.set_aside.empty());
  ASSERT_TRUE(r.counters);
  EXPECT_EQ(r.counters->kept_interfered, 5u);
  EXPECT_EQ(r.verdict.status, Status::suspect);
  EXPECT_EQ(r.verdict.reasons.back().first, Reason::interference);
}

TEST(CountedSamples, AFewInterferedKeptSamplesLeaveTheVerdictOk) {
  // With the re-takes spent on a spell early on, two of ten kept samples
  // carry it: at the limit (20%), not past it.
  const Result r = run_counted([](std::size_t i) { return ScriptedCounters::Step{i < 12 ? 0.5 : 0.0, 0}; }, 2);
  ASSERT_TRUE(r.counters);
  EXPECT_EQ(r.counters->kept_interfered, 2u);
  EXPECT_EQ(r.verdict.status, Status::ok);
}

TEST(CountedSamples, TheRecordFieldsAreTheSchemas) {
  std::ifstream in(std::string(CTXBENCH_SOURCE_DIR) + "/schema/record.schema.json");
  ASSERT_TRUE(in);
  const auto defs = nlohmann::json::parse(in)["$defs"];
  const auto& reasons = defs["set_aside_reason"]["enum"];
  std::vector<std::string> engine;
  for (int i = 0; i < set_aside_reason_count; ++i)
    engine.push_back(set_aside_reason_name(static_cast<SetAsideReason>(i)));
  EXPECT_EQ(engine, reasons.get<std::vector<std::string>>());
  const auto& sharing = defs["counters"]["properties"]["sharing"]["enum"];
  for (Sharing s : {Sharing::one_cpu, Sharing::own_cpus, Sharing::unknown})
    EXPECT_NE(std::find(sharing.begin(), sharing.end(), sharing_name(s)), sharing.end());
  CounterTotals c;
  c.sharing = Sharing::own_cpus;
  c.read_ns = {1000};
  c.unread = "test";
  const auto j = counters_to_json(c);
  for (const auto& [key, value] : j.items()) EXPECT_TRUE(defs["counters"]["properties"].contains(key)) << key;
  for (const auto& key : defs["counters"]["required"]) EXPECT_TRUE(j.contains(key)) << key;
  for (const auto& [key, value] : j["kept"].items())
    EXPECT_TRUE(defs["counters"]["properties"]["kept"]["properties"].contains(key)) << key;
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
