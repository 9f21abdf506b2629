// The perf events of a profile and the tally of their samples
// (profile_events.hpp says what is counted and how).
#include "trace/profile_events.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "trace/trace.hpp"

namespace ctx {

namespace {

constexpr std::int64_t clone_thread = 0x00010000;  // CLONE_THREAD
// How long after its sched_waking a sched_migrate_task on the same CPU is that
// wake-up's choice of CPU: both come from one try_to_wake_up call, microseconds
// apart; a load balancer's move of a runnable task comes later.
constexpr std::uint64_t wake_move_window_ns = 200000;

int open_event(perf_event_attr& attr, pid_t pid, int cpu) {
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

std::optional<std::uint64_t> tracepoint_id(const std::string& tracefs, const char* system, const char* name) {
  std::ifstream in(fmt::format("{}/events/{}/{}/id", tracefs, system, name));
  std::uint64_t id = 0;
  if (!(in >> id)) return std::nullopt;
  return id;
}

std::string perf_paranoid_value() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  std::string value;
  return (in >> value) ? value : "unknown";
}

// A counting event of the followed tasks and the tasks they create, started
// at the target's exec (`on_exec`) or by enable().
perf_event_attr counting_attr(std::uint32_t type, std::uint64_t config, bool on_exec) {
  perf_event_attr attr{};
  attr.type = type;
  attr.size = sizeof attr;
  attr.config = config;
  attr.disabled = 1;
  attr.enable_on_exec = on_exec ? 1 : 0;
  attr.inherit = 1;
  return attr;
}

// A tracepoint sampled on every event, and where its two fields are.
struct SampledTracepoint {
  std::uint64_t config;
  ProfileEventKind kind;
  std::optional<TraceField> a, b, c;
  bool whole_cpu;  // every task's (kept where the task in field a is the program's)
};

// The tracepoints a profile samples, resolved in tracefs: all of them, or
// none and `problem` (each needs the others).
std::vector<SampledTracepoint> sampled_tracepoints(const std::string& tracefs, std::string* problem) {
  struct SampledSpec {
    const char* system;
    const char* name;
    ProfileEventKind kind;
    const char* field_a;
    const char* field_b;
    bool whole_cpu;
    const char* field_c = nullptr;
  };
  const SampledSpec sampled[] = {
      {"raw_syscalls", "sys_enter", ProfileEventKind::sys_enter, "id", nullptr, false},
      {"sched", "sched_switch", ProfileEventKind::sched_switch, "prev_state", "prev_pid", false},
      {"task", "task_newtask", ProfileEventKind::newtask, "pid", "clone_flags", false},
      {"sched", "sched_waking", ProfileEventKind::waking, "pid", "target_cpu", true},
      {"sched", "sched_migrate_task", ProfileEventKind::migrate, "pid", "dest_cpu", true, "orig_cpu"},
      {"sched", "sched_process_exec", ProfileEventKind::exec, "pid", "old_pid", false},
  };
  std::vector<SampledTracepoint> wanted;
  for (const auto& spec : sampled) {
    const auto id = tracefs.empty() ? std::nullopt : tracepoint_id(tracefs, spec.system, spec.name);
    const auto fields =
        tracefs.empty()
            ? std::map<std::string, TraceField>{}
            : read_tracepoint_format(fmt::format("{}/events/{}/{}/format", tracefs, spec.system, spec.name));
    auto field = [&](const char* name) -> std::optional<TraceField> {
      if (!name) return std::nullopt;
      const auto it = fields.find(name);
      return it == fields.end() ? std::nullopt : std::optional<TraceField>(it->second);
    };
    SampledTracepoint tp{id.value_or(0),      spec.kind,           field(spec.field_a),
                         field(spec.field_b), field(spec.field_c), spec.whole_cpu};
    if (!id || !tp.a || (spec.field_b && !tp.b) || (spec.field_c && !tp.c)) {
      *problem = tracefs.empty()
                     ? "no tracefs to find the tracepoints in"
                     : fmt::format("the tracepoint {}:{} or its fields are not readable", spec.system, spec.name);
      return {};
    }
    wanted.push_back(tp);
  }
  return wanted;
}

}  // namespace

// sched_switch reports a preempted task's state as TASK_REPORT_MAX, a bit past
// every reportable sleeping state (the low byte); a task that yielded, 0.
bool left_runnable(std::int64_t prev_state) { return (prev_state & 0xff) == 0; }

void SampleTally::settle(std::uint64_t before) {
  std::stable_sort(pending_.begin(), pending_.end(),
                   [](const ProfileSample& x, const ProfileSample& y) { return x.time < y.time; });
  auto end = pending_.begin();
  while (end != pending_.end() && end->time < before) ++end;
  for (auto it = pending_.begin(); it != end; ++it) take(*it);
  pending_.erase(pending_.begin(), end);
}

void SampleTally::take(const ProfileSample& s) {
  const bool own_event = s.kind == ProfileEventKind::sys_enter || s.kind == ProfileEventKind::sched_switch ||
                         s.kind == ProfileEventKind::newtask || s.kind == ProfileEventKind::exec;
  const bool started = exec_seen_;
  if (own_event) exec_seen_ = true;
  if (!exec_seen_ && (s.kind == ProfileEventKind::waking || s.kind == ProfileEventKind::migrate)) return;
  switch (s.kind) {
    case ProfileEventKind::sys_enter:
      ++syscalls_by_call[s.a];
      ++threads[s.tid].syscalls;
      return;
    case ProfileEventKind::sched_switch: {
      const int tid = static_cast<int>(s.b);
      if (left_runnable(s.a)) {
        ++involuntary;
        ++threads[tid].involuntary;
        // Preempted after a wake-up: it was woken while still on its CPU (it
        // never slept), and that wake-up has no latency to measure. (One that
        // sleeps after it was woken, in the same instant, keeps it.)
        const auto open = open_wakes_.find(tid);
        if (open != open_wakes_.end() && open->second.time <= s.time) open_wakes_.erase(open);
      } else {
        ++voluntary;
        ++threads[tid].voluntary;
      }
      return;
    }
    case ProfileEventKind::newtask:
      own_.insert(static_cast<int>(s.a));
      ++((s.b & clone_thread) ? threads_created : processes_created);
      return;
    case ProfileEventKind::waking:
    case ProfileEventKind::migrate: {
      if (last_wake_ && last_wake_->kind == s.kind && last_wake_->time == s.time && last_wake_->a == s.a) {
        ++duplicates;
        return;
      }
      last_wake_ = s;
      const int task = static_cast<int>(s.a);
      if (!own_.count(task)) return;  // another program's task
      if (s.kind == ProfileEventKind::waking) {
        take_waking(s, task);
      } else {
        if (s.c >= 0 && s.c != s.b) ++threads[task].migrations;
        take_move(s, task);
      }
      return;
    }
    case ProfileEventKind::switch_in: take_switch_in(s); return;
    case ProfileEventKind::exec:
      // Counted so far under the tid that called exec (old_pid: a thread
      // other than the leader takes the leader's pid).
      if (static_cast<int>(s.b) == command_) {
        command_ = -1;
      } else if (started) {
        const auto counted = threads.find(static_cast<int>(s.b));  // none: a task that counted nothing
        execs.push_back({static_cast<int>(s.a), s.time, counted == threads.end() ? ThreadTally{} : counted->second});
      }
      return;
  }
}

void SampleTally::take_waking(const ProfileSample& s, int task) {
  ++wakeups;
  ++threads[task].wakeups;
  ++(s.cpu == s.b ? same_cpu : cross_cpu);
  last_waking_[task] = {s.time, s.cpu, static_cast<int>(s.b)};
  if (in_place_) {
    const OpenWake wake{s.time, s.cpu, static_cast<int>(s.b), state_of(static_cast<int>(s.b))};
    count_target(wake.state, +1);
    open_wakes_[task] = wake;
  }
}

void SampleTally::take_move(const ProfileSample& s, int task) {
  // A move is the wake-up's own when it comes on the waker's CPU right
  // after it (try_to_wake_up chose another CPU); else it is the load
  // balancer's, later, and changes no wake-up.
  const auto it = last_waking_.find(task);
  if (it == last_waking_.end() || it->second.cpu != s.cpu || s.time - it->second.time > wake_move_window_ns) return;
  const bool was_same = it->second.target == it->second.cpu;
  const bool now_same = static_cast<int>(s.b) == it->second.cpu;
  if (was_same != now_same) {
    --(was_same ? same_cpu : cross_cpu);
    ++(now_same ? same_cpu : cross_cpu);
  }
  last_waking_.erase(it);
  const auto open = open_wakes_.find(task);
  if (open != open_wakes_.end()) {
    count_target(open->second.state, -1);
    open->second.target = static_cast<int>(s.b);
    open->second.state = state_of(open->second.target);
    count_target(open->second.state, +1);
  }
}

void SampleTally::take_switch_in(const ProfileSample& s) {
  const int next = static_cast<int>(s.a);
  cpu_task_[s.cpu] = next;
  const auto open = open_wakes_.find(next);
  if (open == open_wakes_.end()) return;
  const OpenWake& wake = open->second;
  const std::uint64_t latency = s.time >= wake.time ? s.time - wake.time : 0;
  latency_all.push_back(latency);
  (wake.cpu == wake.target ? latency_same_cpu : latency_cross_cpu).push_back(latency);
  if (wake.state == CpuState::idle) latency_idle_target.push_back(latency);
  if (wake.state == CpuState::busy) latency_busy_target.push_back(latency);
  open_wakes_.erase(open);
}

SampleTally::CpuState SampleTally::state_of(int cpu) const {
  const auto it = cpu_task_.find(cpu);
  if (it == cpu_task_.end()) return CpuState::unknown;
  return it->second == 0 ? CpuState::idle : CpuState::busy;
}

void SampleTally::count_target(CpuState state, int delta) {
  if (state == CpuState::unknown) return;
  std::uint64_t& count = state == CpuState::idle ? idle_target : busy_target;
  count += static_cast<std::uint64_t>(static_cast<std::int64_t>(delta));
}

struct ProfileEvents::Impl {
  struct Counter {
    std::optional<std::uint64_t> ProfileCounters::*field;
    std::vector<int> fds;  // one per followed task
  };
  struct Tracepoint {
    ProfileEventKind kind;
    std::optional<TraceField> a, b, c;
  };
  struct Ring {
    int leader = -1;
    void* base = MAP_FAILED;
    std::size_t length = 0;
  };
  std::vector<Counter> counters;
  std::vector<int> sample_fds;
  std::vector<int> whole_cpu_fds;  // of sample_fds, the events on every task of a CPU
  std::vector<Ring> rings;
  std::map<std::uint64_t, Tracepoint> by_id;
  std::size_t page = 4096;
  std::vector<unsigned char> record;

