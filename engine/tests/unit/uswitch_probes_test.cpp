// The user-level switch probes (every uswitch.* probe in the registry, so a
// new one is tested here without an edit), their kernel counterpart
// (switch.threads_round_robin) and the fibers-vs-threads preset: each runs
// and says what it measured (one op is one switch; the timer correction is
// applied; the kernel saw no switches where none may happen, and the
// expected ones where they must), a probe that needs Boost is `unsupported`
// with the build's reason when built without it, and swapcontext's
// signal-mask system call is counted with strace. The creation probes beside
// them are tested with the create family. Asserts on checks and record shape,
// never on speed.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "measure/harness.hpp"
#include "model/registry.hpp"
#include "os/timer.hpp"
#include "plan/presets.hpp"
#include "probe_test_support.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {

using namespace ctx;
using namespace ctx::testing;

Result run(const std::string& name, const Params& overrides = {}) { return run_default_variant(name, overrides); }

bool measured(const Result& r) { return r.verdict.status == Status::ok || r.verdict.status == Status::suspect; }

constexpr bool with_boost = CTXBENCH_HAVE_BOOST_CONTEXT && CTXBENCH_HAVE_BOOST_FIBER;

// Unsupported for the one reason a build may give: it was built without Boost.
bool built_without_boost(const Result& r) {
  return !with_boost && r.verdict.status == Status::unsupported && !r.verdict.reasons.empty() &&
         r.verdict.reasons.front().first == Reason::built_without;
}

TEST(UswitchProbes, OneOpIsOneSwitchNotARoundTrip) {
  for (const auto* probe : family_probes("uswitch")) {
    EXPECT_TRUE(std::regex_search(probe->op, std::regex("switch|transfer|swapcontext")))
        << probe->name << ": " << probe->op;
    EXPECT_EQ(probe->op.find("round trip ="), std::string::npos) << probe->name;
  }
}

// The kernel's counts include preemptions by any other task on the CPU (under
// ctest -j a yielding test can preempt the measuring thread hundreds of times
// in a run), which the check rightly calls suspect; so a probe gets three
// attempts, and one must show the kernel left alone. A switch that entered
// the scheduler on every op fails all three.
TEST(UswitchProbes, UserLevelSwitchesRunWithoutTheKernel) {
  for (const auto* probe : family_probes("uswitch")) {
    std::string seen;
    bool alone = false;
    for (int attempt = 0; attempt < 3 && !alone; ++attempt) {
      const Result r = run(probe->name);
      if (built_without_boost(r)) {
        alone = true;
        break;
      }
      ASSERT_TRUE(measured(r)) << probe->name << ": " << reasons(r);
      EXPECT_TRUE(r.timer_corrected) << probe->name;
      EXPECT_FALSE(r.samples.empty()) << probe->name;
      const Check* kernel = find_check(r, "kernel_not_involved");
      ASSERT_NE(kernel, nullptr) << probe->name;
      // ucontext enters the kernel (rt_sigprocmask) but must not switch there either.
      alone = kernel->ok;
      if (!alone) seen += kernel->detail + "; ";
    }
    EXPECT_TRUE(alone) << probe->name << ": " << seen;
  }
}

// Where one iteration is a ping-pong round trip (two ops), the record says
// what the round trip costs.
TEST(UswitchProbes, PingPongsGiveTheRoundTripToo) {
  for (const auto* probe : family_probes("uswitch")) {
    if (probe->ops_per_iteration(default_params(*probe)) != 2) continue;
    const Result r = run(probe->name);
    if (built_without_boost(r)) continue;
    ASSERT_TRUE(measured(r)) << probe->name << ": " << reasons(r);
    ASSERT_TRUE(r.derived.contains("per_round_trip_ns")) << probe->name;
    EXPECT_DOUBLE_EQ(r.derived["per_round_trip_ns"].get<double>(), 2 * r.summary->median) << probe->name;
  }
}

TEST(UswitchProbes, AsmFullVariantSaysWhatItSaves) {
  const Result r = run("uswitch.asm", {{"fpstate", "full"}});
  if (r.verdict.status == Status::unsupported) GTEST_SKIP() << reasons(r);
  ASSERT_TRUE(measured(r)) << reasons(r);
  EXPECT_GT(r.derived["fp_state_bytes"].get<double>(), 0);
  EXPECT_NE(r.derived["saved_state"].get<std::string>().find("callee-saved"), std::string::npos);
}

