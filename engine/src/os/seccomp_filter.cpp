#include "os/seccomp_filter.hpp"

#include <errno.h>
#include <fmt/format.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

#include "model/registry.hpp"

#if CTXBENCH_HAVE_LIBSECCOMP
#include <seccomp.h>
#endif

namespace ctx {

bool have_libseccomp() { return CTXBENCH_HAVE_LIBSECCOMP == 1; }

std::uint32_t native_audit_arch() {
#if defined(__x86_64__)
  return AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  return AUDIT_ARCH_AARCH64;
#elif defined(__riscv) && __riscv_xlen == 64
  return AUDIT_ARCH_RISCV64;
#else
  return 0;
#endif
}

long syscall_number(const std::string& name) {
#if CTXBENCH_HAVE_LIBSECCOMP
  const int number = seccomp_syscall_resolve_name(name.c_str());
  return number == __NR_SCMP_ERROR ? -1 : number;
#else
  (void)name;
  return -1;
#endif
}

namespace {

constexpr std::uint32_t first_argument = offsetof(seccomp_data, args);

// allow: load the first argument (so the verdict is not constant), allow.
// With `inspected`, only those calls load it: load the number, jump to the
// argument load on each listed number, else allow at once.
std::vector<sock_filter> allow_program(const std::vector<long>& inspected) {
  if (inspected.empty())
    return {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, first_argument), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  if (inspected.size() > 255)
    throw ProbeError(Reason::error, "an allow filter inspects at most 255 system calls (a BPF jump's reach)");
  const auto n = static_cast<std::uint8_t>(inspected.size());
  std::vector<sock_filter> program = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr))};
  for (std::uint8_t i = 0; i < n; ++i)
    // From instruction 1 + i, the argument load sits n - i instructions further on.
    program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(inspected[i]),
                               static_cast<std::uint8_t>(n - i), 0));
  program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  program.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, first_argument));
  program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  return program;
}

