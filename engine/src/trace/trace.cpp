// The perf_event_open side of the traced pass (trace.hpp): tracefs lookup,
// per-CPU events sharing one ring, and reading the ring back into events.
#include "trace/trace.hpp"

#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "os/tasks.hpp"

namespace ctx {

std::map<std::string, TraceField> read_tracepoint_format(const std::string& path) {
  std::map<std::string, TraceField> fields;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    // "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;"
    const auto start = line.find("field:");
    const auto semi = line.find(';');
    if (start == std::string::npos || semi == std::string::npos) continue;
    std::string decl = line.substr(start + 6, semi - start - 6);
    if (const auto bracket = decl.find('['); bracket != std::string::npos) decl.resize(bracket);
    const auto space = decl.find_last_of(" \t");
    const std::string name = space == std::string::npos ? decl : decl.substr(space + 1);
    TraceField f;
    int is_signed = 0;
    if (std::sscanf(line.c_str() + semi, ";\toffset:%zu;\tsize:%zu;\tsigned:%d;", &f.offset, &f.size, &is_signed) >=
        2) {
      f.is_signed = is_signed != 0;
      fields[name] = f;
    }
  }
  return fields;
}

std::int64_t read_tracepoint_field(const unsigned char* raw, std::size_t raw_size, const TraceField& f) {
  if (f.offset + f.size > raw_size) return 0;
  switch (f.size) {
    case 1: {
      std::uint8_t v;
      std::memcpy(&v, raw + f.offset, 1);
      return f.is_signed ? static_cast<std::int8_t>(v) : v;
    }
    case 2: {
      std::uint16_t v;
      std::memcpy(&v, raw + f.offset, 2);
      return f.is_signed ? static_cast<std::int16_t>(v) : v;
    }
    case 4: {
      std::uint32_t v;
      std::memcpy(&v, raw + f.offset, 4);
      return f.is_signed ? static_cast<std::int32_t>(v) : static_cast<std::int64_t>(v);
    }
    case 8: {
      std::int64_t v;
      std::memcpy(&v, raw + f.offset, 8);
      return v;
    }
    default: return 0;
  }
}

namespace {

// pid -1: every task on `cpu`; else that task and (attr.inherit) its children.
int perf_event_open(perf_event_attr& attr, pid_t pid, int cpu) {
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

std::string read_first_line(const std::string& path, int* error) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    *error = errno ? errno : ENOENT;
    return "";
  }
  *error = 0;
  return line;
}

std::string paranoid_setting() {
  int error = 0;
  const std::string value = read_first_line("/proc/sys/kernel/perf_event_paranoid", &error);
  return error ? "unknown" : value;
}

}  // namespace

const std::vector<TracepointSpec>& traced_tracepoints() {
  static const std::vector<TracepointSpec> specs = {
      // The CPU-wide ones come first: a CPU's ring belongs to its first event.
      {"sched", "sched_waking", TraceKind::waking, "pid", "target_cpu", true, false},
      {"sched", "sched_wakeup", TraceKind::wakeup, "pid", "target_cpu", true, false},
      {"sched", "sched_switch", TraceKind::sched_switch, "prev_pid", "next_pid", true, false},
      {"sched", "sched_process_fork", TraceKind::fork, "parent_pid", "child_pid", true, false},
      {"sched", "sched_wake_idle_without_ipi", TraceKind::wake_idle_poll, "cpu", nullptr, false, false},
      {"power", "cpu_idle", TraceKind::cpu_idle, "state", "cpu_id", false, false},
      {"irq_vectors", "reschedule_entry", TraceKind::ipi_entry, nullptr, nullptr, false, false},
      {"irq_vectors", "reschedule_exit", TraceKind::ipi_exit, nullptr, nullptr, false, false},
      {"irq_vectors", "call_function_single_entry", TraceKind::ipi_entry, nullptr, nullptr, false, false},
      {"irq_vectors", "call_function_single_exit", TraceKind::ipi_exit, nullptr, nullptr, false, false},
      {"raw_syscalls", "sys_enter", TraceKind::sys_enter, "id", nullptr, true, true},
      {"raw_syscalls", "sys_exit", TraceKind::sys_exit, "id", nullptr, true, true},
  };
  return specs;
}

