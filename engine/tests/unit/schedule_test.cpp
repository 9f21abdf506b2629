// The run's scheduler on its own, with fake probes on a fake clock: the
// rounds' seeded orders, how samples split over rounds, how a variant's
// rounds merge into one record (pooled samples, checks judged again), and
// the two schedules end to end: interleaved rounds, and the deferred
// re-measurement of a variant the host slowed.
#include "plan/schedule.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "fake_clocks.hpp"
#include "measure/workloads.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {

using namespace ctx;

using ctx::testing::CostWork;
using ctx::testing::StepClock;

ProbeDescriptor cost_probe(StepClock& clock, const std::string& name, std::uint64_t cost) {
  ProbeDescriptor probe;
  probe.name = name;
  probe.op = "one fake operation";
  probe.ops_per_iteration = constant(1);
  probe.tasks = [](const Params&) { return 1; };
  probe.make = [&clock, cost](Context&) { return std::make_unique<CostWork>(clock, cost); };
  return probe;
}

TEST(Schedule, EachRoundVisitsEveryVariantOnceInASeededOrder) {
  std::set<std::vector<std::size_t>> orders;
  for (int round = 0; round < 5; ++round) {
    const auto order = round_order(8, 42, round);
    EXPECT_EQ(std::set<std::size_t>(order.begin(), order.end()).size(), 8u);  // a permutation
    EXPECT_EQ(order, round_order(8, 42, round));                              // the seed decides
    orders.insert(order);
  }
  EXPECT_GT(orders.size(), 1u);  // the rounds' orders differ
  EXPECT_NE(round_order(8, 42, 0), round_order(8, 43, 0));
  EXPECT_EQ(round_order(0, 1, 0).size(), 0u);
}

TEST(Schedule, SamplesSplitEvenlyOverTheRounds) {
  EXPECT_EQ(samples_in_round(30, 5, 0), 6);
  EXPECT_EQ(samples_in_round(7, 3, 0), 3);
  EXPECT_EQ(samples_in_round(7, 3, 1), 2);
  EXPECT_EQ(samples_in_round(7, 3, 2), 2);
  EXPECT_THROW(samples_in_round(7, 3, 3), std::invalid_argument);
  StepClock clock;
  ProbeDescriptor probe = cost_probe(clock, "test.cost", 100);
  ScheduleOptions rounds{true, 5, 1};
  EXPECT_EQ(rounds_for(probe, 30, rounds), 5);
  EXPECT_EQ(rounds_for(probe, 3, rounds), 3);  // at most one per sample
  EXPECT_EQ(rounds_for(probe, 30, ScheduleOptions{false, 5, 1}), 1);
  probe.samples = [](const Params&, int) { return 1; };  // a probe that fixes its own samples
  EXPECT_EQ(rounds_for(probe, 30, rounds), 1);
}

Result round_of(std::vector<double> samples, double expected, double observed) {
  Result r;
  r.probe = "test.cost";
  r.samples = std::move(samples);
  r.summary = summarize(r.samples);
  r.ops_per_sample = 100;
  Check check;
  check.name = "voluntary_switches.measuring_task";
  judge_switches(expected, observed, check);
  r.checks.push_back(check);
  if (!check.ok) r.verdict.add(Status::suspect, Reason::too_few_switches, "too few in this round");
  r.derived["ops_executed"] = 1000;
  r.derived["voluntary_switches_per_op"] = observed / expected;
  r.duration_s = 1;
  return r;
}