#if CTXBENCH_HAVE_LIBSECCOMP
// The system calls the profile allows by name: what a process in a container
// ordinarily needs (files, memory, signals, time, sockets, IPC, scheduling,
// its own credentials), and none of what runtimes keep from it (mounts,
// modules, reboot, kexec, swap, the clock's setting, namespaces, keys,
// tracing other processes, BPF, performance counters, raw I/O ports).
// Names absent on this architecture are skipped.
constexpr const char* profile_allowed[] = {
    "accept",
    "accept4",
    "access",
    "alarm",
    "arch_prctl",
    "bind",
    "brk",
    "cacheflush",
    "capget",
    "capset",
    "chdir",
    "chmod",
    "chown",
    "clock_getres",
    "clock_gettime",
    "clock_nanosleep",
    "close",
    "close_range",
    "connect",
    "copy_file_range",
    "creat",
    "dup",
    "dup2",
    "dup3",
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_pwait",
    "epoll_pwait2",
    "epoll_wait",
    "eventfd",
    "eventfd2",
    "execve",
    "execveat",
    "exit",
    "exit_group",
    "faccessat",
    "faccessat2",
    "fadvise64",
    "fallocate",
    "fanotify_mark",
    "fchdir",
    "fchmod",
    "fchmodat",
    "fchown",
    "fchownat",
    "fcntl",
    "fdatasync",
    "fgetxattr",
    "flistxattr",
    "flock",
    "fork",
    "fremovexattr",
    "fsetxattr",
    "fstat",
    "fstatfs",
    "fsync",
    "ftruncate",
    "futex",
    "futex_waitv",
    "futimesat",
    "get_robust_list",
    "get_thread_area",
    "getcpu",
    "getcwd",
    "getdents",
    "getdents64",
    "getegid",
    "geteuid",
    "getgid",
    "getgroups",
    "getitimer",
    "getpeername",
    "getpgid",
    "getpgrp",
    "getpid",
    "getppid",
    "getpriority",
    "getrandom",
    "getresgid",
    "getresuid",
    "getrlimit",
    "getrusage",
    "getsid",
    "getsockname",
    "getsockopt",
    "gettid",
    "gettimeofday",
    "getuid",
    "getxattr",
    "inotify_add_watch",
    "inotify_init",
    "inotify_init1",
    "inotify_rm_watch",
    "io_cancel",
    "io_destroy",
    "io_getevents",
    "io_pgetevents",
    "io_setup",
    "io_submit",
    "io_uring_enter",
    "io_uring_register",
    "io_uring_setup",
    "ioctl",
    "ioprio_get",
    "ioprio_set",
    "kill",
    "landlock_add_rule",
    "landlock_create_ruleset",
    "landlock_restrict_self",
    "lchown",
    "lgetxattr",
    "link",
    "linkat",
    "listen",
    "listxattr",
    "llistxattr",
    "lremovexattr",
    "lseek",
    "lsetxattr",
    "lstat",
    "madvise",
    "membarrier",
    "memfd_create",
    "memfd_secret",
    "mincore",
    "mkdir",
    "mkdirat",
    "mknod",
    "mknodat",
    "mlock",
    "mlock2",
    "mlockall",
    "mmap",
    "mprotect",
    "mq_getsetattr",
    "mq_notify",
    "mq_open",
    "mq_timedreceive",
    "mq_timedsend",
    "mq_unlink",
    "mremap",
    "msgctl",
    "msgget",
    "msgrcv",
    "msgsnd",
    "msync",
    "munlock",
    "munlockall",
    "munmap",
    "nanosleep",
    "newfstatat",
    "open",
    "openat",
    "openat2",
    "pause",
    "pidfd_open",
    "pidfd_send_signal",
    "pipe",
    "pipe2",
    "pkey_alloc",
    "pkey_free",
    "pkey_mprotect",
    "poll",
    "ppoll",
    "prctl",
    "pread64",
    "preadv",
    "preadv2",
    "prlimit64",
    "process_mrelease",
    "pselect6",
    "pwrite64",
    "pwritev",
    "pwritev2",
    "read",
    "readahead",
    "readlink",
    "readlinkat",
    "readv",
    "recvfrom",
    "recvmmsg",
    "recvmsg",
    "remap_file_pages",
    "removexattr",
    "rename",
    "renameat",
    "renameat2",
    "restart_syscall",
    "riscv_flush_icache",
    "riscv_hwprobe",
    "rmdir",
    "rseq",
    "rt_sigaction",
    "rt_sigpending",
    "rt_sigprocmask",
    "rt_sigqueueinfo",
    "rt_sigreturn",
    "rt_sigsuspend",
    "rt_sigtimedwait",
    "rt_tgsigqueueinfo",
    "sched_get_priority_max",
    "sched_get_priority_min",
    "sched_getaffinity",
    "sched_getattr",
    "sched_getparam",
    "sched_getscheduler",
    "sched_rr_get_interval",
    "sched_setaffinity",
    "sched_setattr",
    "sched_setparam",
    "sched_setscheduler",
    "sched_yield",
    "seccomp",
    "select",
    "semctl",
    "semget",
    "semop",
    "semtimedop",
    "sendfile",
    "sendmmsg",
    "sendmsg",
    "sendto",
    "set_robust_list",
    "set_thread_area",
    "set_tid_address",
    "setfsgid",
    "setfsuid",
    "setgid",
    "setgroups",
    "setitimer",
    "setpgid",
    "setpriority",
    "setregid",
    "setresgid",
    "setresuid",
    "setreuid",
    "setrlimit",
    "setsid",
    "setsockopt",
    "setuid",
    "setxattr",
    "shmat",
    "shmctl",
    "shmdt",
    "shmget",
    "shutdown",
    "sigaltstack",
    "signalfd",
    "signalfd4",
    "socketpair",
    "splice",
    "stat",
    "statfs",
    "statx",
    "symlink",
    "symlinkat",
    "sync",
    "sync_file_range",
    "syncfs",
    "sysinfo",
    "tee",
    "tgkill",
    "time",
    "timer_create",
    "timer_delete",
    "timer_getoverrun",
    "timer_gettime",
    "timer_settime",
    "timerfd_create",
    "timerfd_gettime",
    "timerfd_settime",
    "times",
    "tkill",
    "truncate",
    "umask",
    "uname",
    "unlink",
    "unlinkat",
    "utime",
    "utimensat",
    "utimes",
    "vfork",
    "vmsplice",
    "wait4",
    "waitid",
    "write",
    "writev",
};

// Owns a libseccomp context.
struct ScmpContext {
  scmp_filter_ctx ctx;
  explicit ScmpContext(std::uint32_t default_action) : ctx(seccomp_init(default_action)) {
    if (!ctx) throw ProbeError(Reason::error, "seccomp_init failed (out of memory?)");
  }
  ~ScmpContext() { seccomp_release(ctx); }
  ScmpContext(const ScmpContext&) = delete;
  ScmpContext& operator=(const ScmpContext&) = delete;
};

