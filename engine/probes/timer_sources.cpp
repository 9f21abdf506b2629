// timer.*: what one read of each time source costs, and the smallest step it
// shows. Every other figure ctxbench reports is a difference of two reads of
// the harness's timer, so its cost and resolution bound what can be resolved
// (libMicro's get_nsecs_overhead / get_nsecs_resolution, lmbench's
// t_overhead). One probe per source: the cycle counters (x86 rdtscp and
// fenced rdtsc, arm64 cntvct_el0, riscv rdtime), clock_gettime through the
// vDSO and as a raw system call, and gettimeofday. One op is one read.
//
// derived.resolution_ns is the smallest non-zero difference between two
// back-to-back reads of that source (characterize() of timer.cpp, run on the
// source itself). A counter that advances by more than one tick between two
// reads is resolved by its read cost, not its tick; derived.resolution_limited_by
// says which bounded it. Which sources exist is decided at run time and by the
// architecture the engine was built for: conditional compilation chooses the
// implementation, and a source this build cannot read is `unsupported`.
#include <fmt/format.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "os/arch/cycle_timer.hpp"
#include "os/tasks.hpp"
#include "os/timer.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

using ReadFn = std::uint64_t (*)();

#if defined(__x86_64__)
constexpr const char* build_arch = "x86_64";
#elif defined(__aarch64__)
constexpr const char* build_arch = "aarch64";
#elif defined(__riscv) && __riscv_xlen == 64
constexpr const char* build_arch = "riscv64";
#else
constexpr const char* build_arch = "an architecture without a cycle timer header";
#endif

// Keeps a value alive without costing an instruction.
inline void keep(std::uint64_t value) { asm volatile("" : : "r"(value)); }

// A time source seen through the harness's Clock interface, so that
// characterize() measures its read cost and resolution exactly as it does the
// harness's own timer.
class SourceClock final : public Clock {
 public:
  SourceClock(std::string name, ReadFn read, double ns_per_tick)
      : name_(std::move(name)), read_(read), ns_per_tick_(ns_per_tick) {}
  std::uint64_t now() override { return read_(); }
  double ticks_to_ns(std::uint64_t ticks) const override { return static_cast<double>(ticks) * ns_per_tick_; }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  ReadFn read_;
  double ns_per_tick_;
};

// How a source's ticks convert to ns: fixed (clocks in ns or µs), published
// by the hardware (cntfrq_el0), or calibrated against CLOCK_MONOTONIC_RAW.
struct TickRate {
  double ns_per_tick = 0;  // 0: calibrate
  std::string how;
};

// Source-specific notes added to the record.
using Annotation = std::function<void(Result&)>;

// Times `op` (exactly the read, nothing else); `read` returns the source's
// ticks and is used, untimed, to find the resolution.
template <class Op>
class TimerRead final : public Workload {
 public:
  TimerRead(const Context& ctx, std::string source, Op op, ReadFn read, TickRate rate, Annotation extra)
      : quick_(ctx.quick()),
        source_(std::move(source)),
        op_(std::move(op)),
        read_(read),
        rate_(std::move(rate)),
        extra_(std::move(extra)) {}
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) op_();
  }
  void annotate(Result& r) override {
    if (extra_) extra_(r);
    double ns_per_tick = rate_.ns_per_tick;
    if (ns_per_tick <= 0) ns_per_tick = calibrate_ns_per_tick(read_, quick_ ? 0.01 : 0.05);
    if (!(ns_per_tick > 0)) {
      r.notes.push_back(source_ + " did not advance during a rate calibration; resolution unknown");
      r.derived["resolution_ns"] = nullptr;
      return;
    }
    SourceClock clock(source_, read_, ns_per_tick);
    const TimerInfo info = characterize(clock, quick_ ? 5000 : 20000);
    const double resolution_ticks = info.resolution_ns / ns_per_tick;
    r.derived["resolution_ns"] = info.resolution_ns > 0 ? nlohmann::json(info.resolution_ns) : nlohmann::json();
    r.derived["resolution_ticks"] = std::round(resolution_ticks);
    r.derived["ns_per_tick"] = ns_per_tick;
    r.derived["tick_rate_from"] = rate_.ns_per_tick > 0 ? rate_.how : "calibrated against CLOCK_MONOTONIC_RAW";
    r.derived["back_to_back_median_ns"] = info.overhead_ns;
    if (info.resolution_ns <= 0)
      r.derived["resolution_limited_by"] = "unknown: no two reads differed";
    else
      r.derived["resolution_limited_by"] = resolution_ticks > 1.5
                                               ? "read cost (the source advances more than one tick per read)"
                                               : "tick (back-to-back reads often return the same value)";
  }

 private:
  bool quick_;
  std::string source_;
  Op op_;
  ReadFn read_;
  TickRate rate_;
  Annotation extra_;
};

template <class Op>
WorkloadFactory timer_read(std::string source, Op op, ReadFn read, TickRate rate, Annotation extra = {}) {
  return [=](Context& ctx) -> std::unique_ptr<Workload> {
    return std::make_unique<TimerRead<Op>>(ctx, source, op, read, rate, extra);
  };
}

