#include "os/tasks.hpp"

#include <errno.h>
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "os/timer.hpp"

namespace ctx {

// ---- placement --------------------------------------------------------------
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

int current_cpu() { return sched_getcpu(); }

bool pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

void set_thread_policy(const std::string& policy) {
  sched_param param{};
  const int wanted = policy == "batch" ? SCHED_BATCH : SCHED_OTHER;
  if (sched_setscheduler(0, wanted, &param) != 0) throw_errno("sched_setscheduler(" + policy + ")");
}

std::optional<int> Placement::cpu_for(int task) const {
  if (cpus.empty()) return std::nullopt;
  return cpus[static_cast<std::size_t>(task) % cpus.size()];
}

std::optional<Placement> resolve_placement(const std::string& requested, int tasks, std::string* why) {
  const bool by_topology = requested == "smt" || requested == "llc" || requested == "remote";
  const std::vector<int> cpus = requested == "any" || requested == "none" ? std::vector<int>{} : allowed_cpus();
  return resolve_placement(requested, tasks, cpus, by_topology ? read_topology(cpus, sysfs_root()) : Topology{}, why);
}

std::optional<Placement> resolve_placement(const std::string& requested, int tasks, const std::vector<int>& cpus,
                                           const Topology& topology, std::string* why) {
  Placement placement;
  placement.requested = requested;
  if (requested == "any" || requested == "none") return placement;
  if (cpus.empty()) {
    *why = "sched_getaffinity failed, so no CPU can be chosen";
    return std::nullopt;
  }
  if (requested == "same") {
    placement.cpus.assign(static_cast<std::size_t>(tasks), cpus.front());
    return placement;
  }
  std::vector<int> two;
  if (requested == "cross") {
    if (cpus.size() < 2) {
      *why = fmt::format(
          "--cpus cross needs two CPUs but only CPU {} is allowed (affinity mask); run without taskset "
          "or allow a second CPU",
          cpus.front());
      return std::nullopt;
    }
    two = {cpus[0], cpus[1]};
  } else if (requested == "smt" || requested == "llc" || requested == "remote") {
    const auto pair = find_pair(topology, cpus, requested, why);
    if (!pair) return std::nullopt;
    two = {pair->first, pair->second};
    placement.detail = fmt::format("--cpus {}: {}", requested, pair->detail);
  } else {
    *why = fmt::format("unknown placement '{}'", requested);
    return std::nullopt;
  }
  // Tasks alternate between the two CPUs, so every hand-off crosses CPUs.
  for (int t = 0; t < tasks; ++t) placement.cpus.push_back(two[static_cast<std::size_t>(t % 2)]);
  return placement;
}

const std::string& Context::param(const std::string& name) const {
  auto it = params_.find(name);
  if (it == params_.end()) throw std::logic_error("probe asked for undeclared parameter " + name);
  return it->second;
}

long Context::param_int(const std::string& name) const { return std::stol(param(name)); }

void Context::pin(int task) const {
  if (auto policy = params_.find("policy"); policy != params_.end()) set_thread_policy(policy->second);
  if (auto cpu = placement_.cpu_for(task)) {
    if (!pin_current_thread(*cpu))
      throw ProbeError(Reason::placement_unavailable,
                       fmt::format("cannot pin task {} to CPU {}: {}", task, *cpu, std::strerror(errno)),
                       Status::unsupported);
  }
}

// ---- children -------------------------------------------------------------------
namespace {
std::mutex children_mutex;
std::set<pid_t>& children() {
  static std::set<pid_t> pids;
  return pids;
}
}  // namespace

void track_child(pid_t pid) {
  std::lock_guard lock(children_mutex);
  children().insert(pid);
}

void untrack_child(pid_t pid) {
  std::lock_guard lock(children_mutex);
  children().erase(pid);
}

void kill_and_reap_children() {
  std::lock_guard lock(children_mutex);
  for (pid_t pid : children()) kill(pid, SIGKILL);
  for (pid_t pid : children()) waitpid(pid, nullptr, 0);
  children().clear();
}

std::atomic<bool>& interrupted_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

std::atomic<bool>& timeout_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

pid_t fork_tracked() {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the engine died before the prctl
    return 0;
  }
  if (pid > 0) track_child(pid);
  return pid;
}

