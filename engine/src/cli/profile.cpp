// `ctxbench-engine profile` (profile.hpp): runs or attaches to a program,
// counts with profile_events, and writes the profile record.
#include "cli/profile.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#if CTXBENCH_HAVE_LIBSECCOMP
#include <seccomp.h>
#endif

#include "cli/exits.hpp"
#include "model/record.hpp"
#include "model/stats.hpp"
#include "os/env.hpp"
#include "os/timer.hpp"
#include "report/output.hpp"
#include "trace/trace.hpp"

namespace ctx {

namespace {

constexpr std::size_t top_calls = 25;
constexpr std::size_t top_threads = 16;
constexpr int poll_ms = 100;

double timeval_seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; }

// The CPUs online (/sys/devices/system/cpu/online: "0-3,6"): a profiled task
// may run on any of them, and each needs its ring.
std::vector<int> online_cpus() {
  std::ifstream in("/sys/devices/system/cpu/online");
  std::string text;
  std::vector<int> cpus;
  if (!(in >> text)) {
    for (long i = 0; i < sysconf(_SC_NPROCESSORS_ONLN); ++i) cpus.push_back(static_cast<int>(i));
    return cpus;
  }
  std::stringstream ranges(text);
  std::string range;
  while (std::getline(ranges, range, ',')) {
    int first = 0, last = 0;
    const int got = std::sscanf(range.c_str(), "%d-%d", &first, &last);
    if (got == 1) last = first;
    for (int cpu = first; got >= 1 && cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  return cpus;
}

std::vector<pid_t> task_ids(pid_t pid) {
  std::vector<pid_t> tids;
  DIR* dir = opendir(fmt::format("/proc/{}/task", pid).c_str());
  if (!dir) return tids;
  while (const dirent* entry = readdir(dir))
    if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9') tids.push_back(std::atoi(entry->d_name));
  closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

// The run-queue wait so far of each of `pid`'s threads (schedstat, second field, ns).
void read_run_delays(pid_t pid, std::map<pid_t, std::uint64_t>& delays) {
  for (pid_t tid : task_ids(pid)) {
    std::ifstream in(fmt::format("/proc/{}/task/{}/schedstat", pid, tid));
    std::uint64_t run = 0, wait = 0;
    if (in >> run >> wait) delays[tid] = wait;
  }
}

// A thread's voluntary and involuntary switches so far (/proc/.../status).
std::pair<std::uint64_t, std::uint64_t> thread_switch_counts(pid_t pid, pid_t tid) {
  std::ifstream in(fmt::format("/proc/{}/task/{}/status", pid, tid));
  std::string line;
  std::uint64_t voluntary = 0, involuntary = 0;
  while (std::getline(in, line)) {
    if (line.rfind("voluntary_ctxt_switches:", 0) == 0) voluntary = std::stoull(line.substr(24));
    if (line.rfind("nonvoluntary_ctxt_switches:", 0) == 0) involuntary = std::stoull(line.substr(27));
  }
  return {voluntary, involuntary};
}

// /proc/<pid>/stat's process-wide counts (the ended threads' included).
struct ProcStat {
  std::uint64_t minflt = 0, majflt = 0;
  double user_s = 0, system_s = 0;
  bool ok = false;
};
ProcStat read_proc_stat_of(pid_t pid) {
  ProcStat stat;
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!std::getline(in, text)) return stat;
  const auto close = text.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return stat;
  std::istringstream fields(text.substr(close + 2));
  std::vector<std::string> f;
  std::string field;
  while (fields >> field) f.push_back(field);
  // From the state (field 3) on: minflt 10, majflt 12, utime 14, stime 15.
  if (f.size() < 13) return stat;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  stat.minflt = std::stoull(f[10 - 3]);
  stat.majflt = std::stoull(f[12 - 3]);
  stat.user_s = std::stod(f[14 - 3]) / tick;
  stat.system_s = std::stod(f[15 - 3]) / tick;
  stat.ok = true;
  return stat;
}

uid_t owner_of(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Uid:", 0) == 0) return static_cast<uid_t>(std::stoul(line.substr(4)));
  return static_cast<uid_t>(-1);
}

int write_record(const ProfileOptions& options, const nlohmann::json& record) {
  const std::string line = record.dump() + "\n";
  if (options.out.empty()) return print_checked(line);
  FILE* file = std::fopen(options.out.c_str(), "w");
  if (!file) {
    diagnostic(fmt::format("error: cannot write {}: {}", options.out, std::strerror(errno)));
    return exit_output;
  }
  const bool written = std::fwrite(line.data(), 1, line.size(), file) == line.size();
  const int error = errno;
  if (std::fclose(file) != 0 || !written) {
    diagnostic(fmt::format("error: writing {}: {}", options.out, std::strerror(written ? errno : error)));
    std::remove(options.out.c_str());
    return exit_output;
  }
  return 0;
}

// The tracefs directory, mounted in the engine's own mount namespace where it
// is not mounted and the engine is root; empty (and a note) where none is.
std::string tracefs_for_profile(std::vector<std::string>* notes) {
  bool mounted = false;
  if (const auto problem = prepare_tracing(&mounted); problem) {
    notes->push_back(fmt::format("tracefs: {}", *problem));
    return "";
  }
  std::string why;
  const auto root = find_tracefs(&why);
  return root ? *root : "";
}

nlohmann::json count_or_null(const std::optional<std::uint64_t>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json seconds_or_null(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// Wake-up latencies in place (ns samples) as microseconds: how many and their
// quantiles; null when there are none.
nlohmann::json latency_summary(const std::vector<std::uint64_t>& ns) {
  if (ns.empty()) return nullptr;
  std::vector<double> us;
  us.reserve(ns.size());
  for (std::uint64_t v : ns) us.push_back(static_cast<double>(v) / 1e3);
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return percentile_sorted(us, q); };
  return {{"n", us.size()},     {"p10_us", at(0.10)}, {"p25_us", at(0.25)}, {"median_us", at(0.5)},
          {"p75_us", at(0.75)}, {"p90_us", at(0.90)}, {"max_us", us.back()}};
}

// A thread's counts from the samples, as the record's threads and execs give them.
nlohmann::json thread_json(int tid, const ThreadTally& t) {
  return {{"tid", tid},
          {"voluntary_switches", t.voluntary},
          {"involuntary_switches", t.involuntary},
          {"syscalls", t.syscalls},
          {"wakeups", t.wakeups},
          {"migrations", t.migrations}};
}

// The first execs of the program's tasks the record lists.
constexpr std::size_t max_execs = 64;

}  // namespace

std::string syscall_name(std::int64_t number) {
#if CTXBENCH_HAVE_LIBSECCOMP
  if (char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, static_cast<int>(number))) {
    std::string copy(name);
    std::free(name);
    return copy;
  }
#endif
  return fmt::format("nr {}", number);
}

namespace {

// The counts and, beside them, where each came from: perf's counters, the
// samples, or the kernel's accounting (rusage or /proc); null where none.
void put_counts(const ProfileInputs& in, nlohmann::json& counts, nlohmann::json& sources) {
  const SampleTally* tally = in.tally;
  const ProfileAccounting& acc = in.accounting;
  auto put = [&](const char* name, std::optional<std::uint64_t> value, const char* source) {
    counts[name] = count_or_null(value);
    sources[name] = value ? nlohmann::json(source) : nlohmann::json(nullptr);
  };
  const char* perf = "perf_counter";
  const char* sampled = "samples";
  const char* accounting = acc.source == "proc" ? "proc" : "rusage";
  put("context_switches", in.counters.context_switches, perf);
  if (tally) {
    put("voluntary_switches", tally->voluntary, sampled);
    put("involuntary_switches", tally->involuntary, sampled);
  } else {
    put("voluntary_switches", acc.voluntary, accounting);
    put("involuntary_switches", acc.involuntary, accounting);
  }
  put("migrations", in.counters.migrations, perf);
  put("page_faults", in.counters.page_faults, perf);
  if (in.counters.minor_faults) {
    put("minor_faults", in.counters.minor_faults, perf);
    put("major_faults", in.counters.major_faults, perf);
  } else {
    put("minor_faults", acc.minor_faults, accounting);
    put("major_faults", acc.major_faults, accounting);
  }
  if (!in.counters.page_faults && acc.minor_faults && acc.major_faults)
    put("page_faults", *acc.minor_faults + *acc.major_faults, accounting);
  put("syscalls", in.counters.syscalls, perf);
  put("creations", in.counters.creations, perf);
  put("signals", in.counters.signals, perf);
  auto from_tally = [&](std::uint64_t SampleTally::*field) -> std::optional<std::uint64_t> {
    if (!tally) return std::nullopt;
    return tally->*field;
  };
  put("threads_created", from_tally(&SampleTally::threads_created), sampled);
  put("processes_created", from_tally(&SampleTally::processes_created), sampled);
  put("wakeups", from_tally(&SampleTally::wakeups), sampled);
  put("wakeups_same_cpu", from_tally(&SampleTally::same_cpu), sampled);
  put("wakeups_cross_cpu", from_tally(&SampleTally::cross_cpu), sampled);
  const bool in_place = tally && tally->in_place();
  put("wakeups_idle_target", in_place ? std::optional(tally->idle_target) : std::nullopt, sampled);
  put("wakeups_busy_target", in_place ? std::optional(tally->busy_target) : std::nullopt, sampled);
}

// The wake-up latencies in place, by where the woken task ran; null when
// they were not taken.
nlohmann::json wakeup_latency_json(const SampleTally* tally) {
  if (!tally || !tally->in_place()) return nullptr;
  return {{"all", latency_summary(tally->latency_all)},
          {"same_cpu", latency_summary(tally->latency_same_cpu)},
          {"cross_cpu", latency_summary(tally->latency_cross_cpu)},
          {"idle_target", latency_summary(tally->latency_idle_target)},
          {"busy_target", latency_summary(tally->latency_busy_target)}};
}

// The most made system calls, most first.
nlohmann::json syscalls_by_call_json(const SampleTally& tally) {
  nlohmann::json calls = nlohmann::json::array();
  std::vector<std::pair<std::int64_t, std::uint64_t>> by_count(tally.syscalls_by_call.begin(),
                                                               tally.syscalls_by_call.end());
  std::stable_sort(by_count.begin(), by_count.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  for (std::size_t i = 0; i < by_count.size() && i < top_calls; ++i)
    calls.push_back(
        {{"nr", by_count[i].first}, {"name", syscall_name(by_count[i].first)}, {"count", by_count[i].second}});
  return calls;
}

// The most switching threads, and the command's (or attached process's)
// first thread `pid` wherever it ranks.
nlohmann::json threads_json(const SampleTally& tally, int pid) {
  nlohmann::json threads = nlohmann::json::array();
  std::vector<std::pair<int, ThreadTally>> by_switches(tally.threads.begin(), tally.threads.end());
  std::stable_sort(by_switches.begin(), by_switches.end(), [](const auto& x, const auto& y) {
    return x.second.voluntary + x.second.involuntary > y.second.voluntary + y.second.involuntary;
  });
  for (std::size_t i = 0; i < by_switches.size(); ++i) {
    const auto& [tid, t] = by_switches[i];
    if (i >= top_threads && tid != pid) continue;
    threads.push_back(thread_json(tid, t));
  }
  return threads;
}

// The first execs of the program's tasks, each with its counts before it.
nlohmann::json execs_json(const SampleTally& tally) {
  nlohmann::json execs = nlohmann::json::array();
  for (std::size_t i = 0; i < tally.execs.size() && i < max_execs; ++i)
    execs.push_back(thread_json(tally.execs[i].tid, tally.execs[i].before));
  return execs;
}

}  // namespace

nlohmann::json profile_to_json(const ProfileInputs& in) {
  const SampleTally* tally = in.tally;
  const ProfileAccounting& acc = in.accounting;
  nlohmann::json counts;
  nlohmann::json sources;
  put_counts(in, counts, sources);
  const nlohmann::json latency = wakeup_latency_json(tally);
  const nlohmann::json calls = tally ? syscalls_by_call_json(*tally) : nlohmann::json::array();
  const nlohmann::json threads = tally ? threads_json(*tally, in.pid) : nlohmann::json::array();
  const nlohmann::json execs = tally ? execs_json(*tally) : nlohmann::json(nullptr);

  nlohmann::json record = {
      {"schema", 2},
      {"kind", "profile"},
      {"run_id", in.run_id},
      {"producer", fmt::format("ctxbench-engine {}", CTXBENCH_VERSION)},
      {"started_at", in.started_at},
      {"finished_at", in.finished_at},
      {"env", in.env},
      {"target",
       {{"command", in.command.empty() ? nlohmann::json(nullptr) : nlohmann::json(in.command)},
        {"pid", in.pid},
        {"duration_s", seconds_or_null(in.duration_s)}}},
      {"ended", in.ended},
      {"exit_status", in.exit_status ? nlohmann::json(*in.exit_status) : nlohmann::json(nullptr)},
      {"signal", in.signal ? nlohmann::json(*in.signal) : nlohmann::json(nullptr)},
      {"wall_s", in.wall_s},
      {"cpu_user_s", seconds_or_null(acc.user_s)},
      {"cpu_system_s", seconds_or_null(acc.system_s)},
      {"run_queue_wait_s", seconds_or_null(acc.run_queue_wait_s)},
      {"counts", counts},
      {"sources", sources},
      {"wakeup_latency", latency},
      {"syscalls_by_call", calls},
      {"threads", threads},
      {"execs", execs},
      {"samples",
       {{"taken", tally != nullptr},
        {"lost", in.lost},
        {"duplicates", tally ? tally->duplicates : 0},
        {"complete", tally != nullptr && in.lost == 0}}},
      {"notes", in.notes},
  };
  return record;
}

namespace {

// The loop both ways of profiling share: drains the rings until `done`
// (polled: the target's pidfd readable, or the window over), taking signals
// to the engine (SIGINT, SIGTERM, SIGHUP: blocked in main) from `signals`.
struct Loop {
  ProfileEvents* events = nullptr;
  SampleTally* tally = nullptr;
  int pidfd = -1;
  int signals = -1;
  std::uint64_t deadline_ns = 0;  // 0: none
  std::function<void()> every_poll;
  std::function<void(int)> on_signal;  // a signal came (the loop goes on until the pidfd or deadline)

  // true when the target ended (pidfd), false at the deadline.
  bool run() {
    for (;;) {
      std::vector<pollfd> fds = {{pidfd, POLLIN, 0}, {signals, POLLIN, 0}};
      if (events)
        for (int fd : events->ring_fds()) fds.push_back({fd, POLLIN, 0});
      int timeout = poll_ms;
      if (deadline_ns) {
        const std::uint64_t now = monotonic_raw_ns();
        if (now >= deadline_ns) return false;
        timeout = static_cast<int>(std::min<std::uint64_t>(poll_ms, (deadline_ns - now) / 1000000 + 1));
      }
      poll(fds.data(), fds.size(), timeout);
      if (events && tally) {
        const std::uint64_t now = monotonic_raw_ns();
        events->drain(*tally);
        // A sample may still be written to a ring already drained: those of
        // the last 20 ms wait for the next round.
        tally->settle(now > 20000000 ? now - 20000000 : 0);
      }
      if (every_poll) every_poll();
      if (fds[1].revents & POLLIN) {
        signalfd_siginfo info{};
        if (::read(signals, &info, sizeof info) == sizeof info && on_signal)
          on_signal(static_cast<int>(info.ssi_signo));
      }
      if (fds[0].revents & POLLIN) return true;
    }
  }
};

int signal_fd() {
  sigset_t handled;
  sigemptyset(&handled);
  sigaddset(&handled, SIGINT);
  sigaddset(&handled, SIGTERM);
  sigaddset(&handled, SIGHUP);
  return signalfd(-1, &handled, SFD_CLOEXEC);
}

int pidfd_of(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

nlohmann::json profile_environment(const std::string& run_id) {
  std::string note;
  auto clock = make_best_clock(0.05, &note);
  return capture_environment(run_id, characterize(*clock), note);
}

const char* target_idle_note =
    "whether a wake-up found its target CPU idle, and its latency in place, are not counted: --trace records "
    "every CPU's switches, which say so";
const char* in_place_note =
    "wake-up latency in place: from sched_waking, on the waker's CPU, to the switch that runs the woken task (perf's "
    "switch records of every CPU) "
    "(a cross-CPU one includes the interrupt that tells the target CPU; perf sched timehist's 'sch delay' starts "
    "later, at sched_wakeup on the target); a wake-up found the target CPU idle when that CPU's last switch was to "
    "its idle task; a wake-up of a task that had not yet left its CPU has no latency";

// Opens the events, and the notes for what --trace adds.
std::unique_ptr<ProfileEvents> open_events(const std::vector<pid_t>& tasks, const std::string& tracefs, bool on_exec,
                                           bool trace, ProfileInputs& in, std::string* why, bool* denied) {
  auto events = ProfileEvents::open(tasks, online_cpus(), tracefs, on_exec, trace, &in.notes, why, denied);
  // Asked for and refused, the events' own note says why: one statement.
  if (!trace) in.notes.push_back(target_idle_note);
  if (trace && events && events->in_place()) in.notes.push_back(in_place_note);
  return events;
}

// The events' counts and samples, all of them: `tally` takes what is left in
// the rings.
void take_event_counts(ProfileEvents& events, SampleTally& tally, ProfileInputs& in) {
  events.drain(tally);
  tally.settle_all();
  in.counters = events.read();
  in.lost = events.lost();
}

void note_lost_samples(ProfileInputs& in) {
  if (in.lost)
    in.notes.push_back(
        fmt::format("{} samples were lost (a ring filled): the split counts are short by "
                    "that many events; the totals are exact",
                    in.lost));
}

// Forks the command, held until a byte comes on `release`; the child writes
// errno to `exec_error` when its exec fails. -1 when it cannot fork.
pid_t fork_held_command(const std::vector<std::string>& command, const int release[2], const int exec_error[2]) {
  std::vector<char*> argv;
  for (const auto& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const pid_t child = fork();
  if (child != 0) return child;
  // The program gets the signals as a shell would give them: default
  // dispositions (the engine ignores SIGPIPE), nothing blocked.
  for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  close(release[1]);
  close(exec_error[0]);
  char go = 0;
  if (::read(release[0], &go, 1) != 1) _exit(127);  // the engine went away first
  execvp(argv[0], argv.data());
  const int error = errno;
  [[maybe_unused]] auto written = ::write(exec_error[1], &error, sizeof error);
  _exit(127);
}

// The command's accounting from its rusage, and the run-queue wait of its
// threads read while it ran.
void rusage_accounting(const rusage& usage, const std::map<pid_t, std::uint64_t>& run_delays, ProfileInputs& in) {
  ProfileAccounting& acc = in.accounting;
  acc.source = "rusage";
  acc.user_s = timeval_seconds(usage.ru_utime);
  acc.system_s = timeval_seconds(usage.ru_stime);
  acc.voluntary = static_cast<std::uint64_t>(usage.ru_nvcsw);
  acc.involuntary = static_cast<std::uint64_t>(usage.ru_nivcsw);
  acc.minor_faults = static_cast<std::uint64_t>(usage.ru_minflt);
  acc.major_faults = static_cast<std::uint64_t>(usage.ru_majflt);
  std::uint64_t waited = 0;
  for (const auto& [tid, delay] : run_delays) waited += delay;
  acc.run_queue_wait_s = static_cast<double>(waited) / 1e9;
  in.notes.push_back(fmt::format(
      "run-queue wait: the command's own threads, read every {} ms (a thread's last {} ms before it ended, and child "
      "processes, are not in it)",
      poll_ms, poll_ms));
}

// How the command ended, from its wait status.
void note_how_it_ended(int status, ProfileInputs& in) {
  if (WIFEXITED(status)) {
    in.exit_status = WEXITSTATUS(status);
    if (in.ended.empty()) in.ended = "exited";
  } else if (WIFSIGNALED(status)) {
    in.signal = WTERMSIG(status);
    if (in.ended.empty()) in.ended = "killed";
  }
}

// Forks the command held (fork_held_command), with the pipes that hold it
// and report its exec; -1 (and a diagnostic) when it cannot.
pid_t start_held_command(const std::vector<std::string>& command, int release[2], int exec_error[2]) {
  if (pipe2(release, O_CLOEXEC) != 0 || pipe2(exec_error, O_CLOEXEC) != 0) {
    diagnostic(fmt::format("error: pipe: {}", std::strerror(errno)));
    return -1;
  }
  const pid_t child = fork_held_command(command, release, exec_error);
  if (child < 0) {
    diagnostic(fmt::format("error: fork: {}", std::strerror(errno)));
    return -1;
  }
  close(release[0]);
  close(exec_error[1]);
  return child;
}

// Lets the held command go: the errno of its exec when that failed.
std::optional<int> let_command_go(const int release[2], const int exec_error[2]) {
  [[maybe_unused]] auto go = ::write(release[1], "x", 1);
  close(release[1]);
  int error = 0;
  const ssize_t got = ::read(exec_error[0], &error, sizeof error);
  close(exec_error[0]);
  if (got == sizeof error) return error;
  return std::nullopt;
}

// The events of the command `child`, or none and a note on what counts instead.
std::unique_ptr<ProfileEvents> open_command_events(pid_t child, bool trace, ProfileInputs& in) {
  const std::string tracefs = tracefs_for_profile(&in.notes);
  std::string why;
  bool denied = false;
  auto events = open_events({child}, tracefs, true, trace, in, &why, &denied);
  if (!events)
    in.notes.push_back(
        fmt::format("no perf event counted ({}); counted instead by the kernel's rusage of the "
                    "program: switches (voluntary, involuntary), faults (minor, major), CPU time",
                    why));
  return events;
}

int profile_running(const ProfileOptions& options) {
  const std::vector<std::string>& command = options.command;
  ProfileInputs in;
  in.run_id = new_run_id();
  in.env = profile_environment(in.run_id);
  in.command = command;
  in.started_at = utc_now_iso();

  int release[2], exec_error[2];
  const pid_t child = start_held_command(command, release, exec_error);
  if (child < 0) return exit_failure;
  in.pid = child;

  auto events = open_command_events(child, options.trace, in);
  SampleTally tally({child});
  const bool sampling = events && events->sampling();
  if (sampling && events->in_place()) tally.track_cpus();
  if (!sampling)
    in.notes.push_back("voluntary and involuntary switches from rusage (the program and the children it waited for)");

  const std::uint64_t start = monotonic_raw_ns();
  // Every CPU's events start before the program is let go: started after,
  // a loaded machine can keep the engine off the CPU while the program's
  // first wake-ups go by (seen: 196 of 3009 missed, perf saw them). What they
  // record of the child before its exec is left out by the tally.
  if (events) events->enable_whole_cpu();
  if (sampling) tally.wait_for_exec();
  if (const auto error = let_command_go(release, exec_error)) {
    waitpid(child, nullptr, 0);
    return usage_error(
        fmt::format("cannot run '{}': {}; give a program on PATH or its path", command.front(), std::strerror(*error)));
  }

  Loop loop;
  loop.events = events.get();
  loop.tally = sampling ? &tally : nullptr;
  loop.pidfd = pidfd_of(child);
  loop.signals = signal_fd();
  std::map<pid_t, std::uint64_t> run_delays;
  loop.every_poll = [&] { read_run_delays(child, run_delays); };
  int signals_seen = 0;
  loop.on_signal = [&](int sig) {
    // Ctrl-C reaches the program too when it shares the terminal; a signal
    // sent to the engine alone is passed on. A second one kills it.
    ++signals_seen;
    kill(child, signals_seen > 1 ? SIGKILL : sig);
    in.ended = "interrupted";
  };
  if (loop.pidfd < 0 || loop.signals < 0) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    diagnostic(fmt::format("error: pidfd_open/signalfd: {}", std::strerror(errno)));
    return exit_failure;
  }
  loop.run();
  int status = 0;
  rusage usage{};
  wait4(child, &status, 0, &usage);
  const std::uint64_t end = monotonic_raw_ns();
  close(loop.pidfd);
  close(loop.signals);

  in.wall_s = static_cast<double>(end - start) / 1e9;
  in.finished_at = utc_now_iso();
  note_how_it_ended(status, in);
  if (events) {
    events->disable();
    take_event_counts(*events, tally, in);
  }
  in.tally = sampling ? &tally : nullptr;
  note_lost_samples(in);
  rusage_accounting(usage, run_delays, in);
  return write_record(options, profile_to_json(in));
}

// What the kernel counted of an attached process between two readings of
// /proc: its CPU time and faults, its threads' switches and run-queue wait.
struct ProcReading {
  ProcStat stat;
  std::map<pid_t, std::pair<std::uint64_t, std::uint64_t>> switches;  // thread -> (voluntary, involuntary)
  std::map<pid_t, std::uint64_t> run_delays;                          // thread -> ns waited
};

void proc_accounting(const ProcReading& before, const ProcReading& after, ProfileInputs& in) {
  ProfileAccounting& acc = in.accounting;
  acc.source = "proc";
  if (!before.stat.ok || !after.stat.ok) {
    in.notes.push_back("CPU time not counted: the process ended before its /proc entry could be read again");
    return;
  }
  acc.user_s = after.stat.user_s - before.stat.user_s;
  acc.system_s = after.stat.system_s - before.stat.system_s;
  acc.minor_faults = after.stat.minflt - before.stat.minflt;
  acc.major_faults = after.stat.majflt - before.stat.majflt;
  std::uint64_t voluntary = 0, involuntary = 0;
  for (const auto& [tid, switched] : after.switches) {
    const auto it = before.switches.find(tid);
    const auto earlier = it != before.switches.end() ? it->second : std::pair<std::uint64_t, std::uint64_t>{};
    voluntary += switched.first - earlier.first;
    involuntary += switched.second - earlier.second;
  }
  acc.voluntary = voluntary;
  acc.involuntary = involuntary;
  std::uint64_t waited = 0;
  for (const auto& [tid, delay] : after.run_delays) {
    const auto it = before.run_delays.find(tid);
    waited += delay - (it != before.run_delays.end() ? it->second : 0);
  }
  acc.run_queue_wait_s = static_cast<double>(waited) / 1e9;
  in.notes.push_back(
      "CPU time, faults and run-queue wait from /proc: the process's threads only (its children's in CPU time "
      "once it has waited for them)");
}

int profile_attached(const ProfileOptions& options) {
  const pid_t pid = options.pid;
  if (kill(pid, 0) != 0 && errno == ESRCH)
    return usage_error(fmt::format("--pid {}: no such process; give the PID of a running process", pid));
  if (geteuid() != 0 && owner_of(pid) != geteuid())
    return usage_error(
        fmt::format("--pid {}: the process belongs to another user; profile your own processes, or run as root", pid));
  const int pidfd = pidfd_of(pid);
  if (pidfd < 0)
    return usage_error(fmt::format("--pid {}: {}; give the PID of a running process", pid, std::strerror(errno)));

  ProfileInputs in;
  in.run_id = new_run_id();
  in.env = profile_environment(in.run_id);
  in.pid = pid;
  in.duration_s = options.duration;
  in.started_at = utc_now_iso();
  const std::string tracefs = tracefs_for_profile(&in.notes);

  // Threads made while the events open are followed if an opened one made
  // them (inherit); one made by a thread not yet opened is caught by looking again.
  std::vector<pid_t> tids = task_ids(pid);
  std::string why;
  bool denied = false;
  auto events = open_events(tids, tracefs, false, options.trace, in, &why, &denied);
  if (!events)
    in.notes.push_back(
        fmt::format("no perf event counted ({}); counted instead from /proc: switches (voluntary, "
                    "involuntary), faults (minor, major), CPU time",
                    why));
  if (events && task_ids(pid) != tids)
    in.notes.push_back("threads started while the events were opened may be missing from the counts");
  std::set<int> own(tids.begin(), tids.end());
  SampleTally tally(own);
  const bool sampling = events && events->sampling();
  if (sampling && events->in_place()) tally.track_cpus();

  ProcReading before, after;
  before.stat = read_proc_stat_of(pid);
  read_run_delays(pid, before.run_delays);
  for (pid_t tid : tids) before.switches[tid] = thread_switch_counts(pid, tid);
  if (events) events->enable();
  const std::uint64_t start = monotonic_raw_ns();

  Loop loop;
  loop.events = events.get();
  loop.tally = sampling ? &tally : nullptr;
  loop.pidfd = pidfd;
  loop.signals = signal_fd();
  loop.deadline_ns = start + static_cast<std::uint64_t>(options.duration * 1e9);
  loop.every_poll = [&] { read_run_delays(pid, after.run_delays); };
  loop.on_signal = [&](int) {
    in.ended = "interrupted";
    loop.deadline_ns = 1;  // ends at the next round; the program is left running
  };
  const bool target_ended = loop.run();
  if (events) events->disable();
  const std::uint64_t end = monotonic_raw_ns();
  after.stat = read_proc_stat_of(pid);
  for (pid_t tid : task_ids(pid)) after.switches[tid] = thread_switch_counts(pid, tid);
  close(pidfd);
  close(loop.signals);

  in.wall_s = static_cast<double>(end - start) / 1e9;
  in.finished_at = utc_now_iso();
  if (in.ended.empty()) in.ended = target_ended ? "target_ended" : "window";
  if (events) take_event_counts(*events, tally, in);
  in.tally = sampling ? &tally : nullptr;
  proc_accounting(before, after, in);
  note_lost_samples(in);
  return write_record(options, profile_to_json(in));
}

}  // namespace

int profile_command(const ProfileOptions& options) {
  if (options.pid != 0) {
    if (!options.command.empty())
      return usage_error("profile: give either --pid PID --duration S, or -- CMD [ARGS], not both");
    if (options.pid < 0) return usage_error(fmt::format("--pid {}: not a process id", options.pid));
    if (!(options.duration > 0))
      return usage_error("profile --pid needs --duration S (seconds, more than 0): how long to count");
    return profile_attached(options);
  }
  if (options.duration != 0) return usage_error("profile: --duration goes with --pid; a command is counted to its end");
  if (options.command.empty())
    return usage_error("profile: nothing to profile; give -- CMD [ARGS] or --pid PID --duration S");
  return profile_running(options);
}

}  // namespace ctx
