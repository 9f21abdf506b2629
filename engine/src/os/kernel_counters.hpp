// What the kernel says about each sample, to tell interference from cost.
//
// Around every timed batch (never inside it) the harness reads, for each task
// of the variant (the measuring thread and its partners):
//   - the CPU time it ran (/proc/<pid>/task/<tid>/schedstat, first field; the
//     calling thread's own from CLOCK_THREAD_CPUTIME_ID, which the kernel
//     brings up to date when read, where schedstat lags while it runs),
//   - how long it waited runnable on a run queue (schedstat, second field),
//   - its involuntary switches (getrusage(RUSAGE_THREAD) for the calling
//     thread, nonvoluntary_ctxt_switches in .../status for the others),
//   - how many times it was switched in (schedstat, third field): the
//     partners' switches during the kept samples, which the switch check
//     judges (verdict_checks.hpp), so a partner preempted during a sample
//     that was set aside does not count against the figure,
// and, for each CPU the variant uses, the time the hypervisor stole from it
// (/proc/stat, the steal column; USER_HZ resolution).
//
// The rule that sets a sample aside (judge_sample) depends on how the tasks
// share the CPUs:
//   - one CPU, busy throughout: every task of the variant takes turns on one
//     CPU (a same-CPU switch), or there is one task that never sleeps (a
//     system call, a user-level switch). Then the wall time of the sample less
//     the CPU time of the variant's tasks is time the CPU gave to something
//     else: another task, or the hypervisor (with paravirtual steal
//     accounting, as on KVM, the kernel leaves stolen time out of a task's CPU
//     time). A sample where that share is over other_share_limit is set
//     aside: `steal` when the CPUs' steal counter moved in it, `cpu_taken`
//     otherwise. Involuntary switches and run-queue waits are no sign here: a
//     wake-up on the same CPU preempts the waker and makes the wakee wait by
//     design.
//   - each task on a CPU of its own (a cross-CPU switch): the CPUs also idle
//     while the tasks wait for each other, so the time given to others cannot
//     be told from idle. An involuntary switch of any task means another task
//     took its CPU (`preempted`); a task woken on its own CPU can only wait on
//     that CPU's run queue behind another task, so run-queue waits over
//     own_cpus_wait_limit of the wall time are `cpu_taken`; the steal counter
//     moving means the hypervisor took one (`steal`).
//   - anything else (unpinned tasks, tasks this harness does not know, such
//     as the children a create probe spawns): only `steal`.
// On one CPU, run-queue waits are recorded (the record's `counters`) but judge
// nothing: a same-CPU wake-up waits for the waker by design.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/interference.hpp"

namespace ctx {

// A task to read: pid is its thread group, tid the thread.
struct TaskId {
  pid_t pid = -1;
  pid_t tid = -1;
};

struct TaskCounters {
  std::uint64_t exec_ns = 0;       // CPU time it ran
  std::uint64_t run_delay_ns = 0;  // time it waited runnable on a run queue
  long involuntary = 0;            // involuntary switches (read only where judged: own_cpus)
  long runs = 0;                   // times it was switched in (schedstat, third field)
};

struct CounterSnapshot {
  std::uint64_t at_ns = 0;  // CLOCK_MONOTONIC_RAW, next to the calling thread's CPU time
  std::vector<TaskCounters> tasks;
  std::uint64_t steal_ns = 0;  // summed over the CPUs watched
  bool ok = false;             // every file could be read
};

SampleCounters difference(const CounterSnapshot& before, const CounterSnapshot& after);

// The reason to set a sample aside, if any (pure; tested on recorded values).
std::optional<SetAsideReason> judge_sample(const SampleCounters& sample, Sharing sharing);

// Reads the counters; an interface so that the harness's tests can script them.
class KernelCounters {
 public:
  virtual ~KernelCounters() = default;
  // `tasks`: the calling thread first. `cpus`: the CPUs whose steal to sum.
  // `involuntary`: read each task's involuntary switches too.
  virtual CounterSnapshot read(const std::vector<TaskId>& tasks, const std::vector<int>& cpus, bool involuntary) = 0;
};

// The real reader: /proc and the calling thread's clocks. Keeps each file
// open between reads (pread at offset 0 makes the kernel generate it again).
class ProcCounters final : public KernelCounters {
 public:
  ProcCounters();
  ~ProcCounters() override;
  ProcCounters(const ProcCounters&) = delete;
  ProcCounters& operator=(const ProcCounters&) = delete;
  CounterSnapshot read(const std::vector<TaskId>& tasks, const std::vector<int>& cpus, bool involuntary) override;

 private:
  struct Open {
    pid_t tid = -1;
    int schedstat = -1;
    int status = -1;
  };
  Open& files_of(const TaskId& task, bool involuntary);
  int stat_fd_ = -1;
  std::vector<Open> open_;
};

// The busy time of each CPU (user, nice, system, irq, softirq, steal; not
// idle or iowait) from /proc/stat text, in USER_HZ ticks, by CPU number (pure).
std::vector<std::pair<int, std::uint64_t>> busy_ticks(const std::string& proc_stat);
// The steal column of each CPU line, in USER_HZ ticks (pure).
std::vector<std::pair<int, std::uint64_t>> steal_ticks(const std::string& proc_stat);

// A same-CPU variant goes where the other work is least: the CPU among
// `allowed` whose busy time grew least between two readings of /proc/stat
// (`before`, `after`: busy_ticks), the lowest number on a tie. Pure.
struct CpuChoice {
  int cpu = -1;
  std::string why;  // for the record: each CPU's busy share over the window
};
CpuChoice least_busy_cpu(const std::vector<int>& allowed, const std::vector<std::pair<int, std::uint64_t>>& before,
                         const std::vector<std::pair<int, std::uint64_t>>& after, double window_s);

std::string read_proc_stat();

}  // namespace ctx