void add_rule(ScmpContext& c, std::uint32_t action, int number, std::size_t& rules, unsigned count = 0,
              const scmp_arg_cmp* compare = nullptr) {
  const int rc = count ? seccomp_rule_add_array(c.ctx, action, number, count, compare)
                       : seccomp_rule_add(c.ctx, action, number, 0);
  if (rc != 0) {
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, number);
    const std::string shown = name ? name : std::to_string(number);
    std::free(name);
    throw ProbeError(Reason::error, fmt::format("libseccomp refused a rule for {}: {}", shown, std::strerror(-rc)));
  }
  ++rules;
}

SeccompFilter profile_filter() {
  SeccompFilter f;
  f.mode = "profile";
  ScmpContext c(SCMP_ACT_ERRNO(EPERM));
  for (const char* name : profile_allowed) {
    const int number = seccomp_syscall_resolve_name(name);
    if (number == __NR_SCMP_ERROR || number < 0) continue;  // not on this architecture
    add_rule(c, SCMP_ACT_ALLOW, number, f.rules);
  }
  // Allowed only for some arguments, as runtimes do.
  if (const int personality = seccomp_syscall_resolve_name("personality"); personality >= 0)
    for (const scmp_datum_t persona : {0x0ull, 0x8ull, 0x20000ull, 0x20008ull, 0xffffffffull}) {
      const scmp_arg_cmp compare = SCMP_A0(SCMP_CMP_EQ, persona);
      add_rule(c, SCMP_ACT_ALLOW, personality, f.rules, 1, &compare);
    }
  // clone without a new namespace (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC,
  // NEWUSER, NEWPID, NEWNET); clone3's flags sit in memory a filter cannot
  // read, so it is answered ENOSYS and libc falls back to clone.
  constexpr scmp_datum_t namespace_flags =
      0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;
  if (const int clone = seccomp_syscall_resolve_name("clone"); clone >= 0) {
    const scmp_arg_cmp compare = SCMP_A0(SCMP_CMP_MASKED_EQ, namespace_flags, 0);
    add_rule(c, SCMP_ACT_ALLOW, clone, f.rules, 1, &compare);
  }
  if (const int clone3 = seccomp_syscall_resolve_name("clone3"); clone3 >= 0)
    add_rule(c, SCMP_ACT_ERRNO(ENOSYS), clone3, f.rules);
  // Sockets of every family but AF_VSOCK (40), the host's own channel.
  if (const int socket = seccomp_syscall_resolve_name("socket"); socket >= 0) {
    const scmp_arg_cmp compare = SCMP_A0(SCMP_CMP_NE, 40);
    add_rule(c, SCMP_ACT_ALLOW, socket, f.rules, 1, &compare);
  }
  // The program libseccomp generates, read back to count and install it.
  const int fd = memfd_create("ctxbench-seccomp", MFD_CLOEXEC);
  if (fd < 0) throw ProbeError(Reason::error, fmt::format("memfd_create: {}", std::strerror(errno)));
  const int rc = seccomp_export_bpf(c.ctx, fd);
  const off_t size = rc == 0 ? lseek(fd, 0, SEEK_END) : -1;
  if (size > 0) {
    f.program.resize(static_cast<std::size_t>(size) / sizeof(sock_filter));
    if (pread(fd, f.program.data(), f.program.size() * sizeof(sock_filter), 0) != size) f.program.clear();
  }
  close(fd);
  if (f.program.empty())
    throw ProbeError(Reason::error, fmt::format("libseccomp could not export the profile's program ({})",
                                                rc ? std::strerror(-rc) : "empty"));
  const scmp_version* version = seccomp_version();
  f.built_with = fmt::format(
      "libseccomp {}.{}.{}: default EPERM, {} rules (system calls allowed by name; personality, clone and socket "
      "allowed for some arguments; clone3 answered ENOSYS)",
      version->major, version->minor, version->micro, f.rules);
  return f;
}
#endif

}  // namespace

SeccompFilter build_seccomp_filter(const std::string& mode, const std::vector<long>& inspected) {
  if (mode == "allow") {
    SeccompFilter f;
    f.mode = mode;
    f.program = allow_program(inspected);
    f.built_with = inspected.empty()
                       ? "2 classic BPF instructions written directly: load the first argument, allow"
                       : fmt::format(
                             "{} classic BPF instructions written directly: {} listed call(s) load their first "
                             "argument, every call is allowed",
                             f.program.size(), inspected.size());
    return f;
  }
  if (mode == "profile") {
#if CTXBENCH_HAVE_LIBSECCOMP
    return profile_filter();
#else
    throw ProbeError(Reason::built_without,
                     "built without libseccomp (install libseccomp-dev and build again with "
                     "-DCTXBENCH_WITH_LIBSECCOMP=ON), so the container-like profile cannot be built",
                     Status::unsupported);
#endif
  }
  throw ProbeError(Reason::error, "seccomp must be none, allow or profile, not " + mode);
}