std::optional<std::string> find_tracefs(std::string* why) {
  std::vector<std::string> problems;
  for (const std::string root : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    const std::string probe = root + "/events/sched/sched_switch/id";
    int error = 0;
    read_first_line(probe, &error);
    if (error == 0) return root;
    problems.push_back(fmt::format("{}: {}", probe, std::strerror(error)));
    if (error == EACCES || error == EPERM) {
      *why = fmt::format("cannot read {}: {} (tracepoint ids in tracefs need root)", probe, std::strerror(error));
      return std::nullopt;
    }
  }
  *why = fmt::format("tracefs is not mounted ({}); as root: mount -t tracefs nodev /sys/kernel/tracing",
                     fmt::join(problems, "; "));
  return std::nullopt;
}

namespace {

// Mounts tracefs at /sys/kernel/tracing in a mount namespace of the engine's
// own: / is made private first, so nothing mounted here reaches the host's
// table, and the mount goes when the engine (and its children) end.
bool mount_private_tracefs(std::string* why) {
  if (unshare(CLONE_NEWNS) != 0) {
    *why = fmt::format("unshare(CLONE_NEWNS): {}", std::strerror(errno));
    return false;
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    *why = fmt::format("making / private in the engine's mount namespace: {}", std::strerror(errno));
    return false;
  }
  if (mount("nodev", "/sys/kernel/tracing", "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    *why = fmt::format("mount -t tracefs nodev /sys/kernel/tracing: {}", std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> prepare_tracing(bool* mounted) {
  *mounted = false;
  std::string why;
  if (!find_tracefs(&why)) {
    if (why.find("not mounted") == std::string::npos) return why;
    std::string failed;
    if (geteuid() != 0) return why;
    if (!mount_private_tracefs(&failed))
      return fmt::format(
          "tracefs is not mounted, and mounting it in a mount namespace of the engine's own failed "
          "({}); as root: mount -t tracefs nodev /sys/kernel/tracing",
          failed);
    *mounted = true;
  }
  // What recording needs beyond tracefs (perf_event_open on a CPU's
  // tracepoints): tried on one CPU, then closed.
  const std::vector<int> cpus = allowed_cpus();
  bool denied = false;
  if (!cpus.empty() && !TraceSession::open({cpus.front()}, &why, &denied)) return why;
  return std::nullopt;
}

int open_switch_record_event(int cpu) {
  perf_event_attr attr{};
  attr.type = PERF_TYPE_SOFTWARE;
  attr.size = sizeof attr;
  attr.config = PERF_COUNT_SW_DUMMY;
  attr.disabled = 1;
  attr.context_switch = 1;
  attr.sample_id_all = 1;
  attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC_RAW;
  return perf_event_open(attr, -1, cpu);
}

namespace {

// Opens perf's switch records of each CPU into its ring (cpu, ring leader
// fd); all or none, their fds added to `fds`.
bool open_switch_records(const std::vector<std::pair<int, int>>& rings, std::vector<int>& fds) {
  std::vector<int> opened;
  for (const auto& [cpu, leader] : rings) {
    const int fd = open_switch_record_event(cpu);
    if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, leader) == 0) {
      opened.push_back(fd);
      continue;
    }
    // Not on every CPU: the tracepoint's switches, for all of them alike.
    if (fd >= 0) close(fd);
    for (int other : opened) close(other);
    return false;
  }
  fds.insert(fds.end(), opened.begin(), opened.end());
  return true;
}

}  // namespace

struct TraceSession::Impl {
  struct Tracepoint {
    TraceKind kind;
    std::optional<TraceField> a, b;
  };
  struct Ring {
    int cpu = -1;
    int leader = -1;  // the event whose ring the CPU's other events write to
    void* base = MAP_FAILED;
    std::size_t length = 0;
  };
  // A tracepoint to open on every CPU.
  struct Wanted {
    std::string name;
    std::uint64_t config;
    Tracepoint tracepoint;
    bool own_tasks;
  };
  std::vector<int> fds;
  std::vector<Ring> rings;
  std::map<std::uint64_t, Tracepoint> by_id;  // perf's event id -> what it is
  std::size_t page = 4096;