// ---- switch counts ---------------------------------------------------------------
SwitchCount thread_switches() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return {usage.ru_nvcsw, usage.ru_nivcsw};
}

Between parse_between(const std::string& value) {
  if (value == "threads") return Between::threads;
  if (value == "processes") return Between::processes;
  throw std::invalid_argument("between must be threads or processes, not " + value);
}

// ---- shared memory ---------------------------------------------------------------
SharedMemory::SharedMemory(std::size_t bytes) : bytes_(bytes) {
  data_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (data_ == MAP_FAILED) {
    data_ = nullptr;
    throw_errno("mmap of shared memory");
  }
}

SharedMemory::~SharedMemory() {
  if (data_) munmap(data_, bytes_);
}

// ---- partner ------------------------------------------------------------------------
struct Partner::Slot {
  TaskReport report;
  std::atomic<int> state;  // 0 running, 1 done, 2 failed
  std::atomic<pid_t> pid;  // the partner's thread group and thread, once it runs (0 before)
  std::atomic<pid_t> tid;
  char error[256];
};

namespace {
std::mutex partners_mutex;
std::vector<const Partner::Slot*>& live_partners() {
  static std::vector<const Partner::Slot*> slots;
  return slots;
}
void forget_partner(const Partner::Slot* slot) {
  std::lock_guard lock(partners_mutex);
  std::erase(live_partners(), slot);
}
}  // namespace

std::vector<TaskId> partner_tasks() {
  std::lock_guard lock(partners_mutex);
  std::vector<TaskId> out;
  for (const auto* slot : live_partners()) {
    const pid_t tid = slot->tid.load();
    if (tid > 0) out.push_back({slot->pid.load(), tid});
  }
  return out;
}

namespace {
void run_partner_body(const Context& ctx, int task, const std::function<std::uint64_t()>& body, TaskReport& report,
                      std::atomic<int>& state, std::atomic<pid_t>& pid, std::atomic<pid_t>& tid, char* error,
                      std::size_t error_size) {
  pid.store(getpid());
  tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
  try {
    ctx.pin(task);
    report.task = task;
    report.cpu_start = current_cpu();
    const SwitchCount before = thread_switches();
    report.handoffs = body();
    const SwitchCount after = thread_switches();
    report.cpu_end = current_cpu();
    report.voluntary = after.voluntary - before.voluntary;
    report.involuntary = after.involuntary - before.involuntary;
    state.store(1);
  } catch (const std::exception& e) {
    std::snprintf(error, error_size, "%s", e.what());
    state.store(2);
  }
}
}  // namespace

Partner::Partner(const Context& ctx, int task, Between between, std::function<std::uint64_t()> body,
                 std::vector<int> close_in_child, std::vector<int> close_in_parent)
    : shared_(sizeof(Slot)), slot_(new (shared_.data()) Slot{}) {
  {
    std::lock_guard lock(partners_mutex);
    live_partners().push_back(slot_);
  }
  if (between == Between::threads) {
    auto* thread = new std::thread([this, &ctx, task, body = std::move(body)] {
      // Signals belong to the engine's main thread and monitor, not partners.
      sigset_t all;
      sigfillset(&all);
      pthread_sigmask(SIG_BLOCK, &all, nullptr);
      run_partner_body(ctx, task, body, slot_->report, slot_->state, slot_->pid, slot_->tid, slot_->error,
                       sizeof slot_->error);
    });
    thread_ = thread;
    return;
  }
  pid_ = fork_tracked();
  if (pid_ < 0) throw_errno("fork of a partner process");
  if (pid_ == 0) {
    for (int fd : close_in_child) close(fd);
    run_partner_body(ctx, task, body, slot_->report, slot_->state, slot_->pid, slot_->tid, slot_->error,
                     sizeof slot_->error);
    _exit(slot_->state.load() == 1 ? 0 : 1);
  }
  for (int fd : close_in_parent) close(fd);
}

