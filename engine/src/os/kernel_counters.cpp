#include "os/kernel_counters.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace ctx {

SampleCounters difference(const CounterSnapshot& before, const CounterSnapshot& after) {
  SampleCounters s;
  auto minus = [](std::uint64_t a, std::uint64_t b) { return a >= b ? static_cast<double>(a - b) : 0.0; };
  s.wall_ns = minus(after.at_ns, before.at_ns);
  const std::size_t n = std::min(before.tasks.size(), after.tasks.size());
  for (std::size_t t = 0; t < n; ++t) {
    s.exec_ns += minus(after.tasks[t].exec_ns, before.tasks[t].exec_ns);
    s.run_delay_ns += minus(after.tasks[t].run_delay_ns, before.tasks[t].run_delay_ns);
    s.involuntary += std::max(0L, after.tasks[t].involuntary - before.tasks[t].involuntary);
    if (t > 0) s.partner_runs += std::max(0L, after.tasks[t].runs - before.tasks[t].runs);
  }
  s.counted = 1;
  s.steal_ns = minus(after.steal_ns, before.steal_ns);
  return s;
}

std::optional<SetAsideReason> judge_sample(const SampleCounters& sample, Sharing sharing) {
  switch (sharing) {
    case Sharing::one_cpu: {
      if (sample.wall_ns <= 0) return std::nullopt;
      const double other = sample.wall_ns - sample.exec_ns;
      if (other <= other_share_limit * sample.wall_ns) return std::nullopt;
      return sample.steal_ns > 0 ? SetAsideReason::steal : SetAsideReason::cpu_taken;
    }
    case Sharing::own_cpus:
      if (sample.involuntary > 0) return SetAsideReason::preempted;
      if (sample.wall_ns > 0 && sample.run_delay_ns > own_cpus_wait_limit * sample.wall_ns)
        return sample.steal_ns > 0 ? SetAsideReason::steal : SetAsideReason::cpu_taken;
      if (sample.steal_ns > 0) return SetAsideReason::steal;
      return std::nullopt;
    case Sharing::unknown:
      if (sample.steal_ns > 0) return SetAsideReason::steal;
      return std::nullopt;
  }
  return std::nullopt;
}

namespace {

// Reads a whole small /proc file from offset 0 into buf; the length, or -1.
ssize_t read_all(int fd, char* buf, std::size_t size) {
  if (fd < 0) return -1;
  const ssize_t got = pread(fd, buf, size - 1, 0);
  if (got < 0) return -1;
  buf[got] = '\0';
  return got;
}

std::uint64_t nanoseconds_of(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

// USER_HZ ticks to ns.
std::uint64_t ticks_to_ns(std::uint64_t ticks) {
  static const long hz = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
  return ticks * (1000000000ull / static_cast<std::uint64_t>(hz));
}

// The numbers after "cpuN" on each CPU line of /proc/stat.
std::vector<std::pair<int, std::vector<std::uint64_t>>> cpu_lines(const std::string& text) {
  std::vector<std::pair<int, std::vector<std::uint64_t>>> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    fields >> cpu;
    std::vector<std::uint64_t> values;
    std::uint64_t v = 0;
    while (fields >> v) values.push_back(v);
    out.emplace_back(cpu, std::move(values));
  }
  return out;
}

}  // namespace

std::vector<std::pair<int, std::uint64_t>> busy_ticks(const std::string& proc_stat) {
  // user nice system idle iowait irq softirq steal guest guest_nice
  std::vector<std::pair<int, std::uint64_t>> out;
  for (const auto& [cpu, v] : cpu_lines(proc_stat)) {
    std::uint64_t busy = 0;
    for (const std::size_t k : {0u, 1u, 2u, 5u, 6u, 7u})
      if (k < v.size()) busy += v[k];
    out.emplace_back(cpu, busy);
  }
  return out;
}

std::vector<std::pair<int, std::uint64_t>> steal_ticks(const std::string& proc_stat) {
  std::vector<std::pair<int, std::uint64_t>> out;
  for (const auto& [cpu, v] : cpu_lines(proc_stat)) out.emplace_back(cpu, v.size() > 7 ? v[7] : 0);
  return out;
}

