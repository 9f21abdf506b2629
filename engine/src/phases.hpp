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
//   switch       sched_switch to the wakee
//   call exit    sys_exit of the wakee's call that slept
//   next call    call entry of the next switch the wakee starts
//
// A switch to a task that needs no wake-up (it is runnable: it yielded, or
// it was preempted after an earlier wake-up) starts at the entry of the call
// in which the task before it gave up the CPU and goes straight to the
// switch. A task that was preempted in user mode (switched out outside a
// call) returns to user mode at the switch: its chain has no call exit. A
// phase is the time between two consecutive marks of one chain;
// the chain from call entry to next call covers the switch's whole period,
// so the phases partition it. Only the variant's tasks count: the task that
// started the trace and every task forked or cloned from it while traced
// (sched_process_fork).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "stats.hpp"

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
inline constexpr const char* mark_names[] = {"call entry", "waking",    "IPI entry", "poll wake", "wakeup",
                                             "IPI exit",   "idle exit", "switch",    "call exit", "next call"};

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
};

// The tasks that belong to the variant: `seed` and its descendants.
std::set<int> variant_tasks(const std::vector<TraceEvent>& events, int seed);

// Events must be in time order (ties in any order). With `event_cost_ns`
// (the measured cost of recording one event) each phase is also given less
// the cost of the events recorded inside it, from its typical figure.
PhaseReport analyze_switches(const std::vector<TraceEvent>& events, int seed,
                             std::optional<double> event_cost_ns = std::nullopt);

}  // namespace ctx
