// The kernel-level probes (timer.*, syscall.*, trap.*, create.*) run here,
// every variant of every probe of each family, from the registry: each is
// `ok` or honestly `unsupported` with a reason, and each carries the derived
// figures and checks its file promises. Asserts on shape and checks, never
// on speed.
#include <errno.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include "measure/harness.hpp"
#include "os/tasks.hpp"
#include "os/timer.hpp"
#include "plan/selection.hpp"
#include "probe_test_support.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {

using namespace ctx;
using namespace ctx::testing;

// Runs every variant of the probes `patterns` name (names or globs).
std::vector<Result> run_family(std::vector<std::string> patterns) {
  Selection selection;
  selection.patterns = std::move(patterns);
  std::vector<Result> results;
  for (const auto& variant : expand(all_probes(), selection))
    results.push_back(run_variant(*variant.probe, variant.params, test_clock(), test_timer(), quick_options(5, 2)));
  return results;
}

// ok with samples, or unsupported with a reason; never failed, never silent.
void expect_ok_or_unsupported(const Result& r) {
  const bool ok = measured_ok(r);
  const bool unsupported = r.verdict.status == Status::unsupported;
  EXPECT_TRUE(ok || unsupported) << r.probe << " " << status_name(r.verdict.status) << " " << reasons(r);
  if (ok) {
    EXPECT_FALSE(r.samples.empty()) << r.probe;
    EXPECT_TRUE(r.summary.has_value()) << r.probe;
  }
  if (unsupported) {
    ASSERT_FALSE(r.verdict.reasons.empty()) << r.probe;
    EXPECT_FALSE(r.verdict.reasons.front().second.empty()) << r.probe;
  }
}

TEST(KernelProbes, EveryPromisedProbeIsRegisteredAndComplete) {
  for (const char* name : {"timer.rdtscp",
                           "timer.rdtsc_fenced",
                           "timer.cntvct",
                           "timer.rdtime",
                           "timer.clock_gettime_monotonic",
                           "timer.clock_gettime_monotonic_raw",
                           "timer.clock_gettime_syscall",
                           "timer.gettimeofday",
                           "syscall.getppid",
                           "syscall.getsid",
                           "syscall.getuid",
                           "syscall.gettimeofday_vdso",
                           "syscall.gettimeofday_syscall",
                           "syscall.clock_gettime_vdso",
                           "syscall.clock_gettime_syscall",
                           "syscall.read",
                           "syscall.write",
                           "syscall.enosys",
                           "syscall.sched_yield",
                           "trap.signal",
                           "trap.pagefault",
                           "create.fork",
                           "create.vfork",
                           "create.posix_spawn",
                           "create.fork_exec",
                           "create.pthread",
                           "create.pthread_detached",
                           "create.std_thread",
                           "create.pthread_scope_process",
                           "create.pthread_scope_system"}) {
    const ProbeDescriptor* probe = find_probe(name);
    ASSERT_NE(probe, nullptr) << name;
    EXPECT_EQ(descriptor_problems(*probe), "") << name;
  }
}

TEST(KernelProbes, TimerSourcesReportTheirResolution) {
  int ok = 0;
  for (const auto& r : run_family({"timer.*"})) {
    expect_ok_or_unsupported(r);
    if (!measured_ok(r)) continue;
    ++ok;
    ASSERT_TRUE(r.derived.contains("resolution_ns")) << r.probe;
    EXPECT_GT(r.derived["resolution_ns"].get<double>(), 0) << r.probe;
    EXPECT_TRUE(r.derived.contains("resolution_limited_by")) << r.probe;
  }
  EXPECT_GE(ok, 4);  // the clock_gettime and gettimeofday sources exist on every Linux
}

TEST(KernelProbes, CycleCountersOfOtherArchitecturesSayWhy) {
  for (const auto& r : run_family({"timer.*"})) {
#if !defined(__aarch64__)
    if (r.probe == "timer.cntvct") {
      EXPECT_EQ(r.verdict.status, Status::unsupported);
    }
#endif
#if !defined(__x86_64__)
    if (r.probe == "timer.rdtscp" || r.probe == "timer.rdtsc_fenced") {
      EXPECT_EQ(r.verdict.status, Status::unsupported);
    }
#endif
#if !(defined(__riscv) && __riscv_xlen == 64)
    if (r.probe == "timer.rdtime") {
      EXPECT_EQ(r.verdict.status, Status::unsupported);
    }
#endif
  }
}

