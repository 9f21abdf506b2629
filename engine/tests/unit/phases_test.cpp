// Phases of a switch on event sequences with known timestamps. The same-CPU
// and cross-CPU sequences were cut from real traced passes on this project's
// 2-vCPU KVM guest (CTXBENCH_TRACE_EVENTS, docs/tracing.md): switch.pipe
// between threads, timestamps made relative to the first event. The idle
// exit sequence is written by hand in the kernel's order, because that
// loaded machine never let a CPU go idle during a recording.
#include "trace/phases.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "measure/traced_pass.hpp"

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

// System calls by their x86-64 numbers, as the recorded events carry them.
enum Syscall : std::int64_t { read_call = 0, write_call = 1, yield_call = 24, futex_call = 202 };

// Writes an event stream as the kernel records one: each event is on a CPU,
// by the task running there. on(cpu, task) says which task runs on a CPU
// (where an excerpt starts, or where an event fires in another task's
// context) and makes it the CPU the next events are on; switch_to hands the
// CPU to the next task, whose events follow. A fork is the parent's, on CPU 0.
class Events {
 public:
  Events& fork(std::uint64_t ts, int parent, int child) { return add({ts, 0, parent, K::fork, parent, child}); }
  Events& on(int cpu, int task) {
    running_[cpu] = task;
    return on(cpu);
  }
  Events& on(int cpu) {
    cpu_ = cpu;
    return *this;
  }
  Events& enter(std::uint64_t ts, Syscall call) { return here(ts, K::sys_enter, call); }
  Events& exit(std::uint64_t ts, Syscall call) { return here(ts, K::sys_exit, call); }
  // A wake-up of `task`, whose CPU is `task_cpu` (this one when not given).
  Events& waking(std::uint64_t ts, int task, int task_cpu = -1) {
    return here(ts, K::waking, task, task_cpu < 0 ? cpu_ : task_cpu);
  }
  Events& wakeup(std::uint64_t ts, int task, int task_cpu = -1) {
    return here(ts, K::wakeup, task, task_cpu < 0 ? cpu_ : task_cpu);
  }
  Events& switch_to(std::uint64_t ts, int next) {
    here(ts, K::sched_switch, running_.at(cpu_), next);
    running_[cpu_] = next;
    return *this;
  }
  Events& ipi_entry(std::uint64_t ts) { return here(ts, K::ipi_entry); }
  Events& ipi_exit(std::uint64_t ts) { return here(ts, K::ipi_exit); }
  Events& idle_exit(std::uint64_t ts) { return here(ts, K::cpu_idle, ctx::idle_exit_state, cpu_); }
  operator std::vector<TraceEvent>() const { return events_; }

 private:
  Events& here(std::uint64_t ts, K kind, std::int64_t a = 0, std::int64_t b = 0) {
    return add({ts, cpu_, running_.at(cpu_), kind, a, b});
  }
  Events& add(TraceEvent event) {
    events_.push_back(event);
    return *this;
  }
  std::map<int, int> running_;  // CPU -> the task on it
  int cpu_ = 0;
  std::vector<TraceEvent> events_;
};

// The builder writes what a recorded excerpt holds: the events, in order,
// each with its CPU and task.
TEST(Phases, TheEventBuilderWritesTheKernelsRecords) {
  const std::vector<TraceEvent> built = Events()
                                            .fork(0, 7, 8)
                                            .on(0, 8)
                                            .enter(10, write_call)
                                            .waking(20, 7, 1)
                                            .switch_to(30, 0)
                                            .on(1, 7)
                                            .exit(40, read_call);
  const std::vector<TraceEvent> written = {
      {0, 0, 7, K::fork, 7, 8},          {10, 0, 8, K::sys_enter, 1, 0}, {20, 0, 8, K::waking, 7, 1},
      {30, 0, 8, K::sched_switch, 8, 0}, {40, 1, 7, K::sys_exit, 0, 0},
  };
  ASSERT_EQ(built.size(), written.size());
  for (std::size_t i = 0; i < built.size(); ++i) {
    EXPECT_EQ(built[i].ts, written[i].ts) << i;
    EXPECT_EQ(built[i].cpu, written[i].cpu) << i;
    EXPECT_EQ(built[i].tid, written[i].tid) << i;
    EXPECT_EQ(built[i].kind, written[i].kind) << i;
    EXPECT_EQ(built[i].a, written[i].a) << i;
    EXPECT_EQ(built[i].b, written[i].b) << i;
  }
}