void install_seccomp_filter(const SeccompFilter& filter) {
  // Without CAP_SYS_ADMIN the kernel takes a filter only from a task that
  // can gain no privileges; set for this thread and what it starts.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    throw ProbeError(Reason::permission_denied,
                     fmt::format("prctl(PR_SET_NO_NEW_PRIVS) failed: {}", std::strerror(errno)), Status::unsupported);
  sock_fprog program{static_cast<unsigned short>(filter.program.size()),
                     const_cast<sock_filter*>(filter.program.data())};
  long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program);
  if (rc != 0 && errno == ENOSYS) rc = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0);
  if (rc == 0) return;
  const int error = errno;
  if (error == EACCES || error == EPERM)
    throw ProbeError(Reason::permission_denied,
                     fmt::format("the kernel refused to install a seccomp filter ({}): an outer sandbox (a container's "
                                 "own filter or policy) forbids it here",
                                 std::strerror(error)),
                     Status::unsupported);
  if (error == EINVAL || error == ENOSYS)
    throw ProbeError(Reason::not_supported_here,
                     fmt::format("this kernel does not take seccomp filters ({}): built without CONFIG_SECCOMP_FILTER",
                                 std::strerror(error)),
                     Status::unsupported);
  throw ProbeError(Reason::error, fmt::format("installing the seccomp filter failed: {}", std::strerror(error)));
}

bool answered_by_cache(const std::vector<sock_filter>& program, long number, std::uint32_t arch) {
  std::uint32_t accumulator = 0;
  for (std::size_t pc = 0; pc < program.size();) {
    const sock_filter& in = program[pc];
    switch (in.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        if (in.k == offsetof(seccomp_data, nr))
          accumulator = static_cast<std::uint32_t>(number);
        else if (in.k == offsetof(seccomp_data, arch))
          accumulator = arch;
        else
          return false;  // an argument or the instruction pointer: the verdict depends on the call
        ++pc;
        break;
      case BPF_JMP | BPF_JA: pc += 1 + in.k; break;
      case BPF_JMP | BPF_JEQ | BPF_K: pc += 1 + (accumulator == in.k ? in.jt : in.jf); break;
      case BPF_JMP | BPF_JGE | BPF_K: pc += 1 + (accumulator >= in.k ? in.jt : in.jf); break;
      case BPF_JMP | BPF_JGT | BPF_K: pc += 1 + (accumulator > in.k ? in.jt : in.jf); break;
      case BPF_JMP | BPF_JSET | BPF_K: pc += 1 + ((accumulator & in.k) != 0 ? in.jt : in.jf); break;
      case BPF_ALU | BPF_AND | BPF_K:
        accumulator &= in.k;
        ++pc;
        break;
      case BPF_RET | BPF_K: return in.k == SECCOMP_RET_ALLOW;
      default: return false;  // anything else: the kernel does not cache it either
    }
  }
  return false;
}

void describe_filter(const SeccompFilter& filter, const std::vector<std::pair<std::string, long>>& calls,
                     nlohmann::json& derived) {
  derived["seccomp_rules"] = static_cast<double>(filter.rules);
  derived["seccomp_instructions"] = static_cast<double>(filter.program.size());
  derived["seccomp_built_with"] = filter.built_with;
  if (calls.empty()) {
    derived["seccomp_cache"] = "the probe names no system call it makes";
    return;
  }
  std::string cached, evaluated;
  std::size_t answered = 0;
  for (const auto& [name, number] : calls) {
    const bool hit = answered_by_cache(filter.program, number, native_audit_arch());
    answered += hit ? 1 : 0;
    std::string& list = hit ? cached : evaluated;
    list += (list.empty() ? "" : ", ") + name;
  }
  derived["seccomp_calls_cached"] = static_cast<double>(answered);
  derived["seccomp_calls"] = static_cast<double>(calls.size());
  if (answered == 0)
    derived["seccomp_cache"] = fmt::format(
        "the filter runs on every call: its verdict for {} depends on an argument, "
        "so the kernel's constant-action cache cannot answer",
        evaluated);
  else if (answered == calls.size())
    derived["seccomp_cache"] = fmt::format(
        "the kernel's constant-action cache (Linux 5.11+) can answer {} without running the filter: their verdict "
        "does not depend on arguments",
        cached);
  else
    derived["seccomp_cache"] =
        fmt::format("the kernel's constant-action cache (Linux 5.11+) can answer {}; the filter runs on every {} call",
                    cached, evaluated);
}

}  // namespace ctx
