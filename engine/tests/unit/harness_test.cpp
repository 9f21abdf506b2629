// The harness with a fake clock: calibration reaches its target, timer
// overhead is subtracted once per batch, per-op division is exact, and the
// switch-count judgement follows its 90%..110% rule.
#include "harness.hpp"

#include <gtest/gtest.h>

namespace {
namespace CTXBENCH_UNITY_ID {

using namespace ctx;

// Advances by `per_read` ns on every read, plus whatever the workload "spent".
class FakeClock final : public Clock {
 public:
  explicit FakeClock(std::uint64_t per_read) : per_read_(per_read) {}
  std::uint64_t now() override { return now_ += per_read_; }
  double ticks_to_ns(std::uint64_t ticks) const override { return static_cast<double>(ticks); }
  std::string name() const override { return "fake"; }
  void spend(std::uint64_t ns) { now_ += ns; }

 private:
  std::uint64_t now_ = 0;
  std::uint64_t per_read_;
};

class FixedCostWork final : public Workload {
 public:
  FixedCostWork(FakeClock& clock, std::uint64_t ns_per_iteration) : clock_(clock), cost_(ns_per_iteration) {}
  void run(std::uint64_t iterations) override {
    clock_.spend(iterations * cost_);
    calls_ += iterations;
  }
  std::uint64_t calls_ = 0;