// Recorded: pipe ping-pong on CPU 0, SCHED_OTHER. 31814 writes and wakes
// 31807, is preempted on its way back to user mode; 31807's write wakes
// nobody (31814 is runnable), its read blocks and gives the CPU straight
// back to 31814, which resumes in user mode and writes again.
const std::vector<TraceEvent> same_cpu = [] {
  Events events;
  events.fork(0, 31807, 31814);
  events.on(0, 31814)
      .enter(10, write_call)
      .waking(324, 31807)
      .wakeup(794, 31807)
      .exit(1016, write_call)
      .switch_to(1357, 31807);
  events.exit(1807, read_call)
      .enter(2240, write_call)
      .exit(2550, write_call)
      .enter(2858, read_call)
      .switch_to(3398, 31814);
  events.enter(3987, read_call)
      .exit(4262, read_call)
      .enter(4540, write_call)
      .waking(4850, 31807)
      .wakeup(5228, 31807)
      .exit(5449, write_call)
      .switch_to(5794, 31807);
  events.exit(6240, read_call).enter(6662, write_call);
  return events;
}();

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
  Events events;
  events.fork(0, 31910, 31926);
  events.on(0, 31910)
      .enter(10, write_call)
      .waking(39101, 31926, 1)
      .wakeup(56133, 31926, 1)
      .exit(57782, write_call)
      .enter(58100, read_call)
      .switch_to(59269, 31759);
  events.on(1, 31908).ipi_entry(74911).ipi_exit(75882).switch_to(76900, 31926);
  events.exit(78100, read_call).enter(78700, write_call);
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
  Events events;
  events.fork(0, 50, 51);
  events.on(0, 50).enter(100, futex_call).waking(400, 51, 1);
  events.on(1, 0).ipi_entry(2400).wakeup(2600, 51).ipi_exit(2700).idle_exit(3000).switch_to(3500, 51);
  events.exit(4100, futex_call);
  events.on(0, 99).enter(4600, write_call);  // another task's events never join a chain
  events.on(1).enter(4800, futex_call).waking(5000, 50, 0);
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
  Events events;
  events.fork(0, 50, 51);
  events.on(0, 50).enter(100, futex_call).waking(200, 51, 1);
  events.on(1, 50).wakeup(300, 51);
  events.on(1, 51).exit(400, futex_call);  // 51 never left its CPU
  const PhaseReport r = analyze_switches(events, 50);
  EXPECT_EQ(r.woken, 1u);
  EXPECT_EQ(r.without_switch, 1u);
  EXPECT_EQ(r.matched, 0u);
  EXPECT_TRUE(r.phases.empty());
}

TEST(Phases, OnlyTheSeedAndItsDescendantsCount) {
  Events events;
  events.fork(10, 7, 8);   // 8 is a child of the seed
  events.fork(20, 9, 10);  // 10 is not
  events.fork(30, 8, 11);  // a grandchild is
  EXPECT_EQ(ctx::variant_tasks(events, 7), (std::set<int>{7, 8, 11}));
  // A wake between two tasks that are not the variant's makes no chain.
  Events foreign;
  foreign.on(0, 9).enter(100, futex_call).waking(200, 10).switch_to(300, 10);
  foreign.exit(400, futex_call);
  const PhaseReport r = analyze_switches(foreign, 7);
  EXPECT_EQ(r.woken, 0u);
  EXPECT_EQ(r.matched, 0u);
}