// A round alone may look short of switches where the pooled counts are
// fine: the record judges the pooled counts, once.
TEST(Schedule, RoundsMergeIntoOneRecordJudgedOverEverySample) {
  Result a = round_of({10, 11, 12}, 100, 80);  // one round's waiter spun
  Result b = round_of({10, 10, 13}, 100, 110);
  b.set_aside = {30};
  b.verdict.add(Status::suspect, Reason::timer_quantization, "short batch");
  const Result r = merge_rounds({a, b}, 0, {});
  EXPECT_EQ(r.samples, (std::vector<double>{10, 11, 12, 10, 10, 13}));
  EXPECT_EQ(r.set_aside, std::vector<double>{30});
  ASSERT_TRUE(r.summary);
  EXPECT_EQ(r.summary->n, 6u);
  EXPECT_DOUBLE_EQ(r.summary->median, 10.5);
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_DOUBLE_EQ(r.checks[0].expected.get<double>(), 200);
  EXPECT_DOUBLE_EQ(r.checks[0].observed.get<double>(), 190);
  EXPECT_TRUE(r.checks[0].ok);  // 95%: the round's too_few_switches is judged again, and goes
  ASSERT_EQ(r.verdict.reasons.size(), 1u);
  EXPECT_EQ(r.verdict.reasons[0].first, Reason::timer_quantization);
  EXPECT_EQ(r.verdict.reasons[0].second, "round 2: short batch");
  EXPECT_DOUBLE_EQ(r.derived["ops_executed"].get<double>(), 2000);               // a total
  EXPECT_DOUBLE_EQ(r.derived["voluntary_switches_per_op"].get<double>(), 0.95);  // per op: weighted
  EXPECT_DOUBLE_EQ(r.duration_s, 2);
}

// The kernel's counters of the rounds add up, each set-aside sample keeps its
// reason, and whether the figure carries interference is judged over the
// pooled kept samples (judge_interference when the record is written).
TEST(Schedule, RoundsAddTheirCountersAndKeepEachSetAsideReason) {
  auto counted = [](std::vector<double> samples, std::size_t interfered, std::vector<double> aside,
                    std::vector<SetAsideReason> why) {
    Result r = round_of(std::move(samples), 100, 100);
    r.set_aside = std::move(aside);
    r.set_aside_reasons = std::move(why);
    CounterTotals c;
    c.sharing = Sharing::one_cpu;
    c.tasks = 2;
    c.cpus = {1};
    c.kept.wall_ns = 3e6;
    c.kept.exec_ns = 2.9e6;
    c.kept_samples = r.samples.size();
    c.kept_interfered = interfered;
    for (const auto reason : r.set_aside_reasons) ++c.set_aside[static_cast<std::size_t>(reason)];
    c.read_ns = {1000, 3000};
    r.counters = c;
    return r;
  };
  const Result a = counted({10, 11, 12}, 3, {30, 31, 32},
                           {SetAsideReason::cpu_taken, SetAsideReason::cpu_taken, SetAsideReason::host_reference});
  const Result b = counted({10, 10, 13}, 0, {40}, {SetAsideReason::steal});
  Result r = merge_rounds({a, b}, 0, {});
  EXPECT_EQ(r.set_aside, (std::vector<double>{30, 31, 32, 40}));
  EXPECT_EQ(r.set_aside_reasons, (std::vector<SetAsideReason>{SetAsideReason::cpu_taken, SetAsideReason::cpu_taken,
                                                              SetAsideReason::host_reference, SetAsideReason::steal}));
  ASSERT_TRUE(r.counters);
  EXPECT_EQ(r.counters->kept_samples, 6u);
  EXPECT_EQ(r.counters->kept_interfered, 3u);
  EXPECT_DOUBLE_EQ(r.counters->kept.wall_ns, 6e6);
  EXPECT_EQ(r.counters->set_aside[static_cast<std::size_t>(SetAsideReason::cpu_taken)], 2u);
  EXPECT_EQ(r.counters->read_ns.size(), 4u);
  EXPECT_EQ(r.verdict.status, Status::ok);  // judged when the record is written
  judge_interference(r);
  // Half the pooled kept samples still carry interference: never ok.
  EXPECT_EQ(r.verdict.status, Status::suspect);
  EXPECT_EQ(r.verdict.reasons.back().first, Reason::interference);
  EXPECT_NE(r.verdict.reasons.back().second.find("3 of 6 kept samples"), std::string::npos)
      << r.verdict.reasons.back().second;
}