Support not_on_this_arch(const std::string& what, const std::string& arch) {
  return Support::no(Reason::not_supported_here,
                     fmt::format("{} exists only on {}; this engine was built for {}", what, arch, build_arch));
}

// ---- cycle counters -------------------------------------------------------------
#if defined(__x86_64__)
// rdtsc and rdtscp fault (SIGSEGV) for a task that prctl(PR_SET_TSC) has
// denied them; rdtscp also needs CPUID.80000001H:EDX[27].
Support tsc_readable(bool needs_rdtscp) {
  int mode = 0;
  if (prctl(PR_GET_TSC, &mode, 0, 0, 0) == 0 && mode == PR_TSC_SIGSEGV)
    return Support::no(Reason::not_supported_here, "this task may not read the TSC (prctl PR_GET_TSC: SIGSEGV)");
  if (needs_rdtscp) {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) || !(edx & (1u << 27)))
      return Support::no(Reason::not_supported_here, "the CPU has no rdtscp (CPUID.80000001H:EDX[27] clear)");
  }
  return Support::yes();
}
std::uint64_t read_rdtscp() { return arch::read_cycle_timer(); }
std::uint64_t read_rdtsc_fenced() { return arch::read_tsc_fenced(); }
#else
std::uint64_t read_rdtscp() { return 0; }
std::uint64_t read_rdtsc_fenced() { return 0; }
#endif

#if defined(__aarch64__) || (defined(__riscv) && __riscv_xlen == 64)
// cntvct_el0 and rdtime are the harness's cycle timer on their architectures;
// the kernel may still deny them to user space, so read them under a guard.
Support cycle_timer_here(const std::string& what) {
  if (!cycle_timer_readable())
    return Support::no(Reason::not_supported_here, what + " traps when read from user space here");
  return Support::yes();
}
#endif

// Whether each cycle counter can be read by this build, here.
Support rdtscp_support(const Params&) {
#if defined(__x86_64__)
  return tsc_readable(true);
#else
  return not_on_this_arch("rdtscp", "x86_64");
#endif
}
Support rdtsc_support(const Params&) {
#if defined(__x86_64__)
  return tsc_readable(false);
#else
  return not_on_this_arch("rdtsc", "x86_64");
#endif
}
Support cntvct_support(const Params&) {
#if defined(__aarch64__)
  return cycle_timer_here("cntvct_el0");
#else
  return not_on_this_arch("cntvct_el0", "aarch64");
#endif
}
Support rdtime_support(const Params&) {
#if defined(__riscv) && __riscv_xlen == 64
  return cycle_timer_here("rdtime");
#else
  return not_on_this_arch("rdtime", "riscv64");
#endif
}

#if defined(__aarch64__)
std::uint64_t read_cntvct() { return arch::read_cycle_timer(); }
// 0 (calibrate instead) where cntfrq_el0 was left unset, as some emulators do.
double cntvct_ns_per_tick() {
  const double hz = arch::cycle_timer_hz();
  return hz > 0 ? 1e9 / hz : 0.0;
}
#else
std::uint64_t read_cntvct() { return 0; }
double cntvct_ns_per_tick() { return 0; }
#endif

#if defined(__riscv) && __riscv_xlen == 64
std::uint64_t read_rdtime() { return arch::read_cycle_timer(); }
#else
std::uint64_t read_rdtime() { return 0; }
#endif

// The TSC ticks at a fixed reference rate only where it is invariant.
void note_tsc_invariance(Result& r) {
#if defined(__x86_64__)
  const char* why = nullptr;
  if (!arch::cycle_timer_usable(&why))
    r.notes.push_back(fmt::format("{}: ticks may not track time, so resolution_ns is only indicative", why));
#else
  (void)r;
#endif
}

WorkloadFactory tsc_read(std::string source, ReadFn read) {
  return timer_read(
      std::move(source), [read] { keep(read()); }, read, TickRate{}, note_tsc_invariance);
}

const Registrar rdtscp({
    .name = "timer.rdtscp",
    .op = "one rdtscp followed by lfence: the harness's own x86_64 timer read",
    .make = tsc_read("rdtscp", read_rdtscp),
    .supported = rdtscp_support,
    .method = "libMicro get_nsecs_overhead/get_nsecs_resolution; fencing as in Intel's 'How to Benchmark Code "
              "Execution Times' (rdtscp waits for earlier instructions, lfence holds back later ones)",
});

const Registrar rdtsc_fenced({
    .name = "timer.rdtsc_fenced",
    .op = "one rdtsc with an lfence on each side (lfence; rdtsc; lfence)",
    .make = tsc_read("lfence;rdtsc;lfence", read_rdtsc_fenced),
    .supported = rdtsc_support,
    .method = "libMicro get_nsecs_overhead/get_nsecs_resolution; lfence serialization of rdtsc per the Intel SDM "
              "(cheaper than cpuid, which exits to the hypervisor in a VM)",
});

