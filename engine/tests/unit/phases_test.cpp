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

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