// Each derived figure combines as its definition says: a probe's total is
// summed, a figure defined nowhere is a per-op mean weighted by samples, and
// a function of the summary is left to `derive` (absent without one), never
// the rounds' average.
TEST(Schedule, MergedRoundsCombineEachFigureByItsAggregation) {
  ProbeDescriptor probe;
  probe.name = "test.cost";
  probe.derived = {{"made", Aggregation::sum}, {"from_median", Aggregation::recompute}};
  Result a = round_of({10, 11, 12}, 100, 100);
  Result b = round_of({10, 10, 13, 14}, 100, 100);
  for (Result* part : {&a, &b}) {
    part->derived["made"] = static_cast<double>(part->samples.size());
    part->derived["per_op"] = part->samples.size() == 3 ? 1.0 : 2.0;
    part->derived["from_median"] = part->summary->median;
    part->derived["where"] = "here";
  }
  const Result r = merge_rounds({a, b}, 0, {}, &probe);
  EXPECT_DOUBLE_EQ(r.derived["made"].get<double>(), 7);
  EXPECT_DOUBLE_EQ(r.derived["per_op"].get<double>(), (3 * 1.0 + 4 * 2.0) / 7);
  EXPECT_FALSE(r.derived.contains("from_median"));
  EXPECT_EQ(r.derived["where"], "here");
  EXPECT_DOUBLE_EQ(r.derived["ops_executed"].get<double>(), 2000);  // the harness's own total
  // With `derive`, the figure is the pooled samples' median (11), not the rounds' averaged (11.25).
  const Result derived = merge_rounds(
      {a, b}, 0, [](Result& m) { m.derived["from_median"] = m.summary->median; }, &probe);
  EXPECT_DOUBLE_EQ(derived.derived["from_median"].get<double>(), 11);
}

// A user-level switch's rounds: each round's kernel_not_involved figure is
// per op over its every batch (derived.ops_executed); the record judges the
// sleeps of every round over their ops, once: 2 over 891364 ops and a round
// that slept 15 times in 1000 ops (1.5 per 100: over the rule alone, under it
// pooled).
Result user_switch_round(double switches, double ops) {
  Result r;
  r.probe = "test.user_switch";
  r.samples = {5, 5, 6};
  r.summary = summarize(r.samples);
  Check check;
  if (auto problem = judge_no_switches({static_cast<long>(switches), 0}, ops, check))
    r.verdict.add(Status::suspect, problem->first, problem->second);
  r.checks.push_back(check);
  r.derived["ops_executed"] = ops;
  return r;
}

TEST(Schedule, MergedRoundsJudgeNoKernelSwitchOverEveryRound) {
  const Result quiet = merge_rounds({user_switch_round(2, 891364), user_switch_round(15, 1000)}, 0, {});
  ASSERT_EQ(quiet.checks.size(), 1u);
  EXPECT_EQ(quiet.checks[0].name, no_switches_check);
  EXPECT_DOUBLE_EQ(quiet.checks[0].observed.get<double>(), 17 / 892364.0);
  EXPECT_TRUE(quiet.checks[0].ok);
  EXPECT_EQ(quiet.verdict.status, Status::ok);
  EXPECT_EQ(quiet.checks[0].detail,
            "17 voluntary kernel context switches (sleeps) over 892364 ops in 2 rounds (calibration and "
            "warm-up included)");

  const Result busy = merge_rounds({user_switch_round(15, 1000), user_switch_round(10, 1000)}, 0, {});
  ASSERT_EQ(busy.checks.size(), 1u);
  EXPECT_DOUBLE_EQ(busy.checks[0].observed.get<double>(), 0.0125);
  EXPECT_FALSE(busy.checks[0].ok);
  ASSERT_EQ(busy.verdict.reasons.size(), 1u);  // judged once, not once per round
  EXPECT_EQ(busy.verdict.status, Status::suspect);
  EXPECT_EQ(busy.verdict.reasons[0].first, Reason::too_many_switches);
}