  ~Impl() {
    for (auto& r : rings)
      if (r.base != MAP_FAILED) munmap(r.base, r.length);
    for (int fd : fds) close(fd);
  }

  static std::optional<std::vector<Wanted>> find_tracepoints(const std::string& root, std::vector<std::string>& events,
                                                             std::vector<std::string>& missing, std::string* why,
                                                             bool* denied);
  bool open_ring(int cpu, const std::vector<Wanted>& wanted, std::size_t pages, std::string* why, bool* denied);
};

// The traced tracepoints as tracefs describes them under `root`: the ones
// found named in `events`, the optional ones absent in `missing`; nullopt
// and `why` when a required one is absent or lacks its fields.
std::optional<std::vector<TraceSession::Impl::Wanted>> TraceSession::Impl::find_tracepoints(
    const std::string& root, std::vector<std::string>& events, std::vector<std::string>& missing, std::string* why,
    bool* denied) {
  std::vector<Wanted> wanted;
  for (const auto& spec : traced_tracepoints()) {
    const std::string dir = fmt::format("{}/events/{}/{}", root, spec.system, spec.name);
    const std::string name = fmt::format("{}:{}", spec.system, spec.name);
    int error = 0;
    const std::string id = read_first_line(dir + "/id", &error);
    if (error) {
      if (spec.required) {
        *denied = error == EACCES || error == EPERM;
        *why = fmt::format("tracepoint {} is not available: {}/id: {}", name, dir, std::strerror(error));
        return std::nullopt;
      }
      missing.push_back(name);
      continue;
    }
    const auto fields = read_tracepoint_format(dir + "/format");
    Tracepoint tp{spec.kind, std::nullopt, std::nullopt};
    auto field = [&](const char* field_name) -> std::optional<TraceField> {
      if (!field_name) return std::nullopt;
      const auto it = fields.find(field_name);
      return it == fields.end() ? std::nullopt : std::optional<TraceField>(it->second);
    };
    tp.a = field(spec.field_a);
    tp.b = field(spec.field_b);
    if ((spec.field_a && !tp.a) || (spec.field_b && !tp.b)) {
      *why = fmt::format("tracepoint {} lacks the fields {} / {} in {}/format", name, spec.field_a,
                         spec.field_b ? spec.field_b : "-", dir);
      return std::nullopt;
    }
    wanted.push_back({name, std::stoull(id), tp, spec.own_tasks});
    events.push_back(name);
  }
  return wanted;
}

// Opens every wanted tracepoint on `cpu`, all writing to one ring of `pages`
// pages; false and `why` when the kernel refuses one.
bool TraceSession::Impl::open_ring(int cpu, const std::vector<Wanted>& wanted, std::size_t pages, std::string* why,
                                   bool* denied) {
  Ring ring;
  ring.cpu = cpu;
  for (const auto& w : wanted) {
    perf_event_attr attr{};
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.size = sizeof attr;
    attr.config = w.config;
    attr.sample_period = 1;
    attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
    attr.disabled = 1;
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC_RAW;
    attr.inherit = w.own_tasks ? 1 : 0;
    const int fd = perf_event_open(attr, w.own_tasks ? static_cast<pid_t>(syscall(SYS_gettid)) : -1, cpu);
    if (fd < 0) {
      const int error = errno;
      *denied = error == EACCES || error == EPERM;
      *why = fmt::format("perf_event_open({}) on CPU {} failed: {}{}", w.name, cpu, std::strerror(error),
                         *denied ? fmt::format(" (recording a CPU's tracepoints needs CAP_PERFMON or root, or "
                                               "kernel.perf_event_paranoid = -1; it is {})",
                                               paranoid_setting())
                                 : "");
      return false;
    }
    fds.push_back(fd);
    std::uint64_t id = 0;
    if (ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) {
      *why = fmt::format("PERF_EVENT_IOC_ID({}): {}", w.name, std::strerror(errno));
      return false;
    }
    by_id[id] = w.tracepoint;
    if (ring.leader < 0) {
      ring.leader = fd;
      ring.length = (pages + 1) * page;
      ring.base = mmap(nullptr, ring.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (ring.base == MAP_FAILED) {
        const int error = errno;
        *denied = error == EPERM;
        *why = fmt::format("mapping a {} KiB perf ring on CPU {} failed: {}{}", ring.length / 1024, cpu,
                           std::strerror(error),
                           error == EPERM ? " (over kernel.perf_event_mlock_kb; root or CAP_IPC_LOCK lifts it)" : "");
        return false;
      }
      rings.push_back(ring);
    } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring.leader) != 0) {
      *why = fmt::format("PERF_EVENT_IOC_SET_OUTPUT({}) on CPU {}: {}", w.name, cpu, std::strerror(errno));
      return false;
    }
  }
  return true;
}