  ~Impl() {
    for (auto& r : rings)
      if (r.base != MAP_FAILED) munmap(r.base, r.length);
    for (int fd : sample_fds) close(fd);
    for (auto& c : counters)
      for (int fd : c.fds) close(fd);
  }
};

ProfileEvents::ProfileEvents() : impl_(std::make_unique<Impl>()) {}
ProfileEvents::~ProfileEvents() = default;

std::unique_ptr<ProfileEvents> ProfileEvents::open(const std::vector<pid_t>& tasks, const std::vector<int>& cpus,
                                                   const std::string& tracefs, bool on_exec, bool in_place,
                                                   std::vector<std::string>* notes, std::string* why, bool* denied) {
  *denied = false;
  std::unique_ptr<ProfileEvents> events(new ProfileEvents());
  Impl& impl = *events->impl_;
  impl.page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  int last_error = 0;
  open_counters(impl, tasks, tracefs, on_exec, notes, &last_error, denied);
  const std::string sampling_problem = open_samples(impl, tasks, cpus, tracefs, on_exec, denied);
  std::string in_place_problem;
  if (in_place)
    in_place_problem =
        sampling_problem.empty() ? open_switch_records(impl, cpus, denied) : "the samples it builds on were not taken";
  events->in_place_ = in_place && in_place_problem.empty();
  if (!in_place_problem.empty())
    notes->push_back(
        fmt::format("wake-ups by the target CPU's state (idle, busy) and their latencies in place not counted: {}",
                    in_place_problem));
  if (!sampling_problem.empty()) {
    discard_samples(impl);
    notes->push_back(fmt::format(
        "voluntary and involuntary switches, system calls by call, wake-ups (same-CPU, cross-CPU), threads against "
        "processes created not counted: {}",
        sampling_problem));
  }
  if (impl.counters.empty() && impl.rings.empty()) {
    *why = last_error ? fmt::format("no perf event could be opened: {}", std::strerror(last_error))
                      : "no perf event could be opened";
    return nullptr;
  }
  return events;
}

// The counters, read once at the end: each on every followed task, or not at
// all; what was refused is said in one note per reason.
void ProfileEvents::open_counters(Impl& impl, const std::vector<pid_t>& tasks, const std::string& tracefs, bool on_exec,
                                  std::vector<std::string>* notes, int* last_error, bool* denied) {
  std::map<std::string, std::vector<std::string>> not_counted;
  auto refused = [&](const std::string& what, int error) {
    *last_error = error;
    const bool permission = error == EACCES || error == EPERM;
    *denied = *denied || permission;
    not_counted[fmt::format("perf_event_open: {}{}", std::strerror(error),
                            permission ? fmt::format(" (kernel.perf_event_paranoid is {}; the kernel's events need "
                                                     "root or CAP_PERFMON, or 1 or less for software events, -1 "
                                                     "for tracepoints)",
                                                     perf_paranoid_value())
                                       : "")]
        .push_back(what);
  };
  struct CounterSpec {
    const char* what;
    std::optional<std::uint64_t> ProfileCounters::*field;
    std::uint32_t type;
    std::uint64_t config;
    const char* system;  // tracepoints: where the id is
    const char* name;
  };
  const CounterSpec specs[] = {
      {"context switches", &ProfileCounters::context_switches, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
      {"migrations", &ProfileCounters::migrations, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
      {"page faults", &ProfileCounters::page_faults, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
      {"minor faults", &ProfileCounters::minor_faults, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
      {"major faults", &ProfileCounters::major_faults, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
      {"system calls", &ProfileCounters::syscalls, PERF_TYPE_TRACEPOINT, 0, "raw_syscalls", "sys_enter"},
      {"threads and processes created", &ProfileCounters::creations, PERF_TYPE_TRACEPOINT, 0, "sched",
       "sched_process_fork"},
      {"signals", &ProfileCounters::signals, PERF_TYPE_TRACEPOINT, 0, "signal", "signal_deliver"},
  };
  for (const auto& spec : specs) {
    std::uint64_t config = spec.config;
    if (spec.type == PERF_TYPE_TRACEPOINT) {
      const auto id = tracefs.empty() ? std::nullopt : tracepoint_id(tracefs, spec.system, spec.name);
      if (!id) {
        not_counted[tracefs.empty() ? "no tracefs to find the tracepoints in"
                                    : fmt::format("the tracepoint {}:{} is not readable", spec.system, spec.name)]
            .push_back(spec.what);
        continue;
      }
      config = *id;
    }
    Impl::Counter counter{spec.field, {}};
    for (pid_t task : tasks) {
      auto attr = counting_attr(spec.type, config, on_exec);
      const int fd = open_event(attr, task, -1);
      if (fd < 0) {
        refused(spec.what, errno);
        for (int opened : counter.fds) close(opened);
        counter.fds.clear();
        break;
      }
      counter.fds.push_back(fd);
    }
    if (!counter.fds.empty()) impl.counters.push_back(std::move(counter));
  }

  for (const auto& [reason, what] : not_counted)
    notes->push_back(fmt::format("{} not counted: {}", fmt::join(what, ", "), reason));
}

// The sampled tracepoints, all of them or none (each needs the others), into
// one ring per CPU; the problem, empty when they opened.
std::string ProfileEvents::open_samples(Impl& impl, const std::vector<pid_t>& tasks, const std::vector<int>& cpus,
                                        const std::string& tracefs, bool on_exec, bool* denied) {
  std::string sampling_problem;
  const std::vector<SampledTracepoint> wanted = sampled_tracepoints(tracefs, &sampling_problem);
  // Each CPU's ring: a quarter of it full wakes the reader. 16 MiB a CPU
  // (64 MiB in all at most): a program making 10^6 calls a second fills one
  // in about a quarter second, which a reader kept off the CPU by load can miss.
  std::size_t pages = 4096;
  while (pages > 16 && pages * impl.page * cpus.size() > (64u << 20)) pages /= 2;
  if (sampling_problem.empty()) {
    for (int cpu : cpus) {
      Impl::Ring ring;
      for (std::size_t t = 0; t < tasks.size(); ++t) {
        for (const auto& [config, kind, a, b, c, whole_cpu] : wanted) {
          if (whole_cpu && t > 0) continue;  // one per CPU, not one per task
          auto attr = counting_attr(PERF_TYPE_TRACEPOINT, config, on_exec);
          attr.inherit = whole_cpu ? 0 : 1;
          attr.enable_on_exec = whole_cpu ? 0 : attr.enable_on_exec;  // a CPU's events have no exec: enable_whole_cpu
          attr.sample_period = 1;
          attr.sample_type =
              PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
          attr.use_clockid = 1;
          attr.clockid = CLOCK_MONOTONIC_RAW;
          attr.watermark = 1;
          attr.wakeup_watermark = static_cast<std::uint32_t>(pages * impl.page / 4);
          const int fd = open_event(attr, whole_cpu ? -1 : tasks[t], cpu);
          if (fd < 0) {
            const int error = errno;
            sampling_problem = fmt::format("perf_event_open: {}", std::strerror(error));
            if (error == EACCES || error == EPERM) {
              *denied = true;
              sampling_problem += fmt::format(
                  " (sampling tracepoints needs root or CAP_PERFMON, or "
                  "kernel.perf_event_paranoid -1; it is {})",
                  perf_paranoid_value());
            }
            break;
          }
          impl.sample_fds.push_back(fd);
          if (whole_cpu) impl.whole_cpu_fds.push_back(fd);
          std::uint64_t id = 0;
          ioctl(fd, PERF_EVENT_IOC_ID, &id);
          impl.by_id[id] = Impl::Tracepoint{kind, a, b, c};
          if (ring.leader < 0) {
            ring.leader = fd;
            ring.length = (pages + 1) * impl.page;
            ring.base = mmap(nullptr, ring.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (ring.base == MAP_FAILED) {
              sampling_problem = fmt::format("mapping a {} KiB perf ring on CPU {}: {}", ring.length / 1024, cpu,
                                             std::strerror(errno));
              break;
            }
            impl.rings.push_back(ring);
          } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring.leader) != 0) {
            sampling_problem = fmt::format("PERF_EVENT_IOC_SET_OUTPUT: {}", std::strerror(errno));
            break;
          }
        }
        if (!sampling_problem.empty()) break;
      }
      if (!sampling_problem.empty()) break;
    }
  }
  return sampling_problem;
}

// Perf's own switch records of every CPU, into each CPU's ring (profile
// --trace). Not the sched_switch tracepoint: on some guests it never fires
// for a CPU's way out of idle (seen here: none of 300 on one of two vCPUs, in
// ftrace and perf alike), while the switch records have every one. All or
// none; the problem, empty when they opened.
std::string ProfileEvents::open_switch_records(Impl& impl, const std::vector<int>& cpus, bool* denied) {
  std::vector<int> opened;
  std::string problem;
  for (std::size_t i = 0; i < cpus.size() && i < impl.rings.size() && problem.empty(); ++i) {
    const int fd = open_switch_record_event(cpus[i]);
    if (fd < 0) {
      const int error = errno;
      problem = fmt::format("perf_event_open (context switches of CPU {}): {}", cpus[i], std::strerror(error));
      *denied = *denied || error == EACCES || error == EPERM;
      break;
    }
    opened.push_back(fd);
    if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, impl.rings[i].leader) != 0)
      problem = fmt::format("PERF_EVENT_IOC_SET_OUTPUT: {}", std::strerror(errno));
  }
  if (!problem.empty()) {
    for (int fd : opened) close(fd);
    return problem;
  }
  impl.sample_fds.insert(impl.sample_fds.end(), opened.begin(), opened.end());
  impl.whole_cpu_fds.insert(impl.whole_cpu_fds.end(), opened.begin(), opened.end());
  return problem;
}

void ProfileEvents::discard_samples(Impl& impl) {
  for (auto& r : impl.rings)
    if (r.base != MAP_FAILED) munmap(r.base, r.length);
  impl.rings.clear();
  for (int fd : impl.sample_fds) close(fd);
  impl.sample_fds.clear();
  impl.whole_cpu_fds.clear();
  impl.by_id.clear();
}

void ProfileEvents::enable() {
  for (auto& c : impl_->counters)
    for (int fd : c.fds) ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  for (int fd : impl_->sample_fds) ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
}

void ProfileEvents::enable_whole_cpu() {
  for (int fd : impl_->whole_cpu_fds) ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
}

void ProfileEvents::disable() {
  for (int fd : impl_->sample_fds) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  for (auto& c : impl_->counters)
    for (int fd : c.fds) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
}

bool ProfileEvents::sampling() const { return !impl_->rings.empty(); }

std::vector<int> ProfileEvents::ring_fds() const {
  std::vector<int> fds;
  for (const auto& r : impl_->rings) fds.push_back(r.leader);
  return fds;
}

ProfileCounters ProfileEvents::read() const {
  ProfileCounters totals;
  for (const auto& c : impl_->counters) {
    std::uint64_t sum = 0;
    bool ok = true;
    for (int fd : c.fds) {
      std::uint64_t value = 0;
      // A task's counter with inherit reads its own count plus its children's
      // (the live ones' and, folded in at their exit, the ended ones').
      if (::read(fd, &value, sizeof value) != static_cast<ssize_t>(sizeof value)) ok = false;
      sum += value;
    }
    if (ok) totals.*(c.field) = sum;
  }
  return totals;
}

void ProfileEvents::drain(SampleTally& tally) {
  // A switch, from either side's record (a switch between two tasks gives
  // both; one to or from the idle task only the other task's): the task coming in.
  const auto on_switch = [&](const PerfSwitch& sw) {
    ProfileSample s;
    s.kind = ProfileEventKind::switch_in;
    s.time = sw.time;
    s.cpu = static_cast<int>(sw.cpu);
    s.tid = static_cast<int>(sw.tid);
    s.a = sw.out ? sw.other_tid : sw.tid;
    s.b = sw.out ? sw.tid : sw.other_tid;
    tally.add(s);
  };
  for (auto& ring : impl_->rings)
    drain_perf_ring(
        ring.base, ring.length, impl_->page, impl_->record, &lost_,
        [&](const PerfSample& sample) {
          const auto it = impl_->by_id.find(sample.id);
          if (it == impl_->by_id.end()) return;
          ProfileSample s;
          s.kind = it->second.kind;
          s.time = sample.time;
          s.cpu = static_cast<int>(sample.cpu);
          s.tid = static_cast<int>(sample.tid);
          if (it->second.a) s.a = read_tracepoint_field(sample.raw, sample.raw_size, *it->second.a);
          if (it->second.b) s.b = read_tracepoint_field(sample.raw, sample.raw_size, *it->second.b);
          if (it->second.c) s.c = read_tracepoint_field(sample.raw, sample.raw_size, *it->second.c);
          tally.add(s);
        },
        in_place_ ? std::function<void(const PerfSwitch&)>(on_switch) : nullptr);
}

}  // namespace ctx