// The figures that are functions of the summary (2 x the median for
// per_round_trip_ns, ticks per op, ns per observed switch, a rate's ns per
// message) are those of the pooled samples, exactly as derive_from_summary
// gives them for one record holding every sample; not the rounds' figures
// averaged (31 ns for per_round_trip_ns here, where the pooled median gives 32).
TEST(Schedule, MergedRoundsDeriveTheirFiguresFromThePooledSamples) {
  TimerInfo timer = ctx::testing::fake_timer();
  timer.ns_per_tick = 0.5;
  for (const Unit unit : {Unit::ns, Unit::msgs_per_s}) {
    SCOPED_TRACE(unit == Unit::ns ? "ns" : "msgs_per_s");
    ProbeDescriptor probe;
    probe.name = "test.cost";
    probe.unit = unit;
    probe.from_summary = round_trip_figures;
    const auto derive = [&](Result& r) { derive_from_summary(probe, true, timer, r); };
    auto scripted = [&](std::vector<double> samples, double expected, double observed) {
      Result r = round_of(std::move(samples), expected, observed);
      r.derived["observed_switches_per_expected"] = observed / expected;
      derive(r);
      return r;
    };
    const Result a = scripted({10, 11, 12}, 100, 80), b = scripted({20, 20, 30}, 100, 110);
    const Result merged = merge_rounds({a, b}, 0, derive);

    Result pooled;  // one record holding every sample
    pooled.samples = {10, 11, 12, 20, 20, 30};
    pooled.summary = summarize(pooled.samples);
    pooled.derived["observed_switches_per_expected"] = 190.0 / 200.0;
    derive(pooled);
    ASSERT_TRUE(merged.summary);
    EXPECT_DOUBLE_EQ(merged.summary->median, 16);
    for (const char* key :
         {"per_round_trip_ns", "tsc_ticks_per_op", "per_observed_switch_ns", "observed_switches_per_expected"}) {
      SCOPED_TRACE(key);
      ASSERT_TRUE(merged.derived.contains(key));
      EXPECT_DOUBLE_EQ(merged.derived[key].get<double>(), pooled.derived[key].get<double>());
    }
    EXPECT_DOUBLE_EQ(merged.derived["per_round_trip_ns"].get<double>(), 32);
    if (unit == Unit::ns) {
      EXPECT_DOUBLE_EQ(merged.derived["tsc_ticks_per_op"].get<double>(), 32);  // 16 ns at 0.5 ns a tick
      EXPECT_DOUBLE_EQ(merged.derived["per_observed_switch_ns"].get<double>(), 16 / 0.95);
      EXPECT_FALSE(merged.derived.contains("median_ns_per_msg"));
    } else {  // samples are messages per second: the ns figures come from 1e9 / sample
      ASSERT_TRUE(merged.derived.contains("median_ns_per_msg"));
      EXPECT_DOUBLE_EQ(merged.derived["median_ns_per_msg"].get<double>(),
                       pooled.derived["median_ns_per_msg"].get<double>());
      EXPECT_DOUBLE_EQ(merged.derived["median_ns_per_msg"].get<double>(), (1e9 / 12 + 1e9 / 20) / 2);
    }
  }
}

// Each round's own figure: its kept samples' median less the record's
// baseline, its count and its set-aside samples; a round that kept nothing
// has no median.
TEST(Schedule, RoundFiguresGiveEachRoundsMedianLessTheBaseline) {
  Result a = round_of({10, 11, 12}, 100, 100);
  Result b = round_of({20, 21, 22, 23}, 100, 100);
  b.set_aside = {90, 95};
  Result c;
  c.set_aside = {80};
  const nlohmann::json figures = round_figures({a, b, c}, 2);
  ASSERT_EQ(figures.size(), 3u);
  EXPECT_EQ(figures[0], (nlohmann::json{{"round", 0}, {"n", 3}, {"median", 9.0}, {"set_aside", 0}}));
  EXPECT_EQ(figures[1], (nlohmann::json{{"round", 1}, {"n", 4}, {"median", 19.5}, {"set_aside", 2}}));
  EXPECT_EQ(figures[2], (nlohmann::json{{"round", 2}, {"n", 0}, {"median", nullptr}, {"set_aside", 1}}));
  EXPECT_EQ(round_figures({a}, 0)[0]["median"], 11.0);
}

TEST(Schedule, AFailedRoundMakesTheRecordThatRounds) {
  Result a = round_of({10, 11, 12}, 100, 100);
  Result failed;
  failed.verdict.add(Status::failed, Reason::child_failed, "the partner died");
  const Result r = merge_rounds({a, failed}, 0, {});
  EXPECT_EQ(r.verdict.status, Status::failed);
  EXPECT_TRUE(r.samples.empty());
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("round 2 did not finish"), std::string::npos);
}

// What a run wrote and announced.
struct Ran {
  std::vector<nlohmann::json> records;
  std::vector<std::tuple<std::size_t, std::size_t, int>> announced;  // index, attempt, round
};

