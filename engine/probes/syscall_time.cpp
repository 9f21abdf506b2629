// syscall.gettimeofday_vdso / _syscall and syscall.clock_gettime_vdso /
// _syscall: the same clock read twice over, once through libc, which answers
// in the vDSO (kernel code mapped into the process, no kernel entry), and
// once as a raw system call. The pair shows what entering the kernel costs
// on top of the work itself, and exposes machines where the vDSO falls back
// to a real system call (a clocksource the vDSO cannot read, e.g. hpet or
// some VMs: golang/go#57749). One op is one call.
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "measure/workloads.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

// A libc time call runs in the vDSO only where the kernel mapped one.
class VdsoCall final : public Workload {
 public:
  explicit VdsoCall(std::unique_ptr<Workload> calls) : calls_(std::move(calls)) {}
  void run(std::uint64_t iterations) override { calls_->run(iterations); }
  void annotate(Result& r) override {
    if (getauxval(AT_SYSINFO_EHDR) == 0)
      r.notes.push_back("no vDSO is mapped in this process: libc answered with a system call");
  }

 private:
  std::unique_ptr<Workload> calls_;
};

template <class Op>
std::unique_ptr<Workload> vdso_loop(Op op) {
  return std::make_unique<VdsoCall>(loop_of(std::move(op)));
}

const Registrar gettimeofday_vdso({
    .name = "syscall.gettimeofday_vdso",
    .op = "one gettimeofday through libc, answered in the vDSO without entering the kernel",
    .make =
        [](Context&) {
          return vdso_loop([] {
            timeval tv{};
            gettimeofday(&tv, nullptr);
          });
        },
    .method = "the vDSO vs system call pair of golang/go#57749 and context_switch2 --vdso; batched and timer-corrected",
});

const Registrar gettimeofday_syscall({
    .name = "syscall.gettimeofday_syscall",
    .op = "one gettimeofday system call through syscall(SYS_gettimeofday), bypassing the vDSO",
    .params = {seccomp_param()},
    .make =
        [](Context&) {
          return loop_of([] {
            timeval tv{};
            syscall(SYS_gettimeofday, &tv, nullptr);
          });
        },
    .method = "lmbench's timer call (t_overhead) made as a real system call; paired with the vDSO call",
    .syscalls = {{"gettimeofday", SYS_gettimeofday}},
});

const Registrar clock_gettime_vdso({
    .name = "syscall.clock_gettime_vdso",
    .op = "one clock_gettime(CLOCK_MONOTONIC) through libc, answered in the vDSO without entering the kernel",
    .roles = {{"ladder:vdso", 1}},
    .make =
        [](Context&) {
          return vdso_loop([] {
            timespec ts{};
            clock_gettime(CLOCK_MONOTONIC, &ts);
          });
        },
    .method = "the vDSO vs system call pair of golang/go#57749 and context_switch2 --vdso; batched and timer-corrected",
});

const Registrar clock_gettime_syscall({
    .name = "syscall.clock_gettime_syscall",
    .op = "one clock_gettime(CLOCK_MONOTONIC) system call through syscall(SYS_clock_gettime), bypassing the vDSO",
    .params = {seccomp_param()},
    .make =
        [](Context&) {
          return loop_of([] {
            timespec ts{};
            syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
          });
        },
    .method = "golang/go#57749's comparison of the vDSO with the real system call; paired with the vDSO call",
    .syscalls = {{"clock_gettime", SYS_clock_gettime}},
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