const Registrar cntvct({
    .name = "timer.cntvct",
    .op = "one isb followed by a read of cntvct_el0, the arm64 generic timer's virtual count",
    .make = timer_read(
        "cntvct_el0", [] { keep(read_cntvct()); }, read_cntvct, TickRate{cntvct_ns_per_tick(), "cntfrq_el0"}),
    .supported = cntvct_support,
    .method = "libMicro get_nsecs_overhead/get_nsecs_resolution; the rate is cntfrq_el0 (Arm ARM, generic timer)",
});

const Registrar rdtime({
    .name = "timer.rdtime",
    .op = "one fence followed by rdtime, the riscv64 time CSR",
    .make = timer_read(
        "rdtime", [] { keep(read_rdtime()); }, read_rdtime, TickRate{}),
    .supported = rdtime_support,
    .method = "libMicro get_nsecs_overhead/get_nsecs_resolution; the timebase is not visible to user space, so it "
              "is calibrated against CLOCK_MONOTONIC_RAW",
});

// ---- clocks through libc and the kernel ------------------------------------------
std::uint64_t to_ns(const timespec& ts) {
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}
std::uint64_t read_monotonic() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return to_ns(ts);
}
std::uint64_t read_monotonic_raw() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return to_ns(ts);
}
std::uint64_t read_monotonic_syscall() {
  timespec ts{};
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  return to_ns(ts);
}
std::uint64_t read_gettimeofday_us() {
  timeval tv{};
  gettimeofday(&tv, nullptr);
  return static_cast<std::uint64_t>(tv.tv_sec) * 1000000ull + static_cast<std::uint64_t>(tv.tv_usec);
}

// A libc clock call is answered in the vDSO only if the kernel mapped one;
// clock_getres gives the resolution the kernel claims, beside the one seen.
// `clock`: the clock id whose clock_getres applies (none for gettimeofday,
// whose microseconds are coarser than CLOCK_REALTIME's claim).
enum class Path { vdso, syscall };
template <class Op>
WorkloadFactory clock_read(std::string source, Op op, ReadFn read, TickRate rate, Path path,
                           std::optional<clockid_t> clock) {
  return timer_read(std::move(source), std::move(op), read, std::move(rate), [path, clock](Result& r) {
    if (path == Path::vdso && getauxval(AT_SYSINFO_EHDR) == 0)
      r.notes.push_back("no vDSO is mapped in this process: libc answers with a system call");
    timespec res{};
    if (clock && clock_getres(*clock, &res) == 0) r.derived["clock_getres_ns"] = static_cast<double>(to_ns(res));
  });
}

const Registrar clock_gettime_monotonic({
    .name = "timer.clock_gettime_monotonic",
    .op = "one clock_gettime(CLOCK_MONOTONIC) through libc, answered in the vDSO without entering the kernel",
    .roles = {{"ladder:vdso", 0}},
    .make = clock_read(
        "clock_gettime(CLOCK_MONOTONIC)",
        [] {
          timespec ts{};
          clock_gettime(CLOCK_MONOTONIC, &ts);
        },
        read_monotonic, TickRate{1.0, "nanoseconds"}, Path::vdso, CLOCK_MONOTONIC),
    .method = "libMicro get_nsecs_overhead/get_nsecs_resolution; vDSO vs system call as in golang/go#57749",
});

const Registrar clock_gettime_monotonic_raw({
    .name = "timer.clock_gettime_monotonic_raw",
    .op = "one clock_gettime(CLOCK_MONOTONIC_RAW) through libc (vDSO since Linux 5.3), the harness's fallback timer",
    .make = clock_read(
        "clock_gettime(CLOCK_MONOTONIC_RAW)",
        [] {
          timespec ts{};
          clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
        },
        read_monotonic_raw, TickRate{1.0, "nanoseconds"}, Path::vdso, CLOCK_MONOTONIC_RAW),
    .method = "libMicro get_nsecs_overhead/get_nsecs_resolution; MONOTONIC_RAW is never slewed by NTP",
});

const Registrar clock_gettime_syscall({
    .name = "timer.clock_gettime_syscall",
    .op = "one syscall(SYS_clock_gettime, CLOCK_MONOTONIC): the same clock read by entering the kernel",
    .make = clock_read(
        "syscall(SYS_clock_gettime)",
        [] {
          timespec ts{};
          syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
        },
        read_monotonic_syscall, TickRate{1.0, "nanoseconds"}, Path::syscall, CLOCK_MONOTONIC),
    .method = "libMicro get_nsecs_overhead/get_nsecs_resolution; the raw system call bypasses the vDSO",
});

const Registrar gettimeofday_source({
    .name = "timer.gettimeofday",
    .op = "one gettimeofday through libc (vDSO), microsecond ticks: lmbench's timer",
    .make = clock_read(
        "gettimeofday",
        [] {
          timeval tv{};
          gettimeofday(&tv, nullptr);
        },
        read_gettimeofday_us, TickRate{1000.0, "microseconds"}, Path::vdso, std::nullopt),
    .method = "lmbench lib_timing.c t_overhead(); libMicro get_nsecs_resolution",
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