Ran run_scheduled(const std::vector<Variant>& variants, const HarnessOptions& harness, const ScheduleOptions& schedule,
                  StepClock& clock, std::function<void(const Variant&, Result&)> after_measured = {}) {
  Ran ran;
  std::FILE* memory = tmpfile();
  if (!memory) throw std::runtime_error("tmpfile");
  {
    Sink sink(memory, "memory");
    Output output;
    output.add(std::make_unique<JsonLinesReporter>(sink));
    const TimerInfo timer = ctx::testing::fake_timer();
    Scheduler scheduler(variants, harness, schedule, clock, timer, output, "test-run-0001",
                        ScheduleHooks{.announce = [&](std::size_t index, std::size_t attempt,
                                                      int round) { ran.announced.emplace_back(index, attempt, round); },
                                      .limited = [](const std::function<Result()>& measure) { return measure(); },
                                      .after_measured = std::move(after_measured),
                                      .output_failed = [](const OutputError& failure) { throw failure; }});
    scheduler.run();
  }
  std::rewind(memory);
  char line[1 << 16];
  while (std::fgets(line, sizeof line, memory)) ran.records.push_back(nlohmann::json::parse(line));
  std::fclose(memory);
  return ran;
}

TEST(Scheduler, InterleavedRoundsSpreadEachVariantOverTheRun) {
  StepClock clock;
  const ProbeDescriptor a = cost_probe(clock, "test.a", 100), b = cost_probe(clock, "test.b", 200),
                        c = cost_probe(clock, "test.c", 300);
  const std::vector<Variant> variants{{&a, {}}, {&b, {}}, {&c, {}}};
  HarnessOptions harness;
  harness.samples = 7;
  harness.min_sample_s = 1e-5;
  const ScheduleOptions schedule{true, 3, 9};
  const Ran ran = run_scheduled(variants, harness, schedule, clock);
  // Round by round, in each round's seeded order.
  std::vector<std::tuple<std::size_t, std::size_t, int>> expected;
  for (int round = 0; round < 3; ++round)
    for (std::size_t i : round_order(3, 9, round)) expected.emplace_back(i, 1, round + 1);
  EXPECT_EQ(ran.announced, expected);
  ASSERT_EQ(ran.records.size(), 3u);  // each written once, when its last round is done
  std::set<std::size_t> indices;
  for (const auto& r : ran.records) {
    indices.insert(r["variant_index"].get<std::size_t>());
    EXPECT_EQ(r["samples"].size(), 7u);  // 3 + 2 + 2
    EXPECT_EQ(r["summary"]["n"], 7);
    EXPECT_EQ(r["schedule"]["interleave"], "rounds");
    EXPECT_EQ(r["schedule"]["rounds"], 3);
    EXPECT_EQ(r["schedule"]["seed"], 9);
    // One figure per round, indexed by the run's round: 3 + 2 + 2 kept samples.
    const auto& figures = r["schedule"]["round_figures"];
    ASSERT_EQ(figures.size(), 3u);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(figures[k]["round"], k);
      EXPECT_EQ(figures[k]["n"], k == 0 ? 3 : 2);
      EXPECT_EQ(figures[k]["set_aside"], 0);
      EXPECT_TRUE(figures[k]["median"].is_number());
    }
    EXPECT_EQ(r["run_id"], "test-run-0001");
  }
  EXPECT_EQ(indices, (std::set<std::size_t>{1, 2, 3}));
}

// Later rounds take the first round's batch size instead of calibrating
// again: here the operation costs twice as much after the first round, and
// the batches keep the first round's count.
TEST(Scheduler, LaterRoundsKeepTheFirstRoundsBatch) {
  StepClock clock;
  std::uint64_t cost = 100;
  ProbeDescriptor probe = cost_probe(clock, "test.a", 100);
  probe.make = [&](Context&) { return std::make_unique<CostWork>(clock, cost); };
  HarnessOptions harness;
  harness.samples = 6;
  harness.min_sample_s = 1e-5;
  const std::vector<Variant> variants{{&probe, {}}};
  const Ran whole = run_scheduled(variants, harness, ScheduleOptions{false, 3, 1}, clock);
  ASSERT_EQ(whole.records.size(), 1u);
  const auto calibrated = whole.records[0]["ops_per_sample"].get<std::uint64_t>();
  ScheduleOptions rounds{true, 3, 1};
  ProbeDescriptor dearer = probe;
  int made = 0;
  dearer.make = [&](Context&) { return std::make_unique<CostWork>(clock, made++ == 0 ? 100 : 200); };
  const Ran interleaved = run_scheduled({{&dearer, {}}}, harness, rounds, clock);
  ASSERT_EQ(interleaved.records.size(), 1u);
  EXPECT_EQ(made, 3);
  EXPECT_EQ(interleaved.records[0]["ops_per_sample"].get<std::uint64_t>(), calibrated);
}

