// What `ctxbench-engine profile` asks the kernel for, and what it makes of
// the answers (docs/profile.md).
//
// Two kinds of perf events, every one on the profiled tasks only (their
// children and threads follow: inherit), none on a whole CPU:
//   - counters, read once at the end: the software events context-switches,
//     cpu-migrations, page-faults (minor, major), and the tracepoints
//     raw_syscalls:sys_enter (every system call), sched:sched_process_fork
//     (every thread or process created) and signal:signal_deliver. Counting
//     is exact: the kernel adds one per event, nothing is dropped.
//   - samples of tracepoints, one per event, written to a ring per CPU and
//     drained while the program runs: sys_enter (which call), sched_switch
//     (whether the task left the CPU asleep, a voluntary switch, or still
//     runnable, involuntary), task_newtask (a thread or a process, from
//     clone's flags), all three on the profiled tasks; and sched_waking with
//     sched_migrate_task on every task of each CPU, kept where the woken task
//     is the program's: a tracepoint reaches a task's events only while that
//     task runs, and a sleeping task is woken by another (of the program or
//     not), on the waker's CPU. The waker's CPU is the sample's; the CPU the
//     woken task is put on is sched_waking's target_cpu (where it last ran)
//     unless the wake-up moves it, which sched_migrate_task says at once, on
//     the same CPU. (sched_wakeup would say it too, but a cross-CPU wake-up
//     fires it on the target CPU from an interrupt, in no task of ours.)
//     A full ring drops samples (the record says how many); the counters above
//     stay exact.
// With `in_place` (profile --trace), also perf's context-switch records of
// every CPU (as `perf record --switch-events -a`): what each CPU runs at every
// instant. From it, whether a wake-up found
// its target CPU idle (the CPU's last switch went to pid 0, the idle task)
// and each wake-up's latency in place: from sched_waking, on the waker's CPU,
// to the switch that puts the woken task on a CPU. A wake-up whose
// target CPU has shown no switch yet is counted as neither idle nor busy.
// A tracepoint can reach the same ring twice at one instant (a task's event
// and its parent's); the tally keeps the first of a kind, task and instant.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ctx {

// One sampled tracepoint, as the tally takes it (pure data: tests script it).
enum class ProfileEventKind { sys_enter, sched_switch, waking, migrate, newtask, switch_in, exec };
struct ProfileSample {
  ProfileEventKind kind = ProfileEventKind::sys_enter;
  std::uint64_t time = 0;  // CLOCK_MONOTONIC_RAW ns
  int cpu = -1;            // the CPU the event fired on
  int tid = -1;            // the task running there (for sys_enter, sched_switch: the profiled task)
  // sys_enter: call number; sched_switch: prev_state; waking, migrate: the
  // woken (moved) task; newtask: the new task; exec: the task's pid after it.
  std::int64_t a = 0;
  // switch_in (a switch record of a whole CPU): the task coming in.
  // sched_switch: prev_pid; waking: target CPU; migrate: destination CPU;
  // newtask: clone flags; switch_in: the task going out; exec: its tid before
  // it (old_pid).
  std::int64_t b = 0;
  // migrate: the CPU it leaves (a move to the CPU it is on is no migration).
  std::int64_t c = -1;
};

// sched_switch's prev_state of a task switched out while runnable (preempted):
// the kernel reports TASK_REPORT_MAX, past every sleeping state's bit.
bool left_runnable(std::int64_t prev_state);

// Per-thread counts from the samples.
struct ThreadTally {
  std::uint64_t voluntary = 0, involuntary = 0, syscalls = 0, wakeups = 0;
  std::uint64_t migrations = 0;  // moves to another CPU (sched_migrate_task, orig_cpu != dest_cpu)
};

// A task of the program that ran a new program (sched_process_exec), and
// what it had counted before: a child between its fork and its exec, which
// `perf stat -- CMD` leaves out for CMD itself (its counters start at the
// exec) and counts for CMD's own children.
struct ExecTally {
  int tid = -1;
  std::uint64_t time = 0;
  ThreadTally before;
};

// What the samples add up to. Pure: feed samples in any order within a
// batch; `settle(before)` takes those older than `before` in time order
// (a ring is drained while others still fill, so the last ones wait).
class SampleTally {
 public:
  // The profiled tasks known at the start (the command's process, or the
  // attached process's threads); tasks they create join from newtask samples.
  explicit SampleTally(std::set<int> own_tasks) : own_(std::move(own_tasks)) {}
  void add(const ProfileSample& sample) { pending_.push_back(sample); }
  void settle(std::uint64_t before);
  void settle_all() { settle(UINT64_MAX); }

