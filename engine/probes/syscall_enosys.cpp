// syscall.enosys: the bare kernel entry and exit. A system call number far
// beyond every architecture's table reaches the kernel's entry code, fails
// the table-bounds check and returns -ENOSYS without touching any subsystem,
// so what is left is the trap, the register save/restore and whatever the
// CPU-bug mitigations add on the way in and out (mode-switch-stat measured
// the same thing with an invalid number). One op is one such call.
//
// A seccomp filter sees every number first and may answer differently (e.g.
// EPERM from a container's default profile); then the path is not the bare
// one, and the probe says `unsupported` rather than time the filter.
#include <errno.h>
#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "measure/workloads.hpp"
#include "os/sandbox.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

// Far above the highest number any Linux architecture uses (under 500 in
// 2025) and below x86_64's x32 bit (0x40000000).
constexpr long unused_syscall_number = 100000;

// "Seccomp:" of the calling thread (filters belong to threads): 0 none,
// 1 strict, 2 filter; -1 unknown.
int seccomp_mode() { return read_process_sandbox("/proc/thread-self/status").seccomp_mode.value_or(-1); }

Support answers_enosys(const Params&) {
  errno = 0;
  const long result = syscall(unused_syscall_number);
  const int error = errno;
  if (result == -1 && error == ENOSYS) return Support::yes();
  return Support::no(Reason::not_supported_here,
                     fmt::format("system call {} returned {} ({}) instead of ENOSYS{}: something (seccomp mode {}) "
                                 "answers unknown numbers here, so the bare entry/exit path cannot be timed",
                                 unused_syscall_number, result, error ? std::strerror(error) : "no error",
                                 seccomp_mode() == 2 ? ", a seccomp filter is installed" : "", seccomp_mode()));
}

class InvalidCall final : public Workload {
 public:
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) syscall(unused_syscall_number);
  }
  void annotate(Result& r) override {
    r.derived["syscall_number"] = static_cast<double>(unused_syscall_number);
    // A filter runs on every call (ENOSYS included) and adds to every syscall.* figure.
    if (const int mode = seccomp_mode(); mode >= 0) r.derived["seccomp_mode"] = mode;
  }
};

const Registrar registrar({
    .name = "syscall.enosys",
    .op = "one system call with an unused number (100000) that the kernel rejects with ENOSYS: the bare entry and "
          "exit",
    .roles = {{"ladder:syscall", 0}, {"answer:syscall", 0}, {"explain:bare_syscall", 0}},
    .make = [](Context&) { return std::make_unique<InvalidCall>(); },
    .supported = answers_enosys,
    .method = "mode-switch-stat's empty system call (an invalid number); batched and timer-corrected",
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