// What runs after a variant is measured (the traced pass) sees the merged
// record: every round's samples and their median, not the last round's, so
// its untraced median is the record's. Here later rounds cost three times
// the first, so the last round's median is not the pooled one.
TEST(Scheduler, TheTracedPassSeesTheMergedRounds) {
  StepClock clock;
  ProbeDescriptor probe = cost_probe(clock, "test.a", 100);
  probe.from_summary = round_trip_figures;
  int made = 0;
  probe.make = [&](Context&) { return std::make_unique<CostWork>(clock, made++ == 0 ? 100 : 300); };
  HarnessOptions harness;
  harness.samples = 7;
  harness.min_sample_s = 1e-5;
  int passes = 0;
  const Ran ran =
      run_scheduled({{&probe, {}}}, harness, ScheduleOptions{true, 3, 1}, clock, [&](const Variant&, Result& r) {
        ++passes;
        r.derived["seen_samples"] = static_cast<double>(r.samples.size());
        r.derived["seen_median"] = r.summary->median;
      });
  EXPECT_EQ(made, 3);
  EXPECT_EQ(passes, 1);
  ASSERT_EQ(ran.records.size(), 1u);
  const auto& record = ran.records[0];
  const double median = record["summary"]["median"].get<double>();
  ASSERT_TRUE(record["derived"].contains("seen_samples") && record["derived"].contains("seen_median"));
  EXPECT_EQ(record["derived"]["seen_samples"].get<double>(), 7);
  EXPECT_DOUBLE_EQ(record["derived"]["seen_median"].get<double>(), median);
  EXPECT_DOUBLE_EQ(record["derived"]["per_round_trip_ns"].get<double>(), 2 * median);
}

// Not interleaved, a variant the host slowed waits while the variants after
// it are measured, then is measured again; its record is written last.
TEST(Scheduler, ASlowedVariantIsMeasuredAgainAfterTheOthers) {
  StepClock clock;
  const ProbeDescriptor a = cost_probe(clock, "test.a", 100), b = cost_probe(clock, "test.b", 200);
  const std::vector<Variant> variants{{&a, {}}, {&b, {}}};
  constexpr std::size_t established = ctx::testing::reference_established_timings;
  constexpr std::size_t samples = 5;
  // Slowed through the first variant's samples (no clean budget: taken once
  // and kept, `samples` timings), at full speed after.
  ctx::testing::ScriptedTimings reference_clock(
      [](std::size_t i) -> std::uint64_t { return i >= established && i < established + samples ? 30000 : 20000; });
  HostReference reference(reference_clock, 20000, 0);
  HarnessOptions harness;
  harness.samples = samples;
  harness.min_sample_s = 1e-5;
  harness.reference = &reference;
  harness.retries = 1;
  harness.retry_gap_s = 0;
  harness.clean_budget_s = 0;
  const Ran ran = run_scheduled(variants, harness, ScheduleOptions{false, 5, 0}, clock);
  EXPECT_EQ(ran.announced, (std::vector<std::tuple<std::size_t, std::size_t, int>>{{0, 1, 0}, {1, 1, 0}, {0, 2, 0}}));
  ASSERT_EQ(ran.records.size(), 2u);
  ASSERT_TRUE(ran.records[1].contains("interference") && ran.records[1].contains("schedule"));
  EXPECT_EQ(ran.records[0]["variant_index"], 2);  // written when done
  EXPECT_EQ(ran.records[1]["variant_index"], 1);
  EXPECT_EQ(ran.records[1]["interference"]["attempts"].size(), 2u);
  EXPECT_EQ(ran.records[1]["interference"]["kept"], 1);
  EXPECT_EQ(ran.records[1]["schedule"], (nlohmann::json{{"interleave", "off"}}));
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
