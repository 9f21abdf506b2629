// create.fork, create.vfork, create.posix_spawn, create.fork_exec: what it
// costs to make a process and see it gone. Each op creates one child, the
// child ends at once with status 0 (after exec, for the exec variants), and
// the parent reaps it with waitpid, so one op is creation + exit + reaping:
// lmbench lat_proc's "fork proc" and "exec proc" (with the static helper
// ctxbench-exit0, like its hello-s, so no dynamic loading is timed), libMicro
// fork/exec, UnixBench spawn/execl.
//
// fork copies the parent's page tables, so its cost grows with the parent's
// mapped memory. create.fork's parent_mib axis maps and touches that many MiB
// of private memory (4 KiB pages: transparent huge pages are turned off for
// it with MADV_NOHUGEPAGE) before timing, so the run shows the cost per MiB;
// create.fork_minimal_parent forks from a small static helper
// (ctxbench-forkloop) instead of the engine. derived gives the parent's size
// (VmSize, VmRSS, VmPTE) in both. vfork and
// posix_spawn (glibc: clone(CLONE_VM|CLONE_VFORK)) share the parent's memory
// and copy nothing. fork and fork_exec go through fork_tracked() so a Ctrl-C
// reaps them; its bookkeeping (a getpid in the parent, a prctl and a getppid
// in the child) is part of the figure and well under 1% of it. vfork and
// posix_spawn children are tracked from the moment the parent resumes.
#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "os/tasks.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

// Waits for `pid`, stops tracking it, and fails the op unless it exited 0.
void reap(pid_t pid, const char* what) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR || interrupted_flag().load()) {
      untrack_child(pid);
      throw_errno(fmt::format("waitpid for the {} child", what));
    }
  }
  untrack_child(pid);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    throw ProbeError(Reason::child_failed, fmt::format("the {} child could not exec the helper (status 127)", what));
  if (WIFSIGNALED(status))
    throw ProbeError(Reason::child_failed, fmt::format("the {} child was killed by signal {} ({})", what,
                                                       WTERMSIG(status), strsignal(WTERMSIG(status))));
  throw ProbeError(Reason::child_failed, fmt::format("the {} child exited with status {}", what, WEXITSTATUS(status)));
}

// The parent's sizes from /proc/PID/status, in KiB (VmSize, VmRSS, VmPTE).
void add_parent_size(Result& r, const std::string& pid = "self") {
  std::ifstream status("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(status, line)) {
    for (const auto& [key, name] : {std::pair<const char*, const char*>{"VmSize:", "parent_vm_size_kib"},
                                    {"VmRSS:", "parent_rss_kib"},
                                    {"VmPTE:", "parent_page_tables_kib"}}) {
      if (line.rfind(key, 0) == 0) r.derived[name] = std::stod(line.substr(std::strlen(key)));
    }
  }
}

// ---- fork and vfork --------------------------------------------------------
class ForkExitWait final : public Workload {
 public:
  // Maps and touches `parent_mib` MiB of private memory that every fork then
  // has to copy the page tables of.
  explicit ForkExitWait(long parent_mib) : bytes_(static_cast<std::size_t>(parent_mib) << 20) {
    if (bytes_ == 0) return;
    void* memory = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw_errno(fmt::format("mmap of {} MiB for the parent", parent_mib));
    memory_ = static_cast<char*>(memory);
    madvise(memory_, bytes_, MADV_NOHUGEPAGE);  // 4 KiB pages: one page-table entry each
    const long page = sysconf(_SC_PAGESIZE);
    for (std::size_t offset = 0; offset < bytes_; offset += static_cast<std::size_t>(page)) memory_[offset] = 1;
  }
  ~ForkExitWait() override {
    if (memory_) munmap(memory_, bytes_);
  }
  ForkExitWait(const ForkExitWait&) = delete;
  ForkExitWait& operator=(const ForkExitWait&) = delete;

  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) {
      const pid_t pid = fork_tracked();
      if (pid < 0) throw_errno("fork");
      if (pid == 0) _exit(0);
      reap(pid, "fork");
    }
  }
  void annotate(Result& r) override { add_parent_size(r); }

 private:
  std::size_t bytes_;
  char* memory_ = nullptr;
};

// vfork suspends the parent until the child exits; the child may only _exit.
// Kept out of line so no caller's variables live across the vfork.
__attribute__((noinline)) pid_t vfork_and_exit() {
  const pid_t pid = vfork();
  if (pid == 0) _exit(0);
  return pid;
}