TraceSession::TraceSession() : impl_(std::make_unique<Impl>()) {}
TraceSession::~TraceSession() = default;

std::unique_ptr<TraceSession> TraceSession::open(const std::vector<int>& cpus, std::string* why, bool* denied) {
  *denied = false;
  const auto root = find_tracefs(why);
  if (!root) {
    *denied = why->find("need root") != std::string::npos;
    return nullptr;
  }
  std::unique_ptr<TraceSession> session(new TraceSession());
  session->tracefs_ = *root;
  Impl& impl = *session->impl_;
  impl.page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  // Each CPU's ring holds the whole traced pass (it is read afterwards);
  // 64 MiB in all, at most 32 MiB a CPU.
  std::size_t pages = 8192;
  while (pages > 64 && pages * impl.page * cpus.size() > (64u << 20)) pages /= 2;
  session->ring_bytes_ = pages * impl.page;

  const auto wanted = Impl::find_tracepoints(*root, session->events_, session->missing_, why, denied);
  if (!wanted) return nullptr;
  for (int cpu : cpus)
    if (!impl.open_ring(cpu, *wanted, pages, why, denied)) return nullptr;
  std::vector<std::pair<int, int>> cpu_leaders;
  for (const auto& ring : impl.rings) cpu_leaders.emplace_back(ring.cpu, ring.leader);
  session->switch_records_ = open_switch_records(cpu_leaders, impl.fds);
  if (session->switch_records_) session->events_.push_back("perf switch records (the switches' pids)");
  return session;
}

void TraceSession::enable() {
  for (int fd : impl_->fds) ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
}

void TraceSession::disable() {
  for (int fd : impl_->fds) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
}

