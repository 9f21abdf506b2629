// Phases of a switch, from the kernel's own events. Pure: a time-ordered
// stream of tracepoint events in, one chain of marks per switch and each
// phase's distribution out, so it is tested on recorded event sequences.
//
// A switch is the chain that hands the CPU from one of the variant's tasks
// (the waker) to another (the wakee), marked by events in time order:
//
//   call entry   sys_enter of the waker's call that wakes the wakee
//   waking       sched_waking of the wakee, in that call
//   IPI entry    cross-CPU: reschedule or call-function-single interrupt on the
//   IPI exit       wakee's CPU (the remote wake-up), where one came
//   poll wake    cross-CPU: sched_wake_idle_without_ipi (the idle target polls)
//   wakeup       sched_wakeup of the wakee (on the run queue)
//   idle exit    cross-CPU: power:cpu_idle exit on the wakee's CPU
//   other task   the wakee's CPU given, after the waking, to a task that is
//                  not the variant's (or to idle) by one of ours inside a call
//   switch       sched_switch to the wakee
//   call exit    sys_exit of the wakee's call that slept
//   next call    call entry of the next switch the wakee starts
//
// A switch to a task that needs no wake-up (it is runnable: it yielded, or
// it was preempted after an earlier wake-up) starts at the entry of the call
// in which the task before it gave up the CPU and goes to the switch,
// straight or through other work (the CPU given to a task not of the
// variant, or to idle: the other task mark). A task that was preempted in user mode (switched out outside a
// call) returns to user mode at the switch: its chain has no call exit. A
// phase is the time between two consecutive marks of one chain;
// the chain from call entry to next call covers the switch's whole period,
// so the phases partition it. A wake-up of a task that had not yet slept
// (no switch) is a chain too, call entry to next call without a switch: it
// is not a switch, but its time is part of the ping-pong.
//
// The tiling: the woken task's next call is the call entry of the next chain,
// so consecutive chains follow each other along the ping-pong's critical path,
// across CPUs (one clock for every CPU). Over the traced run's timed batches
// (their start and end on the events' clock) each instant belongs to the
// phase of the chain that covers it; between chains, to "between switches →
// a task of the variant ran" when one of the variant's tasks was on a CPU
// (a hand-over with no wake-up at all: the data or the futex word was there
// before the partner waited), by the switches that brought it in and took
// it out (a span whose switch-out does not name the task is dropped: an
// event was lost); else to nothing: what the events do not attribute. The
// batches tiled are the median one (the middle two of an even count), the
// traced counterpart of a figure that is a median of samples. Shares of the
// batches' time, so between 0 and 1 and summing to at most 1 by
// construction; chains that overlap (they should not) are counted once, and
// the overlap is said. Only the variant's tasks count: the task that
// started the trace and every task forked or cloned from it while traced
// (sched_process_fork).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/stats.hpp"
#include "os/timer.hpp"

namespace ctx {

enum class TraceKind : std::uint8_t {
  sys_enter,
  sys_exit,
  waking,          // a: woken task
  wakeup,          // a: woken task
  sched_switch,    // a: prev task, b: next task
  wake_idle_poll,  // a: the CPU woken without an IPI
  cpu_idle,        // a: state (idle_exit_state on exit)
  ipi_entry,       // reschedule or call-function-single entry
  ipi_exit,
  fork,  // a: parent task, b: child task
};

inline constexpr std::int64_t idle_exit_state = 0xffffffff;  // PWR_EVENT_EXIT as a u32

struct TraceEvent {
  std::uint64_t ts = 0;  // ns, one clock for every CPU
  int cpu = -1;
  int tid = -1;  // the task running when the event fired
  TraceKind kind = TraceKind::sys_enter;
  std::int64_t a = 0, b = 0;
};

// Mark names, in the order they usually come (ties are broken by it).
// The last two name the tiling's phase between chains, not marks.
inline constexpr const char* mark_names[] = {"call entry",
                                             "waking",
                                             "IPI entry",
                                             "poll wake",
                                             "wakeup",
                                             "IPI exit",
                                             "idle exit",
                                             "other task",
                                             "switch",
                                             "call exit",
                                             "next call",
                                             "between switches",
                                             "a task of the variant ran"};

struct PhaseStat {
  std::string from, to;
  std::size_t count = 0;          // switches that had this phase
  Summary summary;                // of its durations, ns
  double mean_per_switch_ns = 0;  // total time in it / matched switches
  // median x count / matched switches: the phase in a typical switch, robust
  // to the other tasks that ran on a CPU in the middle of a few switches
  double typical_per_switch_ns = 0;
  double events_per_switch = 0;  // events recorded in it (on the CPU where it ends) / matched switches
  // typical_per_switch_ns less the recording cost of those events, when it was measured
  std::optional<double> corrected_per_switch_ns;
};

// A phase's part of the traced run's timed batches.
struct TiledPhase {
  std::string from, to;
  double per_switch_ns = 0;  // its time inside the batches / the batches' operations (switches)
  double share = 0;          // its time inside the batches / the batches' time
};

struct Tiling {
  std::size_t samples = 0;          // the traced run's kept samples (batches) given
  std::size_t batches = 0;          // of them, tiled: the median one, or the middle two of an even count
  double switches = 0;              // the tiled batches' operations, as the harness counted them
  double batch_ns = 0;              // the tiled batches' time, summed
  double traced_per_switch_ns = 0;  // batch_ns / switches: the traced median, before the timer's correction
  double covered_share = 0;         // the tiled time some chain covers / batch_ns (the shares summed)
  double overlap_ns = 0;            // chain time counted once where two chains overlapped
  std::size_t chains = 0;           // chains that reached into a batch
  std::vector<TiledPhase> phases;   // ordered by their marks, as PhaseReport::phases
};

struct PhaseReport {
  std::size_t tasks = 0;                // the variant's tasks seen
  std::size_t woken = 0;                // wake-ups of a task by a task, in a call
  std::size_t matched = 0;              // switches followed from call entry to call exit
  std::size_t direct = 0;               // of them, to a task already runnable: no wake-up (yield, or woken earlier)
  std::size_t cross_cpu = 0;            // of them, the wakee switched in on another CPU than the waker's
  std::size_t without_switch = 0;       // woken while still on its CPU: returned without a switch
  std::optional<Summary> period;        // call entry -> next call, ns
  std::vector<PhaseStat> phases;        // in the order they come
  double attributed_per_switch_ns = 0;  // sum of the phases' mean_per_switch_ns
  double typical_per_switch_ns = 0;     // sum of the phases' typical_per_switch_ns
  std::optional<double> corrected_per_switch_ns;  // sum of their corrected_per_switch_ns
  std::optional<Tiling> tiling;                   // when the traced batches were given
};

// The tasks that belong to the variant: `seed` and its descendants.
std::set<int> variant_tasks(const std::vector<TraceEvent>& events, int seed);

// Events must be in time order (ties in any order). With `event_cost_ns`
// (the measured cost of recording one event) each phase is also given less
// the cost of the events recorded inside it, from its typical figure. With
// `batches` (the traced run's kept samples, readings in ns on the events'
// clock, in time order and disjoint) the report has the tiling.
PhaseReport analyze_switches(const std::vector<TraceEvent>& events, int seed,
                             std::optional<double> event_cost_ns = std::nullopt,
                             const std::vector<TimedBatch>& batches = {});

}  // namespace ctx