  std::map<std::int64_t, std::uint64_t> syscalls_by_call;
  std::map<int, ThreadTally> threads;
  std::uint64_t voluntary = 0, involuntary = 0;
  std::uint64_t wakeups = 0, same_cpu = 0, cross_cpu = 0;
  std::uint64_t threads_created = 0, processes_created = 0;
  std::uint64_t duplicates = 0;  // the second delivery of a wake-up event (above)
  // Every exec of the program's tasks after the program's own start (the
  // command's exec is its start, not one of these), in time order.
  std::vector<ExecTally> execs;
  // From switch_in samples only (in place): wake-ups by the target CPU's state.
  std::uint64_t idle_target = 0, busy_target = 0;
  // Latencies in place, ns, from waking to running, by where the task was
  // woken: same or cross (the waker's CPU against the target), idle or busy
  // target (unknown state: in neither).
  std::vector<std::uint64_t> latency_all, latency_same_cpu, latency_cross_cpu, latency_idle_target, latency_busy_target;
  // Takes switch_in samples (profile --trace): counts the above.
  void track_cpus() { in_place_ = true; }
  // A command's profile: every CPU's events start before the command's exec,
  // the program's own at it; wake-ups and moves before the program's first
  // own event (the child before its exec) are not the program's.
  void wait_for_exec() {
    exec_seen_ = false;
    command_ = own_.empty() ? -1 : *own_.begin();
  }
  bool in_place() const { return in_place_; }
  const std::set<int>& own_tasks() const { return own_; }

 private:
  void take(const ProfileSample& sample);
  void take_waking(const ProfileSample& sample, int task);
  void take_move(const ProfileSample& sample, int task);
  void take_switch_in(const ProfileSample& sample);
  std::set<int> own_;
  std::vector<ProfileSample> pending_;
  struct LastWaking {
    std::uint64_t time = 0;
    int cpu = -1, target = -1;
  };
  std::map<int, LastWaking> last_waking_;  // woken task -> its latest wake-up, until a move corrects it
  std::optional<ProfileSample> last_wake_;
  // In place: the task each CPU runs (from its last switch_in), and each woken
  // task's wake-up until the switch that runs it.
  enum class CpuState { unknown, idle, busy };
  CpuState state_of(int cpu) const;
  void count_target(CpuState state, int delta);
  struct OpenWake {
    std::uint64_t time = 0;
    int cpu = -1, target = -1;
    CpuState state = CpuState::unknown;
  };
  std::map<int, int> cpu_task_;
  std::map<int, OpenWake> open_wakes_;
  bool in_place_ = false;
  bool exec_seen_ = true;
  // The command's process until its exec is seen: that exec is the
  // program's start, not one of `execs` (a switch inside it may come first).
  int command_ = -1;
};

// The counters' totals; nullopt: not counted (opening it was refused).
struct ProfileCounters {
  std::optional<std::uint64_t> context_switches, migrations, page_faults, minor_faults, major_faults, syscalls,
      creations, signals;
};

// The perf events of one profile. Opened disabled; with `on_exec` they start
// at the target's exec (enable_on_exec), else at enable().
class ProfileEvents {
 public:
  // `tasks`: the tasks to follow (each with inherit); `cpus`: the CPUs whose
  // rings take the samples; `tracefs`: where the tracepoint ids are (empty:
  // none, tracepoints are not counted); `in_place`: also every CPU's
  // switches (profile --trace). What could not be opened is said in
  // `notes`, one sentence each, and left out; nullptr only when nothing at
  // all could be opened, with `why`.
  static std::unique_ptr<ProfileEvents> open(const std::vector<pid_t>& tasks, const std::vector<int>& cpus,
                                             const std::string& tracefs, bool on_exec, bool in_place,
                                             std::vector<std::string>* notes, std::string* why, bool* denied);
  ~ProfileEvents();
  ProfileEvents(const ProfileEvents&) = delete;
  ProfileEvents& operator=(const ProfileEvents&) = delete;

  void enable();
  // With `on_exec`, the events on every task of a CPU (which have no exec to
  // wait for) start here: called once the program is on its way to exec.
  void enable_whole_cpu();
  void disable();
  bool sampling() const;
  // The rings' file descriptors, to poll for data.
  std::vector<int> ring_fds() const;
  // Moves every sample the rings hold into `tally`; counts what the kernel dropped.
  void drain(SampleTally& tally);
  ProfileCounters read() const;
  std::uint64_t lost() const { return lost_; }
  // Whether every CPU's switches are recorded (asked for, and opened).
  bool in_place() const { return in_place_; }

 private:
  struct Impl;
  ProfileEvents();
  static void open_counters(Impl& impl, const std::vector<pid_t>& tasks, const std::string& tracefs, bool on_exec,
                            std::vector<std::string>* notes, int* last_error, bool* denied);
  static std::string open_samples(Impl& impl, const std::vector<pid_t>& tasks, const std::vector<int>& cpus,
                                  const std::string& tracefs, bool on_exec, bool* denied);
  static std::string open_switch_records(Impl& impl, const std::vector<int>& cpus, bool* denied);
  static void discard_samples(Impl& impl);
  std::unique_ptr<Impl> impl_;
  std::uint64_t lost_ = 0;
  bool in_place_ = false;
};

}  // namespace ctx
