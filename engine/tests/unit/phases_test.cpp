// Phases of a switch on event sequences with known timestamps. The same-CPU
// and cross-CPU sequences were cut from real traced passes on this project's
// 2-vCPU KVM guest (CTXBENCH_TRACE_EVENTS, docs/tracing.md): switch.pipe
// between threads, timestamps made relative to the first event. The idle
// exit sequence is written by hand in the kernel's order, because that
// loaded machine never let a CPU go idle during a recording.
#include "phases.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace {
namespace CTXBENCH_UNITY_ID {
using ctx::analyze_switches;
using ctx::PhaseReport;
using ctx::PhaseStat;
using ctx::TraceEvent;
using K = ctx::TraceKind;

const PhaseStat* phase(const PhaseReport& r, const std::string& from, const std::string& to) {
  const auto it =
      std::find_if(r.phases.begin(), r.phases.end(), [&](const PhaseStat& p) { return p.from == from && p.to == to; });
  return it == r.phases.end() ? nullptr : &*it;
}

// The partner (31814) was forked from the measuring task (31807) while traced.
std::vector<TraceEvent> with_fork(std::vector<TraceEvent> events, int parent, int child) {
  events.insert(events.begin(), {0, 0, parent, K::fork, parent, child});
  return events;
}

// Recorded: pipe ping-pong on CPU 0, SCHED_OTHER. 31814 writes and wakes
// 31807, is preempted on its way back to user mode; 31807's write wakes
// nobody (31814 is runnable), its read blocks and gives the CPU straight
// back to 31814, which resumes in user mode and writes again.
const std::vector<TraceEvent> same_cpu = with_fork(
    {
        {10, 0, 31814, K::sys_enter, 1, 0},
        {324, 0, 31814, K::waking, 31807, 0},
        {794, 0, 31814, K::wakeup, 31807, 0},
        {1016, 0, 31814, K::sys_exit, 1, 0},
        {1357, 0, 31814, K::sched_switch, 31814, 31807},
        {1807, 0, 31807, K::sys_exit, 0, 0},
        {2240, 0, 31807, K::sys_enter, 1, 0},
        {2550, 0, 31807, K::sys_exit, 1, 0},
        {2858, 0, 31807, K::sys_enter, 0, 0},
        {3398, 0, 31807, K::sched_switch, 31807, 31814},
        {3987, 0, 31814, K::sys_enter, 0, 0},
        {4262, 0, 31814, K::sys_exit, 0, 0},
        {4540, 0, 31814, K::sys_enter, 1, 0},
        {4850, 0, 31814, K::waking, 31807, 0},
        {5228, 0, 31814, K::wakeup, 31807, 0},
        {5449, 0, 31814, K::sys_exit, 1, 0},
        {5794, 0, 31814, K::sched_switch, 31814, 31807},
        {6240, 0, 31807, K::sys_exit, 0, 0},
        {6662, 0, 31807, K::sys_enter, 1, 0},
    },
    31807, 31814);

TEST(Phases, SameCpuWakeChainsFromRecordedEvents) {
  const PhaseReport r = analyze_switches(same_cpu, 31807);
  EXPECT_EQ(r.tasks, 2u);
  EXPECT_EQ(r.woken, 2u);
  EXPECT_EQ(r.matched, 3u);  // two woken, one straight back
  EXPECT_EQ(r.direct, 1u);
  EXPECT_EQ(r.cross_cpu, 0u);
  const PhaseStat* to_waking = phase(r, "call entry", "waking");
  ASSERT_NE(to_waking, nullptr);
  EXPECT_EQ(to_waking->count, 2u);
  EXPECT_DOUBLE_EQ(to_waking->summary.median, (314.0 + 310.0) / 2);
  const PhaseStat* wake = phase(r, "waking", "wakeup");
  ASSERT_NE(wake, nullptr);
  EXPECT_DOUBLE_EQ(wake->summary.min, 378);
  EXPECT_DOUBLE_EQ(wake->summary.max, 470);
  // wakeup -> switch: the waker finishes its call and is preempted on return.
  EXPECT_DOUBLE_EQ(phase(r, "wakeup", "switch")->summary.min, 1357.0 - 794);
  EXPECT_DOUBLE_EQ(phase(r, "switch", "call exit")->summary.max, 1807.0 - 1357);
  // The straight-back switch: from 31807's blocking read to the switch; 31814
  // was preempted in user mode, so its chain ends at the switch and goes on
  // to its next call (the write that wakes).
  EXPECT_DOUBLE_EQ(phase(r, "call entry", "switch")->summary.median, 3398.0 - 2858);
  EXPECT_DOUBLE_EQ(phase(r, "switch", "next call")->summary.median, 4540.0 - 3398);
  // The first woken chain's next call is 31807's read that gives the CPU back.
  EXPECT_DOUBLE_EQ(phase(r, "call exit", "next call")->summary.min, 2858.0 - 1807);
  ASSERT_TRUE(r.period.has_value());
  EXPECT_EQ(r.period->n, 2u);  // the last chain has no next call in the excerpt
  EXPECT_DOUBLE_EQ(r.period->max, 2858.0 - 10);
  EXPECT_DOUBLE_EQ(r.period->min, 4540.0 - 2858);
}

TEST(Phases, PhasesPartitionEachPeriod) {
  const PhaseReport r = analyze_switches(same_cpu, 31807);
  // Chains with a next call cover their period exactly; the sum of every
  // phase's mean per switch is total chain time / matched switches.
  double total = 0;
  for (const auto& p : r.phases) total += p.mean_per_switch_ns * static_cast<double>(r.matched);
  // Chain 1: 10 -> 2858; chain 2: 2858 -> 4540; chain 3: 4540 -> 6240 (no next call in the excerpt).
  EXPECT_DOUBLE_EQ(total, (2858.0 - 10) + (4540.0 - 2858) + (6240.0 - 4540));
  EXPECT_DOUBLE_EQ(r.attributed_per_switch_ns * 3, total);
}

TEST(Phases, EventCostIsTakenFromTheEventsInsideEachPhase) {
  const PhaseReport r = analyze_switches(same_cpu, 31807, 100.0);
  const PhaseStat* p = phase(r, "switch", "call exit");
  ASSERT_NE(p, nullptr);
  // [switch, call exit) holds one event each time (the switch itself), twice over three switches.
  EXPECT_DOUBLE_EQ(p->events_per_switch, 2.0 / 3);
  ASSERT_TRUE(p->corrected_per_switch_ns.has_value());
  EXPECT_DOUBLE_EQ(*p->corrected_per_switch_ns, p->typical_per_switch_ns - 100.0 * 2 / 3);
  // From 31807's call exit to its next call: the exit, its write's enter and exit (3 events).
  EXPECT_DOUBLE_EQ(phase(r, "call exit", "next call")->events_per_switch, 3.0 / 3);
}

// Recorded: the same probe with cpus=cross; CPU 1 ran another task, so the
// wake-up enqueues remotely and a reschedule IPI preempts that task.
TEST(Phases, CrossCpuWakeWithReschedulingInterrupt) {
  const std::vector<TraceEvent> events = with_fork(
      {
          {10, 0, 31910, K::sys_enter, 1, 0},
          {39101, 0, 31910, K::waking, 31926, 1},
          {56133, 0, 31910, K::wakeup, 31926, 1},
          {57782, 0, 31910, K::sys_exit, 1, 0},
          {58100, 0, 31910, K::sys_enter, 0, 0},
          {59269, 0, 31910, K::sched_switch, 31910, 31759},
          {74911, 1, 31908, K::ipi_entry, 0, 0},
          {75882, 1, 31908, K::ipi_exit, 0, 0},
          {76900, 1, 31908, K::sched_switch, 31908, 31926},
          {78100, 1, 31926, K::sys_exit, 0, 0},
          {78700, 1, 31926, K::sys_enter, 1, 0},
      },
      31910, 31926);
  const PhaseReport r = analyze_switches(events, 31910);
  EXPECT_EQ(r.matched, 1u);
  EXPECT_EQ(r.cross_cpu, 1u);
  EXPECT_DOUBLE_EQ(phase(r, "waking", "wakeup")->summary.median, 56133.0 - 39101);
  EXPECT_DOUBLE_EQ(phase(r, "wakeup", "IPI entry")->summary.median, 74911.0 - 56133);
  EXPECT_DOUBLE_EQ(phase(r, "IPI entry", "IPI exit")->summary.median, 75882.0 - 74911);
  EXPECT_DOUBLE_EQ(phase(r, "IPI exit", "switch")->summary.median, 76900.0 - 75882);
  EXPECT_DOUBLE_EQ(phase(r, "switch", "call exit")->summary.median, 78100.0 - 76900);
  // The waker's own switch-out on CPU 0 is not a mark of this chain.
  EXPECT_EQ(phase(r, "wakeup", "switch"), nullptr);
}

// By hand, in the kernel's order for an idle target woken through the
// wake list: IPI, the wake-up inside it, idle exit, switch from idle (pid 0).
TEST(Phases, CrossCpuWakeOfAnIdleTarget) {
  const std::vector<TraceEvent> events = with_fork(
      {
          {100, 0, 50, K::sys_enter, 202, 0},
          {400, 0, 50, K::waking, 51, 1},
          {2400, 1, 0, K::ipi_entry, 0, 0},
          {2600, 1, 0, K::wakeup, 51, 1},
          {2700, 1, 0, K::ipi_exit, 0, 0},
          {3000, 1, 0, K::cpu_idle, ctx::idle_exit_state, 1},
          {3500, 1, 0, K::sched_switch, 0, 51},
          {4100, 1, 51, K::sys_exit, 202, 0},
          {4600, 0, 99, K::sys_enter, 1, 0},  // another task's events never join a chain
          {4800, 1, 51, K::sys_enter, 202, 0},
          {5000, 1, 51, K::waking, 50, 0},
      },
      50, 51);
  const PhaseReport r = analyze_switches(events, 50);
  EXPECT_EQ(r.matched, 1u);
  EXPECT_EQ(r.woken, 2u);
  EXPECT_DOUBLE_EQ(phase(r, "waking", "IPI entry")->summary.median, 2000);
  EXPECT_DOUBLE_EQ(phase(r, "IPI entry", "wakeup")->summary.median, 200);
  EXPECT_DOUBLE_EQ(phase(r, "wakeup", "IPI exit")->summary.median, 100);
  EXPECT_DOUBLE_EQ(phase(r, "IPI exit", "idle exit")->summary.median, 300);
  EXPECT_DOUBLE_EQ(phase(r, "idle exit", "switch")->summary.median, 500);
  EXPECT_DOUBLE_EQ(phase(r, "call exit", "next call")->summary.median, 700);
  EXPECT_DOUBLE_EQ(r.period->median, 4800.0 - 100);
}

TEST(Phases, WokenBeforeItSleptIsNotASwitch) {
  const std::vector<TraceEvent> events = with_fork(
      {
          {100, 0, 50, K::sys_enter, 202, 0},
          {200, 0, 50, K::waking, 51, 1},
          {300, 1, 50, K::wakeup, 51, 1},
          {400, 1, 51, K::sys_exit, 202, 0},  // 51 never left its CPU
      },
      50, 51);
  const PhaseReport r = analyze_switches(events, 50);
  EXPECT_EQ(r.woken, 1u);
  EXPECT_EQ(r.without_switch, 1u);
  EXPECT_EQ(r.matched, 0u);
  EXPECT_TRUE(r.phases.empty());
}

TEST(Phases, OnlyTheSeedAndItsDescendantsCount) {
  const std::vector<TraceEvent> events = {
      {10, 0, 7, K::fork, 7, 8},   // 8 is a child of the seed
      {20, 0, 9, K::fork, 9, 10},  // 10 is not
      {30, 0, 8, K::fork, 8, 11},  // a grandchild is
  };
  EXPECT_EQ(ctx::variant_tasks(events, 7), (std::set<int>{7, 8, 11}));
  // A wake between two tasks that are not the variant's makes no chain.
  const std::vector<TraceEvent> foreign = {
      {100, 0, 9, K::sys_enter, 202, 0},
      {200, 0, 9, K::waking, 10, 0},
      {300, 0, 9, K::sched_switch, 9, 10},
      {400, 0, 10, K::sys_exit, 202, 0},
  };
  const PhaseReport r = analyze_switches(foreign, 7);
  EXPECT_EQ(r.woken, 0u);
  EXPECT_EQ(r.matched, 0u);
}

TEST(Phases, YieldSwitchesHaveNoWakeUp) {
  // Two tasks yielding to each other on one CPU.
  const std::vector<TraceEvent> events = with_fork(
      {
          {100, 0, 50, K::sys_enter, 24, 0},
          {300, 0, 50, K::sched_switch, 50, 51},
          {500, 0, 51, K::sys_exit, 24, 0},
          {700, 0, 51, K::sys_enter, 24, 0},
          {900, 0, 51, K::sched_switch, 51, 50},
          {1100, 0, 50, K::sys_exit, 24, 0},
          {1300, 0, 50, K::sys_enter, 24, 0},
      },
      50, 51);
  const PhaseReport r = analyze_switches(events, 50);
  EXPECT_EQ(r.matched, 2u);
  EXPECT_EQ(r.direct, 2u);
  EXPECT_EQ(r.woken, 0u);
  EXPECT_EQ(phase(r, "call entry", "switch")->count, 2u);
  EXPECT_DOUBLE_EQ(phase(r, "switch", "call exit")->summary.median, 200);
  EXPECT_DOUBLE_EQ(phase(r, "call exit", "next call")->summary.median, 200);
  EXPECT_DOUBLE_EQ(r.period->median, 600);
}

// ---- the tiling: the phases over the traced run's timed batches ----------

const ctx::TiledPhase* tiled(const PhaseReport& r, const std::string& from, const std::string& to) {
  if (!r.tiling) return nullptr;
  const auto& phases = r.tiling->phases;
  const auto it = std::find_if(phases.begin(), phases.end(),
                               [&](const ctx::TiledPhase& p) { return p.from == from && p.to == to; });
  return it == phases.end() ? nullptr : &*it;
}

double shares(const PhaseReport& r) {
  double sum = 0;
  for (const auto& p : r.tiling->phases) sum += p.share;
  return sum;
}

// The three chains of the recorded same-CPU stream follow each other (each
// ends at the call entry that starts the next): over a batch from the first
// call entry to the last call exit they cover every instant.
TEST(Tiling, ChainsThatFollowEachOtherCoverTheBatch) {
  const PhaseReport r = analyze_switches(same_cpu, 31807, std::nullopt, {{10, 6240, 3}});
  ASSERT_TRUE(r.tiling.has_value());
  const ctx::Tiling& t = *r.tiling;
  EXPECT_EQ(t.batches, 1u);
  EXPECT_DOUBLE_EQ(t.batch_ns, 6230);
  EXPECT_DOUBLE_EQ(t.traced_per_switch_ns, 6230.0 / 3);
  EXPECT_DOUBLE_EQ(t.covered_share, 1.0);
  EXPECT_DOUBLE_EQ(shares(r), 1.0);
  EXPECT_DOUBLE_EQ(t.overlap_ns, 0);
  EXPECT_EQ(t.chains, 3u);
  // call entry -> waking: 314 ns in the first chain, 310 in the third.
  EXPECT_DOUBLE_EQ(tiled(r, "call entry", "waking")->per_switch_ns, (314.0 + 310) / 3);
  EXPECT_DOUBLE_EQ(tiled(r, "call entry", "waking")->share, (314.0 + 310) / 6230);
  // The straight-back switch: 31807's read to the switch, then 31814 in user mode to its write.
  EXPECT_DOUBLE_EQ(tiled(r, "call entry", "switch")->per_switch_ns, (3398.0 - 2858) / 3);
  EXPECT_DOUBLE_EQ(tiled(r, "switch", "next call")->per_switch_ns, (4540.0 - 3398) / 3);
}

// Time of the batch outside every chain is not attributed, and a batch that
// starts or ends inside a phase takes only its part of it.
TEST(Tiling, TimeOutsideTheChainsIsLeftAndBatchesCutPhases) {
  // 0..10 is before any event; after the last chain's call exit (6240) 31807
  // is on the CPU until its last event (6662): a task of the variant ran.
  const PhaseReport wide = analyze_switches(same_cpu, 31807, std::nullopt, {{0, 7000, 3}});
  EXPECT_DOUBLE_EQ(wide.tiling->covered_share, (6230.0 + 6662 - 6240) / 7000);
  EXPECT_DOUBLE_EQ(tiled(wide, "between switches", "a task of the variant ran")->share, (6662.0 - 6240) / 7000);
  // Two batches, the first ending inside waking -> wakeup, the second starting inside call exit -> next call.
  const PhaseReport cut = analyze_switches(same_cpu, 31807, std::nullopt, {{0, 500, 1}, {2000, 3000, 1}});
  EXPECT_DOUBLE_EQ(cut.tiling->batch_ns, 1500);
  EXPECT_DOUBLE_EQ(cut.tiling->switches, 2);
  EXPECT_DOUBLE_EQ(tiled(cut, "waking", "wakeup")->per_switch_ns, (500.0 - 324) / 2);
  EXPECT_DOUBLE_EQ(tiled(cut, "call exit", "next call")->per_switch_ns, (2858.0 - 2000) / 2);
  EXPECT_DOUBLE_EQ(tiled(cut, "call entry", "switch")->per_switch_ns, (3000.0 - 2858) / 2);
  EXPECT_EQ(tiled(cut, "wakeup", "switch"), nullptr);  // 794..1357 lies between the batches
  EXPECT_DOUBLE_EQ(cut.tiling->covered_share, (500.0 - 10 + 1000) / 1500);
}

// The events of one switch lost (31807's switch back to 31814): its chain
// is never started, the chain before it has no next call, and the time
// between them is left to the rest: a large share, not spread over the phases.
TEST(Tiling, AMissingSwitchLeavesItsTimeUnattributed) {
  std::vector<TraceEvent> lost = same_cpu;
  std::erase_if(lost, [](const TraceEvent& e) { return e.ts == 3398; });
  const PhaseReport r = analyze_switches(lost, 31807, std::nullopt, {{10, 6240, 3}});
  // Covered: the first chain 10..1807 (to its call exit), the last 4540..6240.
  EXPECT_DOUBLE_EQ(r.tiling->covered_share, ((1807.0 - 10) + (6240 - 4540)) / 6230);
  EXPECT_LT(r.tiling->covered_share, 0.6);
  EXPECT_NEAR(shares(r), r.tiling->covered_share, 1e-12);
}

// Two ping-pongs at once (four tasks on three CPUs): their chains overlap in
// time, which the chain of one ping-pong never does; the overlap is counted
// once and said, so the shares never sum past the batch.
TEST(Tiling, OverlappingChainsAreCountedOnce) {
  const std::vector<TraceEvent> events = {
      {0, 0, 50, K::fork, 50, 51},         {0, 0, 50, K::fork, 50, 52},         {0, 0, 50, K::fork, 50, 53},
      {100, 0, 50, K::sys_enter, 1, 0},    {150, 2, 52, K::sys_enter, 1, 0},    {200, 0, 50, K::waking, 51, 0},
      {250, 2, 52, K::waking, 53, 0},      {260, 2, 52, K::wakeup, 53, 0},      {270, 0, 50, K::wakeup, 51, 0},
      {300, 1, 0, K::sched_switch, 0, 51}, {350, 3, 0, K::sched_switch, 0, 53}, {400, 1, 51, K::sys_exit, 0, 0},
      {450, 3, 53, K::sys_exit, 0, 0},     {650, 3, 53, K::sys_enter, 1, 0},    {700, 3, 53, K::waking, 52, 0},
      {900, 1, 51, K::sys_enter, 1, 0},    {950, 1, 51, K::waking, 50, 0},
  };
  const PhaseReport r = analyze_switches(events, 50, std::nullopt, {{100, 1000, 2}});
  EXPECT_EQ(r.matched, 2u);
  // 51's chain covers 100..900, 53's 150..650 lies inside it; after it, 51
  // is on CPU 1 up to that CPU's last event (950).
  EXPECT_DOUBLE_EQ(r.tiling->overlap_ns, 650.0 - 150);
  EXPECT_DOUBLE_EQ(r.tiling->covered_share, (800.0 + 50) / 900);
  EXPECT_LE(shares(r), 1.0);
  for (const auto& p : r.tiling->phases) EXPECT_GE(p.share, 0.0);
}

// A task woken before it slept makes no switch, but its chain is part of the
// ping-pong's time: in the tiling, not among the switches followed.
TEST(Tiling, AWakeUpWithoutASwitchIsTiledToo) {
  const std::vector<TraceEvent> events = with_fork(
      {
          {100, 0, 50, K::sys_enter, 202, 0},
          {200, 0, 50, K::waking, 51, 1},
          {300, 1, 50, K::wakeup, 51, 1},
          {400, 1, 51, K::sys_exit, 202, 0},
          {500, 1, 51, K::sys_enter, 202, 0},
          {550, 1, 51, K::waking, 50, 0},
      },
      50, 51);
  const PhaseReport r = analyze_switches(events, 50, std::nullopt, {{100, 500, 1}});
  EXPECT_EQ(r.matched, 0u);
  EXPECT_EQ(r.without_switch, 1u);
  EXPECT_TRUE(r.phases.empty());
  EXPECT_DOUBLE_EQ(r.tiling->covered_share, 1.0);
  EXPECT_DOUBLE_EQ(tiled(r, "wakeup", "call exit")->share, 0.25);
}

// Across CPUs the chain goes from the waker's CPU to the wakee's, on one
// clock: the interrupt and the switch on CPU 1 are phases of the same tiling.
TEST(Tiling, ACrossCpuChainTilesOverBothCpus) {
  const std::vector<TraceEvent> events = with_fork(
      {
          {10, 0, 31910, K::sys_enter, 1, 0},
          {39101, 0, 31910, K::waking, 31926, 1},
          {56133, 0, 31910, K::wakeup, 31926, 1},
          {57782, 0, 31910, K::sys_exit, 1, 0},
          {74911, 1, 31908, K::ipi_entry, 0, 0},
          {75882, 1, 31908, K::ipi_exit, 0, 0},
          {76900, 1, 31908, K::sched_switch, 31908, 31926},
          {78100, 1, 31926, K::sys_exit, 0, 0},
      },
      31910, 31926);
  const PhaseReport r = analyze_switches(events, 31910, std::nullopt, {{10, 78100, 1}});
  EXPECT_DOUBLE_EQ(r.tiling->covered_share, 1.0);
  EXPECT_DOUBLE_EQ(tiled(r, "wakeup", "IPI entry")->per_switch_ns, 74911.0 - 56133);
  EXPECT_DOUBLE_EQ(tiled(r, "IPI exit", "switch")->share, (76900.0 - 75882) / (78100 - 10));
}

// The figure is a median of samples, so the tiling is the median sample's:
// a sample that another task's long run stretched is not tiled, nor is the
// fastest.
TEST(Tiling, TheMedianSampleIsTiled) {
  // 1 switch each: 10..1000 (990 ns), 1000..4000 (3000 ns, stretched), 4000..6240 (2240 ns).
  const PhaseReport r =
      analyze_switches(same_cpu, 31807, std::nullopt, {{10, 1000, 1}, {1000, 4000, 1}, {4000, 6240, 1}});
  EXPECT_EQ(r.tiling->samples, 3u);
  EXPECT_EQ(r.tiling->batches, 1u);
  EXPECT_DOUBLE_EQ(r.tiling->traced_per_switch_ns, 2240);
  EXPECT_DOUBLE_EQ(r.tiling->covered_share, 1.0);
  EXPECT_EQ(tiled(r, "call entry", "switch"), nullptr);  // 2858..3398 is in the stretched sample
  // An even count: the middle two together.
  const PhaseReport even = analyze_switches(same_cpu, 31807, std::nullopt,
                                            {{10, 1000, 1}, {1000, 4000, 1}, {4000, 6240, 1}, {6300, 6400, 1}});
  EXPECT_EQ(even.tiling->batches, 2u);
  EXPECT_DOUBLE_EQ(even.tiling->traced_per_switch_ns, (990.0 + 2240) / 2);
}

// Recorded (pipe between processes on one CPU, under other sessions' load):
// 9356 blocks in its read and the CPU goes to another session's task (6519)
// for 2.37 ms before 9347, runnable, gets it back. The hand-over is a chain
// through other work: call entry, other task, switch.
const std::vector<TraceEvent> via_other_task = with_fork(
    {
        {490076, 0, 9356, K::sys_exit, 0, 0},
        {490355, 0, 9356, K::sys_enter, 1, 0},
        {490661, 0, 9356, K::waking, 9347, 0},
        {491074, 0, 9356, K::wakeup, 9347, 0},
        {491326, 0, 9356, K::sys_exit, 1, 0},
        {491610, 0, 9356, K::sys_enter, 0, 0},
        {492094, 0, 9356, K::sched_switch, 9356, 9347},
        {492787, 0, 9347, K::sys_exit, 0, 0},
        {493250, 0, 9347, K::sys_enter, 1, 0},
        {493605, 0, 9347, K::waking, 9356, 0},
        {493981, 0, 9347, K::wakeup, 9356, 0},
        {494230, 0, 9347, K::sys_exit, 1, 0},
        {494541, 0, 9347, K::sched_switch, 9347, 9356},
        {495247, 0, 9356, K::sys_exit, 0, 0},
        {495716, 0, 9356, K::sys_enter, 1, 0},
        {496025, 0, 9356, K::sys_exit, 1, 0},
        {496341, 0, 9356, K::sys_enter, 0, 0},
        {497720, 0, 9356, K::sched_switch, 9356, 6519},
        {2868726, 0, 6519, K::sched_switch, 6519, 9347},
        {2872127, 0, 9347, K::sys_enter, 0, 0},
        {2873257, 0, 9347, K::sys_exit, 0, 0},
        {2873588, 0, 9347, K::sys_enter, 1, 0},
        {2874284, 0, 9347, K::waking, 9356, 0},
    },
    9347, 9356);

TEST(Tiling, AHandOverThroughAnotherTaskIsAChainWithItsOtherWork) {
  const PhaseReport r = analyze_switches(via_other_task, 9347, std::nullopt, {{490355, 2873588, 3}});
  EXPECT_EQ(r.direct, 1u);
  EXPECT_DOUBLE_EQ(phase(r, "call entry", "other task")->summary.median, 497720.0 - 496341);
  EXPECT_DOUBLE_EQ(phase(r, "other task", "switch")->summary.median, 2868726.0 - 497720);
  // 9347 was preempted in user mode: from the switch to its next call.
  EXPECT_DOUBLE_EQ(phase(r, "switch", "next call")->summary.median, 2873588.0 - 2868726);
  EXPECT_DOUBLE_EQ(r.tiling->covered_share, 1.0);
  EXPECT_DOUBLE_EQ(tiled(r, "other task", "switch")->share, (2868726.0 - 497720) / (2873588 - 490355));
  // Without the mark the same stream left a gap of 2.38 ms: the chain before
  // ended at 9356's call exit, the next began at 9347's write.
}

// A woken task whose CPU goes to other work first: the waker blocks, another
// task runs, then the wakee.
TEST(Tiling, AWokenTaskBehindOtherWorkHasTheOtherTaskMark) {
  const std::vector<TraceEvent> events = with_fork(
      {
          {100, 0, 50, K::sys_enter, 1, 0},
          {200, 0, 50, K::waking, 51, 0},
          {300, 0, 50, K::wakeup, 51, 0},
          {400, 0, 50, K::sys_exit, 1, 0},
          {500, 0, 50, K::sys_enter, 0, 0},
          {600, 0, 50, K::sched_switch, 50, 77},
          {5600, 0, 77, K::sched_switch, 77, 51},
          {5900, 0, 51, K::sys_exit, 0, 0},
          {6000, 0, 51, K::sys_enter, 1, 0},
          {6100, 0, 51, K::waking, 50, 0},
      },
      50, 51);
  const PhaseReport r = analyze_switches(events, 50, std::nullopt, {{100, 6000, 1}});
  EXPECT_EQ(r.matched, 1u);
  EXPECT_DOUBLE_EQ(phase(r, "wakeup", "other task")->summary.median, 300);
  EXPECT_DOUBLE_EQ(phase(r, "other task", "switch")->summary.median, 5000);
  EXPECT_DOUBLE_EQ(r.tiling->covered_share, 1.0);
}

// A hand-over with no wake-up at all: 50 writes while 51 is still running
// (no waking), 51 reads the data without sleeping. No chain marks it; the
// time one of the variant's tasks was on a CPU between chains is its own
// phase, and the time neither was (both switched out: a wake-up the events
// missed) is left.
TEST(Tiling, BetweenChainsTheVariantRunningIsAttributedAndNothingElse) {
  const std::vector<TraceEvent> events = with_fork(
      {
          {50, 0, 0, K::sched_switch, 0, 50},
          {60, 1, 0, K::sched_switch, 0, 51},
          {100, 0, 50, K::sys_enter, 1, 0},
          {200, 0, 50, K::waking, 51, 1},
          {250, 1, 50, K::wakeup, 51, 1},
          {300, 1, 51, K::sys_exit, 0, 0},  // woken before it slept: the first chain ends here
          {320, 0, 50, K::sched_switch, 50, 0},
          {350, 1, 51, K::sched_switch, 51, 0},
          {450, 0, 0, K::sched_switch, 0, 50},  // no wake-up of 50 recorded
          {600, 0, 50, K::sys_enter, 1, 0},
          {650, 0, 50, K::waking, 51, 1},
          {660, 1, 50, K::wakeup, 51, 1},
          {700, 1, 51, K::sys_exit, 0, 0},
      },
      50, 51);
  const PhaseReport r = analyze_switches(events, 50, std::nullopt, {{100, 700, 2}});
  // Chains 100..300 and 600..700; 300..350 both ran, 450..600 50 ran; 350..450 neither.
  EXPECT_DOUBLE_EQ(tiled(r, "between switches", "a task of the variant ran")->per_switch_ns, (50.0 + 150) / 2);
  EXPECT_DOUBLE_EQ(r.tiling->covered_share, (200.0 + 200 + 100) / 600);
}

TEST(Tiling, NoBatchesNoTiling) { EXPECT_FALSE(analyze_switches(same_cpu, 31807).tiling.has_value()); }

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