TEST(UswitchProbes, AsmFpControlDiffersIsNoted) {
  const Result r = run("uswitch.asm", {{"fpcontrol", "differs"}});
  ASSERT_TRUE(measured(r)) << reasons(r);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.back().find("inexact"), std::string::npos);
}

TEST(UswitchProbes, UcontextCarriesItsSystemCallAsBaseline) {
  const Result r = run("uswitch.ucontext");
  ASSERT_TRUE(measured(r)) << reasons(r);
  ASSERT_TRUE(r.baseline.has_value());
  EXPECT_NE(r.baseline->name.find("rt_sigprocmask"), std::string::npos);
  bool noted = false;
  for (const auto& note : r.notes) noted = noted || note.find("rt_sigprocmask") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(UswitchProbes, BoostFiberTakesTurnsRoundRobin) {
  if (!with_boost) GTEST_SKIP() << "built without Boost";
  for (const std::string fibers : {"2", "4", "8"}) {
    const Result r = run("uswitch.boost_fiber", {{"fibers", fibers}});
    ASSERT_TRUE(measured(r)) << reasons(r);
    const Check* turns = find_check(r, "fiber_turns");
    ASSERT_NE(turns, nullptr);
    EXPECT_TRUE(turns->ok) << turns->observed.dump();
    EXPECT_EQ(r.numeric_params.at("fibers"), std::stod(fibers));
  }
}

// With Boost every probe runs; without it, the ones that need it say so in
// the build's words, with no figure.
TEST(UswitchProbes, BoostProbesAreUnsupportedWithTheBuildsReasonWithoutBoost) {
  int without = 0;
  for (const auto& probe : all_probes()) {
    if (probe.supported == nullptr) continue;
    const Support support = probe.supported(default_params(probe));
    if (support.ok || support.code != Reason::built_without || support.reason.find("Boost") == std::string::npos)
      continue;
    ++without;
    EXPECT_FALSE(with_boost) << probe.name << " says it was built without Boost in a build with Boost";
    const Result r = run(probe.name);
    ASSERT_EQ(r.verdict.status, Status::unsupported) << probe.name;
    EXPECT_EQ(r.verdict.reasons.front().second, "built without Boost.Context/Boost.Fiber") << probe.name;
    EXPECT_FALSE(r.summary.has_value());
  }
  if (!with_boost) {
    EXPECT_GT(without, 0) << "a build without Boost lists no probe as built without it";
  }
}

TEST(ThreadsRoundRobin, EveryThreadLeavesTheCpuOncePerHandOff) {
  for (const std::string threads : {"2", "4"}) {
    // policy=batch: the classic model in which every hand-off is a sleep
    // (the default, normal, lets a woken thread preempt its waker instead).
    const Result r = run("switch.threads_round_robin", {{"threads", threads}, {"policy", "batch"}});
    ASSERT_TRUE(measured(r)) << reasons(r);
    const Check* main = find_check(r, "voluntary+involuntary_switches.measuring_task");
    const Check* partners = find_check(r, "voluntary+involuntary_switches.partners");
    ASSERT_NE(main, nullptr);
    ASSERT_NE(partners, nullptr);
    ASSERT_NE(find_check(r, "placement"), nullptr);
    EXPECT_EQ(r.placement_cpus.size(), std::stoul(threads));
    // Pinned to one CPU, the others run only while the measuring thread is
    // off it, so it leaves the CPU at least once per lap, whatever else runs
    // there: asleep in FUTEX_WAIT, or (on a busy CPU, under SCHED_BATCH)
    // preempted between passing the baton and waiting, after which it finds
    // the baton back and does not sleep.
    const double involuntary = r.derived["involuntary_switches_measuring_task"].get<double>();
    EXPECT_GE(main->observed.get<double>(), main->expected.get<double>()) << reasons(r);
    // So does every partner, once per wait for the baton, except perhaps its
    // first (the baton may be there before the partner thread first waits).
    const double n = std::stod(threads);
    EXPECT_GE(partners->observed.get<double>(), partners->expected.get<double>() - (n - 1)) << reasons(r);
    // It sleeps at most once per lap: a sleep is a wait for the baton.
    EXPECT_LE(main->observed.get<double>() - involuntary, main->expected.get<double>()) << reasons(r);
    EXPECT_NE(r.verdict.status, Status::failed);
  }
}

TEST(ThreadsRoundRobin, OneThreadIsUnsupportedNotBroken) {
  const Result r = run("switch.threads_round_robin", {{"threads", "1"}});
  EXPECT_EQ(r.verdict.status, Status::unsupported);
}

// ---- swapcontext's system call, counted by the kernel's tracer ------------------------

// Calls of `syscall` strace counted in a run of `command`; -1 if strace could
// not trace it (not installed, or ptrace refused).
long strace_count(const std::string& syscall, const std::string& command, std::string* why) {
  // LeakSanitizer cannot run under a tracer; the count does not need it.
  const std::string line =
      "ASAN_OPTIONS=detect_leaks=0 strace -f -qq -c -U calls,name -e trace=" + syscall + " " + command + " 2>&1";
  std::FILE* pipe = popen(line.c_str(), "r");
  if (!pipe) {
    *why = "popen failed";
    return -1;
  }
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
  const int status = pclose(pipe);
  std::smatch match;
  const std::regex row("\\n\\s*([0-9]+)\\s+" + syscall + "\\b");
  if (status != 0 || !std::regex_search(output, match, row)) {
    *why = "strace gave no count (status " + std::to_string(status) + "): " + output;
    return -1;
  }
  return std::stol(match[1]);
}

TEST(UcontextSystemCalls, EverySwapcontextMakesOneRtSigprocmask) {
#ifndef CTXBENCH_USWITCH_SELFTEST
  GTEST_SKIP() << "no ctxbench-uswitch-selftest in this build";
#else
  std::string why;
  const std::string selftest = CTXBENCH_USWITCH_SELFTEST;
  const long few = strace_count("rt_sigprocmask", selftest + " --ucontext-swaps 1000", &why);
  if (few < 0) GTEST_SKIP() << "cannot trace here: " << why;
  const long many = strace_count("rt_sigprocmask", selftest + " --ucontext-swaps 3000", &why);
  ASSERT_GE(many, 0) << why;
  // Start-up (the loader, getcontext) makes a few calls of its own; the
  // difference is the 2000 extra swapcontext calls alone.
  EXPECT_EQ(many - few, 2000) << few << " calls for 1000 swaps, " << many << " for 3000";
#endif
}

// ---- the preset and the parameter it fixes --------------------------------------------------

// The preset is a selection of ordinary variants: 4 workers x 1,000,000
// switches are parameters of the round-robin probes, the coroutine and the
// two-thread futex hand-off stand beside them, nothing more.
TEST(FibersVsThreadsPreset, IsASelectionOfOrdinaryVariants) {
  const auto variants = expand(all_probes(), preset_selection("fibers-vs-threads"));
  ASSERT_EQ(variants.size(), 4u);
  EXPECT_EQ(variants[0].probe->name, "uswitch.coroutine");
  EXPECT_EQ(variants[0].params, Params{});
  EXPECT_EQ(variants[1].probe->name, "uswitch.boost_fiber");
  EXPECT_EQ(variants[1].params, (Params{{"fibers", "4"}, {"laps", "1000000"}}));
  EXPECT_EQ(variants[2].probe->name, "switch.futex");
  EXPECT_EQ(variants[2].params,
            (Params{{"between", "threads"}, {"cpus", "same"}, {"idle", "free"}, {"policy", "batch"}}));
  EXPECT_EQ(variants[3].probe->name, "switch.threads_round_robin");
  EXPECT_EQ(variants[3].params, (Params{{"cpus", "same"}, {"laps", "1000000"}, {"policy", "batch"}, {"threads", "4"}}));
  EXPECT_THROW(preset_selection("no-such-preset"), UsageError);
}

// `laps` fixes the timed work: samples of 10,000 laps (N switches each), as
// many as the laps make, whatever --samples says; timer-corrected as always.
TEST(RoundRobinLaps, FixTheTimedWork) {
  for (const auto* probe : {"uswitch.boost_fiber", "switch.threads_round_robin"}) {
    const Result r = run(probe, {{"laps", "10000"}});
    if (!with_boost && r.verdict.status == Status::unsupported) continue;
    ASSERT_TRUE(measured(r)) << probe << ": " << reasons(r);
    EXPECT_EQ(r.samples.size(), 1u) << probe;
    EXPECT_EQ(r.ops_per_sample, 40000u) << probe;  // 10,000 laps of 4 workers
    EXPECT_EQ(r.numeric_params.at("laps"), 10000) << probe;
    EXPECT_TRUE(r.timer_corrected) << probe;
  }
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