Partner::~Partner() {
  forget_partner(slot_);
  if (joined_) return;
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    untrack_child(pid_);
  }
  if (thread_) {
    auto* thread = static_cast<std::thread*>(thread_);
    // A thread cannot be killed; the workload's teardown must have released it.
    if (thread->joinable()) thread->join();
    delete thread;
  }
}

TaskReport Partner::join(double timeout_s) {
  joined_ = true;
  forget_partner(slot_);
  if (thread_) {
    auto* thread = static_cast<std::thread*>(thread_);
    thread->join();
    delete thread;
    thread_ = nullptr;
  } else if (pid_ > 0) {
    int status = 0;
    const std::uint64_t deadline = monotonic_raw_ns() + static_cast<std::uint64_t>(timeout_s * 1e9);
    pid_t done = 0;
    while ((done = waitpid(pid_, &status, WNOHANG)) == 0 && monotonic_raw_ns() < deadline) usleep(1000);
    if (done == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      untrack_child(pid_);
      throw ProbeError(Reason::timeout,
                       fmt::format("partner process {} did not stop within {:.0f} s; killed", pid_, timeout_s));
    }
    untrack_child(pid_);
    if (WIFSIGNALED(status))
      throw ProbeError(Reason::child_failed, fmt::format("partner process {} was killed by signal {} ({})", pid_,
                                                         WTERMSIG(status), strsignal(WTERMSIG(status))));
  }
  if (slot_->state.load() == 2)
    throw ProbeError(Reason::child_failed, fmt::format("partner task failed: {}", slot_->error));
  if (slot_->state.load() != 1) throw ProbeError(Reason::child_failed, "partner task ended without reporting");
  return slot_->report;
}

void read_exact(int fd, void* buffer, std::size_t bytes, const char* what) {
  auto* at = static_cast<char*>(buffer);
  while (bytes > 0) {
    const ssize_t got = read(fd, at, bytes);
    if (got > 0) {
      at += got;
      bytes -= static_cast<std::size_t>(got);
    } else if (got == 0) {
      throw ProbeError(Reason::child_failed, fmt::format("{}: the other side closed (it exited or was killed)", what));
    } else if (errno != EINTR || interrupted_flag().load()) {
      throw_errno(what);
    }
  }
}

void write_exact(int fd, const void* buffer, std::size_t bytes, const char* what) {
  const auto* at = static_cast<const char*>(buffer);
  while (bytes > 0) {
    const ssize_t put = write(fd, at, bytes);
    if (put > 0) {
      at += put;
      bytes -= static_cast<std::size_t>(put);
    } else if (put < 0 && errno == EPIPE) {
      throw ProbeError(Reason::child_failed, fmt::format("{}: the other side closed (it exited or was killed)", what));
    } else if (put < 0 && (errno != EINTR || interrupted_flag().load())) {
      throw_errno(what);
    }
  }
}

void throw_errno(const std::string& what) {
  const int error = errno;
  if (error == EPERM || error == EACCES)
    throw ProbeError(Reason::permission_denied, fmt::format("{}: {}", what, std::strerror(error)), Status::unsupported);
  if (error == ENOSYS || error == ENOTSUP)
    throw ProbeError(Reason::not_supported_here, fmt::format("{}: {}", what, std::strerror(error)),
                     Status::unsupported);
  throw ProbeError(Reason::error, fmt::format("{}: {}", what, std::strerror(error)));
}

}  // namespace ctx