TEST(Phases, YieldSwitchesHaveNoWakeUp) {
  // Two tasks yielding to each other on one CPU.
  Events events;
  events.fork(0, 50, 51);
  events.on(0, 50).enter(100, yield_call).switch_to(300, 51);
  events.exit(500, yield_call).enter(700, yield_call).switch_to(900, 50);
  events.exit(1100, yield_call).enter(1300, yield_call);
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
  Events events;
  events.fork(0, 50, 51);
  events.fork(0, 50, 52);
  events.fork(0, 50, 53);
  events.on(0, 50).enter(100, write_call);
  events.on(2, 52).enter(150, write_call);
  events.on(0).waking(200, 51);
  events.on(2).waking(250, 53, 0).wakeup(260, 53, 0);
  events.on(0).wakeup(270, 51);
  events.on(1, 0).switch_to(300, 51);
  events.on(3, 0).switch_to(350, 53);
  events.on(1).exit(400, read_call);
  events.on(3).exit(450, read_call).enter(650, write_call).waking(700, 52, 0);
  events.on(1).enter(900, write_call).waking(950, 50, 0);
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
  Events events;
  events.fork(0, 50, 51);
  events.on(0, 50).enter(100, futex_call).waking(200, 51, 1);
  events.on(1, 50).wakeup(300, 51);
  events.on(1, 51).exit(400, futex_call).enter(500, futex_call).waking(550, 50, 0);
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
  Events events;
  events.fork(0, 31910, 31926);
  events.on(0, 31910).enter(10, write_call).waking(39101, 31926, 1).wakeup(56133, 31926, 1).exit(57782, write_call);
  events.on(1, 31908).ipi_entry(74911).ipi_exit(75882).switch_to(76900, 31926);
  events.exit(78100, read_call);
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
const std::vector<TraceEvent> via_other_task = [] {
  Events events;
  events.fork(0, 9347, 9356);
  events.on(0, 9356)
      .exit(490076, read_call)
      .enter(490355, write_call)
      .waking(490661, 9347)
      .wakeup(491074, 9347)
      .exit(491326, write_call)
      .enter(491610, read_call)
      .switch_to(492094, 9347);
  events.exit(492787, read_call)
      .enter(493250, write_call)
      .waking(493605, 9356)
      .wakeup(493981, 9356)
      .exit(494230, write_call)
      .switch_to(494541, 9356);
  events.exit(495247, read_call)
      .enter(495716, write_call)
      .exit(496025, write_call)
      .enter(496341, read_call)
      .switch_to(497720, 6519);
  events.switch_to(2868726, 9347);
  events.enter(2872127, read_call).exit(2873257, read_call).enter(2873588, write_call).waking(2874284, 9356);
  return events;
}();

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
  Events events;
  events.fork(0, 50, 51);
  events.on(0, 50)
      .enter(100, write_call)
      .waking(200, 51)
      .wakeup(300, 51)
      .exit(400, write_call)
      .enter(500, read_call)
      .switch_to(600, 77);
  events.switch_to(5600, 51);
  events.exit(5900, read_call).enter(6000, write_call).waking(6100, 50);
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
  Events events;
  events.fork(0, 50, 51);
  events.on(0, 0).switch_to(50, 50);
  events.on(1, 0).switch_to(60, 51);
  events.on(0).enter(100, write_call).waking(200, 51, 1);
  events.on(1, 50).wakeup(250, 51);
  events.on(1, 51).exit(300, read_call);  // woken before it slept: the first chain ends here
  events.on(0).switch_to(320, 0);
  events.on(1).switch_to(350, 0);
  events.on(0).switch_to(450, 50);  // no wake-up of 50 recorded
  events.enter(600, write_call).waking(650, 51, 1);
  events.on(1, 50).wakeup(660, 51);
  events.on(1, 51).exit(700, read_call);
  const PhaseReport r = analyze_switches(events, 50, std::nullopt, {{100, 700, 2}});
  // Chains 100..300 and 600..700; 300..350 both ran, 450..600 50 ran; 350..450 neither.
  EXPECT_DOUBLE_EQ(tiled(r, "between switches", "a task of the variant ran")->per_switch_ns, (50.0 + 150) / 2);
  EXPECT_DOUBLE_EQ(r.tiling->covered_share, (200.0 + 200 + 100) / 600);
}

TEST(Tiling, NoBatchesNoTiling) { EXPECT_FALSE(analyze_switches(same_cpu, 31807).tiling.has_value()); }

// power:cpu_idle opened but silent while the CPUs went idle (switches to
// pid 0): on this project's guest it never fires for one CPU, and the record
// must say the pass could not see idle exits rather than imply none came.
TEST(SilentIdleEvents, AnOpenedIdleEventThatNeverFiredIsNamed) {
  const std::vector<TraceEvent> went_idle = {
      {1000, 0, 10, K::sched_switch, 10, 0}, {2000, 0, 0, K::waking, 11, 0}, {3000, 1, 12, K::sched_switch, 12, 0}};
  const auto missing = ctx::silent_idle_events({}, went_idle);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0], "power:cpu_idle (opened, never fired, though the CPUs went idle 2 times)");
}

TEST(SilentIdleEvents, IdleEventsSeenOrNeverOpenedOrNoIdleAddNothing) {
  const std::vector<TraceEvent> with_idle = {{1000, 0, 10, K::sched_switch, 10, 0}, {1500, 0, 0, K::cpu_idle, 1, 0}};
  EXPECT_TRUE(ctx::silent_idle_events({}, with_idle).empty());
  // Not opened: it is already named as missing, once.
  const std::vector<TraceEvent> went_idle = {{1000, 0, 10, K::sched_switch, 10, 0}};
  EXPECT_EQ(ctx::silent_idle_events({"power:cpu_idle"}, went_idle), std::vector<std::string>{"power:cpu_idle"});
  // Never idle: silence says nothing.
  const std::vector<TraceEvent> busy = {{1000, 0, 10, K::sched_switch, 10, 11}};
  EXPECT_TRUE(ctx::silent_idle_events({}, busy).empty());
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