CpuChoice least_busy_cpu(const std::vector<int>& allowed, const std::vector<std::pair<int, std::uint64_t>>& before,
                         const std::vector<std::pair<int, std::uint64_t>>& after, double window_s) {
  CpuChoice choice;
  auto find = [](const std::vector<std::pair<int, std::uint64_t>>& v, int cpu) -> std::optional<std::uint64_t> {
    for (const auto& [c, ticks] : v)
      if (c == cpu) return ticks;
    return std::nullopt;
  };
  std::uint64_t least = 0;
  std::vector<std::string> shares;
  for (const int cpu : allowed) {
    const auto b = find(before, cpu), a = find(after, cpu);
    if (!a || !b) continue;
    const std::uint64_t busy = *a >= *b ? *a - *b : 0;
    const double share = window_s > 0 ? static_cast<double>(ticks_to_ns(busy)) / (window_s * 1e9) : 0;
    shares.push_back(fmt::format("CPU {} {:.0f}%", cpu, 100 * std::min(share, 1.0)));
    if (choice.cpu < 0 || busy < least) {
      choice.cpu = cpu;
      least = busy;
    }
  }
  if (choice.cpu < 0) return choice;
  choice.why =
      fmt::format("the allowed CPU with the least other work just before the variant (busy over {:.0f} ms: {})",
                  window_s * 1e3, fmt::join(shares, ", "));
  return choice;
}

std::string read_proc_stat() {
  const int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text(16384, '\0');
  const ssize_t got = pread(fd, text.data(), text.size(), 0);
  close(fd);
  text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return text;
}

ProcCounters::ProcCounters() { stat_fd_ = open("/proc/stat", O_RDONLY | O_CLOEXEC); }

ProcCounters::~ProcCounters() {
  if (stat_fd_ >= 0) close(stat_fd_);
  for (auto& o : open_) {
    if (o.schedstat >= 0) close(o.schedstat);
    if (o.status >= 0) close(o.status);
  }
}

ProcCounters::Open& ProcCounters::files_of(const TaskId& task, bool involuntary) {
  auto it = std::find_if(open_.begin(), open_.end(), [&](const Open& o) { return o.tid == task.tid; });
  if (it == open_.end()) {
    // A thread id can be reused once its thread is gone: the files of ids no
    // longer asked for are closed when there are many (a variant ends, the next
    // starts new partners).
    if (open_.size() > 64) {
      for (auto& o : open_) {
        if (o.schedstat >= 0) close(o.schedstat);
        if (o.status >= 0) close(o.status);
      }
      open_.clear();
    }
    Open o;
    o.tid = task.tid;
    const std::string dir = fmt::format("/proc/{}/task/{}/", task.pid, task.tid);
    o.schedstat = open((dir + "schedstat").c_str(), O_RDONLY | O_CLOEXEC);
    open_.push_back(o);
    it = open_.end() - 1;
  }
  if (involuntary && it->status < 0)
    it->status = open(fmt::format("/proc/{}/task/{}/status", task.pid, task.tid).c_str(), O_RDONLY | O_CLOEXEC);
  return *it;
}

CounterSnapshot ProcCounters::read(const std::vector<TaskId>& tasks, const std::vector<int>& cpus, bool involuntary) {
  CounterSnapshot snap;
  snap.ok = true;
  char buf[4096];
  snap.tasks.resize(tasks.size());
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    TaskCounters& c = snap.tasks[t];
    Open& files = files_of(tasks[t], involuntary && t > 0);
    if (read_all(files.schedstat, buf, sizeof buf) > 0) {
      char* end = nullptr;
      c.exec_ns = std::strtoull(buf, &end, 10);
      c.run_delay_ns = std::strtoull(end, &end, 10);
      c.runs = std::strtol(end, nullptr, 10);
    } else {
      snap.ok = false;
    }
    if (t == 0) {
      // The calling thread: its CPU time brought up to date, and the wall clock beside it.
      c.exec_ns = nanoseconds_of(CLOCK_THREAD_CPUTIME_ID);
      snap.at_ns = nanoseconds_of(CLOCK_MONOTONIC_RAW);
      if (involuntary) {
        rusage usage{};
        getrusage(RUSAGE_THREAD, &usage);
        c.involuntary = usage.ru_nivcsw;
      }
    } else if (involuntary) {
      if (read_all(files.status, buf, sizeof buf) > 0) {
        if (const char* at = std::strstr(buf, "nonvoluntary_ctxt_switches:"))
          c.involuntary = std::strtol(at + std::strlen("nonvoluntary_ctxt_switches:"), nullptr, 10);
      } else {
        snap.ok = false;
      }
    }
  }
  if (!cpus.empty()) {
    std::string text(16384, '\0');
    const ssize_t got = stat_fd_ >= 0 ? pread(stat_fd_, text.data(), text.size(), 0) : -1;
    if (got > 0) {
      text.resize(static_cast<std::size_t>(got));
      for (const auto& [cpu, ticks] : steal_ticks(text))
        if (std::find(cpus.begin(), cpus.end(), cpu) != cpus.end()) snap.steal_ns += ticks_to_ns(ticks);
    } else {
      snap.ok = false;
    }
  }
  return snap;
}

}  // namespace ctx