TEST(KernelProbes, SystemCallsRun) {
  for (const auto& r : run_family({"syscall.*"})) {
    if (r.probe == "syscall.sched_yield" && r.verdict.status == Status::suspect &&
        r.derived.value("involuntary_switches_per_op", 0.0) > 0) {
      // Another task was runnable on the CPU (a test running beside this
      // one), so some yields switched to it for a whole slice: the samples
      // split into modes and calibration saw the slow batches. The record
      // says so (a note and the count); those are its only reasons.
      for (const auto& [code, detail] : r.verdict.reasons)
        EXPECT_TRUE(code == Reason::unstable || code == Reason::timer_quantization) << detail;
      EXPECT_FALSE(r.notes.empty());
      continue;
    }
    expect_ok_or_unsupported(r);
    if (r.probe == "syscall.enosys" && measured_ok(r)) {
      EXPECT_TRUE(r.derived.contains("syscall_number"));
    }
    if (r.probe == "syscall.sched_yield" && measured_ok(r)) {
      EXPECT_TRUE(r.derived.contains("involuntary_switches_per_op"));
      EXPECT_TRUE(r.derived.contains("voluntary_switches_per_op"));
    }
  }
}

TEST(KernelProbes, SignalRoundTripIsCheckedAndHasItsBaseline) {
  for (const auto& r : run_family({"trap.signal"})) {
    expect_ok_or_unsupported(r);
    ASSERT_TRUE(measured_ok(r)) << reasons(r);
    const Check* delivered = find_check(r, "signals_delivered");
    ASSERT_NE(delivered, nullptr);
    EXPECT_TRUE(delivered->ok);
    ASSERT_TRUE(r.baseline.has_value());
    EXPECT_GT(r.baseline->value, 0);
  }
}

TEST(KernelProbes, PageFaultCountsOneMinorFaultPerOp) {
  const auto results = run_family({"trap.pagefault"});
  EXPECT_EQ(results.size(), 2u);  // touch=write and touch=read
  for (const auto& r : results) {
    expect_ok_or_unsupported(r);
    const Check* faults = find_check(r, "minor_faults");
    ASSERT_NE(faults, nullptr) << r.params.at("touch");
    EXPECT_TRUE(faults->ok) << r.params.at("touch") << " ratio " << faults->ratio.value_or(-1);
  }
}

// Every creation probe in the registry: processes and threads leave no child
// behind; fibers, contexts and coroutines are created without the kernel
// switching (where the record carries that check, it must hold).
TEST(KernelProbes, CreationLeavesNoChildBehind) {
  for (const auto& r : run_family({"create"})) {
    expect_ok_or_unsupported(r);
    if (const Check* kernel = find_check(r, "kernel_not_involved")) {
      EXPECT_TRUE(kernel->ok) << r.probe << ": " << kernel->detail;
    }
    if (r.probe == "create.posix_spawn" || r.probe == "create.fork_exec") {
      // The helper sits next to ctxbench-engine, not next to this test binary.
      if (r.verdict.status == Status::unsupported) {
        EXPECT_EQ(r.verdict.reasons.front().first, Reason::built_without);
        EXPECT_NE(r.verdict.reasons.front().second.find("ctxbench-exit0"), std::string::npos);
      }
    }
  }
  errno = 0;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST(KernelProbes, ProcessContentionScopeIsNeverFaked) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  const bool accepted = pthread_attr_setscope(&attr, PTHREAD_SCOPE_PROCESS) == 0;
  pthread_attr_destroy(&attr);
  for (const auto& r : run_family({"create.pthread_scope_process"})) {
    if (accepted) {
      EXPECT_TRUE(measured_ok(r)) << reasons(r);
    } else {
      ASSERT_EQ(r.verdict.status, Status::unsupported);
      EXPECT_NE(r.verdict.reasons.front().second.find("PTHREAD_SCOPE_PROCESS"), std::string::npos);
      EXPECT_TRUE(r.samples.empty());
    }
  }
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