void drain_perf_ring(void* base, std::size_t length, std::size_t page, std::vector<unsigned char>& record,
                     std::uint64_t* lost, const std::function<void(const PerfSample&)>& take,
                     const std::function<void(const PerfSwitch&)>& switches) {
  auto* meta = static_cast<perf_event_mmap_page*>(base);
  const auto* data = static_cast<const unsigned char*>(base) + page;
  const std::uint64_t size = length - page;
  const std::uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  std::uint64_t tail = meta->data_tail;
  while (tail + sizeof(perf_event_header) <= head) {
    perf_event_header header;
    for (std::size_t i = 0; i < sizeof header; ++i)
      reinterpret_cast<unsigned char*>(&header)[i] = data[(tail + i) % size];
    if (header.size < sizeof header || tail + header.size > head) break;
    record.resize(header.size);
    for (std::size_t i = 0; i < header.size; ++i) record[i] = data[(tail + i) % size];
    tail += header.size;
    const unsigned char* p = record.data() + sizeof header;
    if (header.type == PERF_RECORD_LOST) {
      std::uint64_t count = 0;
      std::memcpy(&count, p + 8, sizeof count);  // u64 id, u64 lost
      *lost += count;
      continue;
    }
    if (header.type == PERF_RECORD_SWITCH_CPU_WIDE && switches) {
      // u32 next_prev_pid, next_prev_tid; then sample_id: u32 pid, tid; u64
      // time; u32 cpu, res; u64 identifier.
      if (header.size < sizeof header + 40) continue;
      PerfSwitch sw;
      sw.out = (header.misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
      std::memcpy(&sw.other_tid, p + 4, 4);
      std::memcpy(&sw.tid, p + 12, 4);
      std::memcpy(&sw.time, p + 16, 8);
      std::memcpy(&sw.cpu, p + 24, 4);
      switches(sw);
      continue;
    }
    if (header.type != PERF_RECORD_SAMPLE) continue;
    // The layout sample_type asks for: id; pid, tid; time; cpu, res; raw size, raw.
    PerfSample sample;
    std::memcpy(&sample.id, p, 8);
    std::memcpy(&sample.pid, p + 8, 4);
    std::memcpy(&sample.tid, p + 12, 4);
    std::memcpy(&sample.time, p + 16, 8);
    std::memcpy(&sample.cpu, p + 24, 4);
    std::memcpy(&sample.raw_size, p + 32, 4);
    sample.raw = p + 36;
    if (36 + static_cast<std::size_t>(sample.raw_size) > record.size() - sizeof header) continue;
    take(sample);
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

std::vector<TraceEvent> TraceSession::read(std::uint64_t* lost, bool* full) {
  *lost = 0;
  *full = false;
  std::vector<TraceEvent> events;
  std::vector<unsigned char> record;
  for (auto& ring : impl_->rings) {
    const auto* meta = static_cast<const perf_event_mmap_page*>(ring.base);
    const std::uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    // Nothing was read while recording, so a ring that holds less than a
    // page of free space has filled up, and what came after was dropped.
    if (head - meta->data_tail + impl_->page > ring.length - impl_->page) *full = true;
    // A switch: the outgoing task's record, or, out of idle (which has no
    // records), the incoming task's.
    const auto on_switch = [&](const PerfSwitch& sw) {
      if (!sw.out && sw.other_tid != 0) return;  // the outgoing task's record has it
      TraceEvent e;
      e.ts = sw.time;
      e.cpu = static_cast<int>(sw.cpu);
      e.kind = TraceKind::sched_switch;
      e.a = sw.out ? sw.tid : 0;
      e.b = sw.out ? sw.other_tid : sw.tid;
      e.tid = static_cast<int>(e.a);
      events.push_back(e);
    };
    drain_perf_ring(
        ring.base, ring.length, impl_->page, record, lost,
        [&](const PerfSample& sample) {
          const auto it = impl_->by_id.find(sample.id);
          if (it == impl_->by_id.end()) return;
          if (switch_records_ && it->second.kind == TraceKind::sched_switch) return;
          TraceEvent e;
          e.ts = sample.time;
          e.cpu = static_cast<int>(sample.cpu);
          e.tid = static_cast<int>(sample.tid);
          e.kind = it->second.kind;
          if (it->second.a) e.a = read_tracepoint_field(sample.raw, sample.raw_size, *it->second.a);
          if (it->second.b) e.b = read_tracepoint_field(sample.raw, sample.raw_size, *it->second.b);
          events.push_back(e);
        },
        switch_records_ ? std::function<void(const PerfSwitch&)>(on_switch) : nullptr);
  }
  std::stable_sort(events.begin(), events.end(), [](const TraceEvent& x, const TraceEvent& y) { return x.ts < y.ts; });
  return events;
}

}  // namespace ctx