class VforkExitWait final : public Workload {
 public:
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) {
      const pid_t pid = vfork_and_exit();
      if (pid < 0) throw_errno("vfork");
      track_child(pid);
      reap(pid, "vfork");
    }
  }
};

// ---- the static helpers -------------------------------------------------------
// ctxbench-exit0 and ctxbench-forkloop are built and installed next to
// ctxbench-engine.
std::string helper_path(const char* name = "ctxbench-exit0") {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  std::string path(self, static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + name;
}

// Whether the helper exists and is executable (without running it).
Support helper_present(const std::string& path, const char* name) {
  if (path.empty())
    return Support::no(Reason::not_supported_here, "cannot find the engine's own path (/proc/self/exe unreadable)");
  if (access(path.c_str(), X_OK) != 0)
    return Support::no(Reason::built_without, fmt::format("the helper {} is missing or not executable ({}); build the "
                                                          "{} target, which belongs next to ctxbench-engine",
                                                          path, std::strerror(errno), name));
  return Support::yes();
}

Support helper_here(const Params&) {
  std::string path = helper_path();
  if (Support present = helper_present(path, "ctxbench-exit0"); !present.ok) return present;
  // One trial run: an exec that cannot work here (a foreign-architecture
  // binary under qemu-user without binfmt_misc, a noexec mount) is a fact of
  // this machine, not a failure of the probe.
  char* argv[] = {path.data(), nullptr};
  char* envp[] = {nullptr};
  pid_t pid = -1;
  int status = 0;
  if (const int error = posix_spawn(&pid, path.c_str(), nullptr, nullptr, argv, envp); error != 0)
    return Support::no(Reason::not_supported_here,
                       fmt::format("the helper {} cannot be executed here: {}", path, std::strerror(error)));
  track_child(pid);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  untrack_child(pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Support::no(Reason::not_supported_here,
                       fmt::format("the helper {} did not run here (exit status {}): its exec fails on this machine",
                                   path, WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  return Support::yes();
}

class ExecHelper final : public Workload {
 public:
  explicit ExecHelper(bool spawn) : spawn_(spawn), path_(helper_path()) {}
  void run(std::uint64_t iterations) override {
    // An empty environment: the helper needs none, and exec would copy it.
    char* argv[] = {path_.data(), nullptr};
    char* envp[] = {nullptr};
    for (std::uint64_t i = 0; i < iterations; ++i) {
      pid_t pid = -1;
      if (spawn_) {
        if (const int error = posix_spawn(&pid, path_.c_str(), nullptr, nullptr, argv, envp); error != 0) {
          errno = error;
          throw_errno("posix_spawn of " + path_);
        }
        track_child(pid);
      } else {
        pid = fork_tracked();
        if (pid < 0) throw_errno("fork");
        if (pid == 0) {
          execve(path_.c_str(), argv, envp);
          _exit(127);
        }
      }
      reap(pid, spawn_ ? "posix_spawn" : "fork+exec");
    }
  }
  void annotate(Result& r) override {
    if (!spawn_) add_parent_size(r);
  }

 private:
  bool spawn_;
  std::string path_;
};

// ---- fork from a minimal parent -----------------------------------------------
// Runs ctxbench-forkloop as a child (pinned where the engine's task is, as it
// inherits the affinity) and asks it for k forks per batch over a pipe.
class MinimalParentFork final : public Workload {
 public:
  MinimalParentFork() : path_(helper_path("ctxbench-forkloop")) {
    int to_helper[2], from_helper[2];
    if (pipe2(to_helper, O_CLOEXEC) != 0) throw_errno("pipe2");
    if (pipe2(from_helper, O_CLOEXEC) != 0) {
      close(to_helper[0]);
      close(to_helper[1]);
      throw_errno("pipe2");
    }
    pid_ = fork_tracked();
    if (pid_ == 0) {
      // dup2 clears close-on-exec on the new descriptors 0 and 1.
      if (dup2(to_helper[0], 0) < 0 || dup2(from_helper[1], 1) < 0) _exit(127);
      char* argv[] = {path_.data(), nullptr};
      char* envp[] = {nullptr};
      execve(path_.c_str(), argv, envp);
      _exit(127);
    }
    const int fork_error = errno;
    close(to_helper[0]);
    close(from_helper[1]);
    to_ = to_helper[1];
    from_ = from_helper[0];
    if (pid_ < 0) {
      errno = fork_error;
      close_pipes();
      throw_errno("fork of the ctxbench-forkloop helper");
    }
  }
  ~MinimalParentFork() override {
    close_pipes();  // the helper reads end of input and exits
    if (pid_ > 0) {
      int status = 0;
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      untrack_child(pid_);
    }
  }
  MinimalParentFork(const MinimalParentFork&) = delete;
  MinimalParentFork& operator=(const MinimalParentFork&) = delete;

  void run(std::uint64_t iterations) override {
    write_exact(to_, &iterations, sizeof iterations, "asking ctxbench-forkloop for forks");
    unsigned char status = 0;
    read_exact(from_, &status, 1, "waiting for ctxbench-forkloop");
    if (status != 0)
      throw ProbeError(Reason::child_failed,
                       fmt::format("ctxbench-forkloop reported {}", status == 1   ? "a child that did not exit 0"
                                                                    : status == 2 ? "a failed fork"
                                                                                  : "a failed waitpid"));
  }
  void annotate(Result& r) override { add_parent_size(r, std::to_string(pid_)); }

 private:
  void close_pipes() {
    for (int* fd : {&to_, &from_})
      if (*fd >= 0) {
        close(*fd);
        *fd = -1;
      }
  }
  std::string path_;
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
};

const Registrar fork_probe({
    .name = "create.fork",
    .op = "one fork whose child calls _exit(0) at once, and the parent's "
          "waitpid that reaps it; the parent is the engine, with parent_mib MiB of touched private memory added",
    .roles = {{"ladder:fork", 0}, {"answer:process", 0}, {"explain:fork_size", 0}, {"profile:process", 0}},
    .params = {{"parent_mib",
                {"0", "64", "512"},
                {},
                "MiB of private memory the parent maps and touches before forking (4 KiB pages), so the run shows "
                "how fork's cost grows with the parent's size",
                true,
                true}},
    .make = [](Context& ctx) { return std::make_unique<ForkExitWait>(ctx.param_int("parent_mib")); },
    .method = "lmbench lat_proc 'fork proc', UnixBench spawn.c, osbench "
              "create_processes; the parent-size axis as in fork-scaling studies",
});

const Registrar fork_minimal_parent_probe({
    .name = "create.fork_minimal_parent",
    .op = "one fork whose child calls _exit(0) at once, and the waitpid that reaps it, made by the small static "
          "helper ctxbench-forkloop (k forks per request over a pipe; the pipe round trip is spread over k)",
    .roles = {{"explain:fork_minimal_parent", 0}},
    .make = [](Context&) { return std::make_unique<MinimalParentFork>(); },
    .supported =
        [](const Params& p) {
          if (Support present = helper_present(helper_path("ctxbench-forkloop"), "ctxbench-forkloop"); !present.ok)
            return present;
          return helper_here(p);  // a trial exec of ctxbench-exit0: whether a static helper runs here at all
        },
    .method = "lmbench lat_proc 'fork proc' as a minimal C loop would run it: the forking process is tiny and "
              "static, so fork copies little",
});

const Registrar vfork_probe({
    .name = "create.vfork",
    .op = "one vfork whose child calls _exit(0) at once (the parent is "
          "suspended until then), and the waitpid",
    .make = [](Context&) { return std::make_unique<VforkExitWait>(); },
    .method = "lmbench lat_proc's fork measured with vfork: no page tables copied",
});

const Registrar posix_spawn_probe({
    .name = "create.posix_spawn",
    .op = "one posix_spawn of the static helper ctxbench-exit0 (which exits 0 "
          "at once), and the waitpid",
    .make = [](Context&) { return std::make_unique<ExecHelper>(true); },
    .supported = helper_here,
    .method = "lmbench lat_proc 'exec proc' with a static hello-s, through "
              "posix_spawn (glibc: clone with "
              "CLONE_VM|CLONE_VFORK, then execve)",
});

const Registrar fork_exec_probe({
    .name = "create.fork_exec",
    .op = "one fork whose child execve's the static helper ctxbench-exit0 "
          "(which exits 0 at once), and the waitpid",
    .roles = {{"ladder:exec", 0}, {"answer:exec", 0}},
    .make = [](Context&) { return std::make_unique<ExecHelper>(false); },
    .supported = helper_here,
    .method = "lmbench lat_proc 'exec proc' (fork + execve of a static "
              "hello-s), UnixBench execl",
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
