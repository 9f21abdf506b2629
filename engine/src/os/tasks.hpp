// Tasks: where the harness puts work (placement), the partner task that a
// switch probe ping-pongs with (a thread or a forked process), the list of
// live children that a fault or Ctrl-C must reap, and switch counting.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/registry.hpp"
#include "os/kernel_counters.hpp"
#include "os/topology.hpp"

namespace ctx {

// ---- placement --------------------------------------------------------------
std::vector<int> allowed_cpus();  // this process's affinity mask
int current_cpu();                // sched_getcpu(), -1 if unknown
bool pin_current_thread(int cpu);
// SCHED_BATCH or SCHED_OTHER for the calling thread ("batch" | "normal").
// Unprivileged; a batch task does not preempt the task that woke it.
void set_thread_policy(const std::string& policy);

struct Placement {
  std::string requested = "none";  // same | cross | any | smt | llc | remote | matrix | none
  std::vector<int> cpus;           // per task; empty when unpinned
  std::string detail;              // where the chosen CPUs are (smt, llc, remote), for the record's notes
  std::optional<int> cpu_for(int task) const;
};

// Resolves a `cpus` value for `tasks` tasks; nullopt (and `why`) when it
// cannot be honoured here (e.g. cross with one allowed CPU, smt without SMT).
// smt, llc and remote read the topology from sysfs (topology.hpp).
std::optional<Placement> resolve_placement(const std::string& requested, int tasks, std::string* why);
// The same over a given affinity mask and topology (pure; tested on fake trees).
std::optional<Placement> resolve_placement(const std::string& requested, int tasks, const std::vector<int>& allowed,
                                           const Topology& topology, std::string* why);

// ---- what a probe sees of the harness ----------------------------------------
class Context {
 public:
  Context(Params params, Placement placement, bool quick)
      : params_(std::move(params)), placement_(std::move(placement)), quick_(quick) {}
  const Params& params() const { return params_; }
  const std::string& param(const std::string& name) const;
  long param_int(const std::string& name) const;
  const Placement& placement() const { return placement_; }
  bool quick() const { return quick_; }
  // Pins the calling thread where task `task` belongs (no-op when unpinned)
  // and gives it the variant's scheduling policy (param `policy`, if any).
  void pin(int task) const;

 private:
  Params params_;
  Placement placement_;
  bool quick_;
};

// ---- children and interruption ------------------------------------------------
// Every forked child is listed here until reaped, so that a timeout or Ctrl-C
// can kill and reap all of them.
void track_child(pid_t pid);
void untrack_child(pid_t pid);
void kill_and_reap_children();
std::atomic<bool>& interrupted_flag();
// Set by the engine's monitor when the running variant overran --timeout:
// the harness stops at the next batch boundary (a batch lasts about the
// calibration target), so in-process probes, which have no child to kill,
// stop too. Cleared before each variant.
std::atomic<bool>& timeout_flag();

// fork() for probes: the child dies with the engine (PR_SET_PDEATHSIG), and is
// tracked in the parent. Returns what fork returns.
pid_t fork_tracked();

// ---- switch counts ---------------------------------------------------------------
struct SwitchCount {
  long voluntary = 0;
  long involuntary = 0;
};
SwitchCount thread_switches();  // RUSAGE_THREAD of the calling thread

// The partner tasks alive now that have started running (Partner below), in
// the order they were made: the tasks whose counters the harness reads
// around each sample beside its own (kernel_counters.hpp).
std::vector<TaskId> partner_tasks();

// ---- partner task ------------------------------------------------------------------
enum class Between { threads, processes };
Between parse_between(const std::string& value);

// Memory shared between the engine and its children (MAP_SHARED|MAP_ANONYMOUS),
// page-aligned and zeroed; unmapped in the destructor.
class SharedMemory {
 public:
  explicit SharedMemory(std::size_t bytes);
  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  void* data() const { return data_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Runs `body` as task `task`: on a new thread or in a forked child, pinned by
// the context's placement. The body loops over hand-offs and returns how many
// it served; the Partner records its CPU at start and end and its switch
// counts. In a child process, `close_in_child` fds are closed first (the
// engine's ends of pipes), and the parent closes `close_in_parent` after the
// fork (the child's ends), so that either side sees EOF when the other dies.
class Partner {
 public:
  Partner(const Context& ctx, int task, Between between, std::function<std::uint64_t()> body,
          std::vector<int> close_in_child = {}, std::vector<int> close_in_parent = {});
  ~Partner();
  Partner(const Partner&) = delete;
  Partner& operator=(const Partner&) = delete;

  // Waits for the body to return (after the workload told it to stop).
  // Throws ProbeError(child_failed) if the child died or the body threw.
  TaskReport join(double timeout_s = 10.0);
  pid_t pid() const { return pid_; }
  struct Slot;  // shared with the partner: its report, state and ids

 private:
  SharedMemory shared_;
  Slot* slot_;
  pid_t pid_ = -1;
  void* thread_ = nullptr;  // std::thread*, kept opaque to keep <thread> out of probes' way
  bool joined_ = false;
};

// read()/write() of exactly `bytes`, retrying on EINTR; throws ProbeError
// (child_failed) on EOF or error, naming `what`.
void read_exact(int fd, void* buffer, std::size_t bytes, const char* what);
void write_exact(int fd, const void* buffer, std::size_t bytes, const char* what);

// Throws ProbeError for errno with `what` as context (EPERM -> unsupported).
[[noreturn]] void throw_errno(const std::string& what);

}  // namespace ctx