 private:
  FakeClock& clock_;
  std::uint64_t cost_;
};

TEST(Calibration, GrowsUntilTheTargetIsReached) {
  std::vector<std::uint64_t> tried;
  const auto k = calibrate_batch(
      [&](std::uint64_t n) {
        tried.push_back(n);
        return static_cast<double>(n) * 100.0;  // 100 ns per iteration
      },
      1e6);
  EXPECT_GE(static_cast<double>(k) * 100.0, 1e6);
  // Never grows more than tenfold per step while a batch is under a tenth of the target.
  for (std::size_t i = 1; i < tried.size(); ++i)
    if (static_cast<double>(tried[i - 1]) * 100.0 < 1e5) {
      EXPECT_LE(tried[i], tried[i - 1] * 10);
    }
  // Overshoot is bounded by the 1.4 head-room (x10 steps can land at most 10x past).
  EXPECT_LE(static_cast<double>(k) * 100.0, 1.4e7);
  EXPECT_EQ(tried.back(), k);
}

TEST(Calibration, TheFirstBatchOnlyWarmsUp) {
  int calls = 0;
  // A cold first batch that looks long enough must not fix k at 1.
  const auto k =
      calibrate_batch([&](std::uint64_t n) { return ++calls == 1 ? 5e6 : static_cast<double>(n) * 1000.0; }, 1e6);
  EXPECT_GE(k, 1000u);
}

TEST(Calibration, StopsAtTheIterationCap) {
  const auto k = calibrate_batch([](std::uint64_t) { return 0.0; }, 1e6, 1000);
  EXPECT_EQ(k, 1000u);
}

TEST(Calibration, ZeroElapsedStillGrows) {
  int calls = 0;
  const auto k = calibrate_batch(
      [&](std::uint64_t n) {
        ++calls;
        return n >= 100 ? 2e6 : 0.0;
      },
      1e6);
  EXPECT_GE(k, 100u);
  EXPECT_LE(calls, 5);  // the warm-up batch, then 1, 10, 100
}

TEST(TimeBatch, SubtractsOneTimerReadPerBatch) {
  FakeClock clock(25);  // every read costs 25 ns
  TimerInfo timer;
  timer.overhead_ns = 25;
  FixedCostWork work(clock, 40);
  const double ns = time_batch(clock, timer, work, 1000);
  // end - start = 1000*40 + 25 (the second read); minus one read = the work alone.
  EXPECT_DOUBLE_EQ(ns, 40000.0);
  EXPECT_EQ(work.calls_, 1000u);
}

TEST(TimeBatch, BatchTargetRespectsResolutionAndOverhead) {
  HarnessOptions options;
  options.min_sample_s = 1e-6;
  TimerInfo timer;
  timer.resolution_ns = 50;  // 1000x = 50 us
  timer.overhead_ns = 20;    // 100x = 2 us
  EXPECT_DOUBLE_EQ(batch_target_ns(options, timer), 50000.0);
  options.min_sample_s = 0.01;
  EXPECT_DOUBLE_EQ(batch_target_ns(options, timer), 1e7);
}

TEST(Verdict, SwitchCountsInsideTenPercentAreOk) {
  Check check;
  check.name = "voluntary";
  EXPECT_FALSE(judge_switches(1000, 950, check).has_value());
  EXPECT_TRUE(check.ok);
  EXPECT_DOUBLE_EQ(*check.ratio, 0.95);
  EXPECT_FALSE(judge_switches(1000, 1100, check).has_value());
}

TEST(Verdict, TooFewAndTooManyAreNamed) {
  Check check;
  check.name = "voluntary";
  auto few = judge_switches(1000, 500, check);
  ASSERT_TRUE(few.has_value());
  EXPECT_EQ(few->first, Reason::too_few_switches);
  EXPECT_FALSE(check.ok);
  auto many = judge_switches(1000, 2000, check);
  ASSERT_TRUE(many.has_value());
  EXPECT_EQ(many->first, Reason::too_many_switches);
  auto none = judge_switches(0, 0, check);
  ASSERT_TRUE(none.has_value());
}

TEST(Verdict, StatusOnlyWorsens) {
  Verdict v;
  v.add(Status::suspect, Reason::migrated, "moved");
  v.add(Status::ok, Reason::error, "ignored rank");
  EXPECT_EQ(v.status, Status::suspect);
  v.add(Status::failed, Reason::child_failed, "died");
  EXPECT_EQ(v.status, Status::failed);
  EXPECT_EQ(v.reasons.size(), 3u);
}

// A whole variant through run_variant with a fake clock and a fake probe.
TEST(RunVariant, PerOpFiguresAreExactWithAFakeClock) {
  FakeClock clock(10);
  TimerInfo timer;
  timer.source = "fake";
  timer.overhead_ns = 10;
  timer.resolution_ns = 1;
  ProbeDescriptor probe;
  probe.name = "test.fixed";
  probe.op = "one fake operation costing 50 ns";
  probe.ops_per_iteration = constant(2);  // one iteration = two ops
  probe.tasks = [](const Params&) { return 1; };
  probe.make = [&](Context&) { return std::make_unique<FixedCostWork>(clock, 100); };
  probe.baseline = "a fake baseline costing 20 ns per op";
  probe.baseline_ops_per_iteration = constant(1);
  probe.make_baseline = [&](Context&) { return std::make_unique<FixedCostWork>(clock, 20); };
  HarnessOptions options;
  options.samples = 7;
  options.min_sample_s = 1e-5;
  const Result r = run_variant(probe, {}, clock, timer, options);
  ASSERT_EQ(r.verdict.status, Status::ok) << (r.verdict.reasons.empty() ? "" : r.verdict.reasons[0].second);
  ASSERT_EQ(r.samples.size(), 7u);
  for (double v : r.samples) EXPECT_DOUBLE_EQ(v, 50.0);
  ASSERT_TRUE(r.summary && r.baseline);
  EXPECT_DOUBLE_EQ(r.summary->median, 50.0);
  EXPECT_DOUBLE_EQ(r.baseline->value, 20.0);
  EXPECT_TRUE(r.timer_corrected);
  EXPECT_GE(static_cast<double>(r.ops_per_sample) * 50.0, 1e4);
}

TEST(RunVariant, ThrowingWorkloadBecomesAFailedRecord) {
  FakeClock clock(10);
  TimerInfo timer;
  struct Failing final : Workload {
    void run(std::uint64_t) override { throw ProbeError(Reason::child_failed, "partner died"); }
  };
  ProbeDescriptor probe;
  probe.name = "test.failing";
  probe.op = "an operation whose partner dies";
  probe.ops_per_iteration = constant(1);
  probe.tasks = [](const Params&) { return 1; };
  probe.make = [](Context&) { return std::make_unique<Failing>(); };
  const Result r = run_variant(probe, {}, clock, timer, HarnessOptions{});
  EXPECT_EQ(r.verdict.status, Status::failed);
  ASSERT_EQ(r.verdict.reasons.size(), 1u);
  EXPECT_EQ(r.verdict.reasons[0].first, Reason::child_failed);
  EXPECT_FALSE(r.summary.has_value());
}

TEST(RunVariant, UnsupportedProbeSaysWhy) {
  FakeClock clock(10);
  ProbeDescriptor probe;
  probe.name = "test.never";
  probe.op = "an operation this machine refuses";
  probe.ops_per_iteration = constant(1);
  probe.tasks = [](const Params&) { return 1; };
  probe.make = [](Context&) -> std::unique_ptr<Workload> { throw std::logic_error("must not be built"); };
  probe.supported = [](const Params&) { return Support::no(Reason::not_supported_here, "no such thing here"); };
  const Result r = run_variant(probe, {}, clock, TimerInfo{}, HarnessOptions{});
  EXPECT_EQ(r.verdict.status, Status::unsupported);
  EXPECT_EQ(r.verdict.reasons.at(0).second, "no such thing here");
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
