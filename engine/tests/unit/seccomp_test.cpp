// The seccomp axis: the filters' programs and what the kernel's cache can
// answer for them (pure), variants measured under a filter that leave the
// engine's own threads unfiltered, and a refusal to install one becoming an
// `unsupported` record. Figures are never asserted: only what was installed.
#include <dirent.h>
#include <gtest/gtest.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "os/sandbox.hpp"
#include "os/seccomp_filter.hpp"
#include "probe_test_support.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;
using namespace ctx::testing;

// Seccomp: of every thread of this process; the engine's threads must all read 0.
std::vector<int> every_thread_seccomp_mode() {
  std::vector<int> modes;
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return modes;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const auto sandbox = read_process_sandbox(std::string("/proc/self/task/") + entry->d_name + "/status");
    modes.push_back(sandbox.seccomp_mode.value_or(-1));
  }
  closedir(dir);
  return modes;
}

TEST(Seccomp, TheAllowProgramReadsAnArgumentSoTheCacheNeverAnswers) {
  const SeccompFilter filter = build_seccomp_filter("allow");
  EXPECT_EQ(filter.program.size(), 2u);
  EXPECT_EQ(filter.rules, 0u);
  for (const long number : {long{SYS_getppid}, long{SYS_read}, long{SYS_write}})
    EXPECT_FALSE(answered_by_cache(filter.program, number, native_audit_arch())) << number;
}

TEST(Seccomp, AnAllowProgramWithListedCallsLeavesTheOthersToTheCache) {
  const SeccompFilter filter = build_seccomp_filter("allow", {SYS_read, SYS_futex});
  EXPECT_EQ(filter.program.size(), 6u);  // load nr, two jumps, allow, load argument, allow
  EXPECT_FALSE(answered_by_cache(filter.program, SYS_read, native_audit_arch()));
  EXPECT_FALSE(answered_by_cache(filter.program, SYS_futex, native_audit_arch()));
  EXPECT_TRUE(answered_by_cache(filter.program, SYS_getppid, native_audit_arch()));
  EXPECT_TRUE(answered_by_cache(filter.program, SYS_write, native_audit_arch()));
}

TEST(Seccomp, TheRecordNamesWhichOfTheProbesCallsTheCacheAnswers) {
  const SeccompFilter filter = build_seccomp_filter("allow", {SYS_read});
  nlohmann::json derived = nlohmann::json::object();
  describe_filter(filter, {{"read", SYS_read}, {"write", SYS_write}}, derived);
  EXPECT_EQ(derived["seccomp_rules"], 0);
  EXPECT_EQ(derived["seccomp_instructions"], 5);
  EXPECT_EQ(derived["seccomp_calls"], 2);
  EXPECT_EQ(derived["seccomp_calls_cached"], 1);
  const std::string cache = derived["seccomp_cache"];
  EXPECT_NE(cache.find("can answer write"), std::string::npos) << cache;
  EXPECT_NE(cache.find("runs on every read call"), std::string::npos) << cache;
  nlohmann::json none = nlohmann::json::object();
  describe_filter(build_seccomp_filter("allow"), {{"read", SYS_read}, {"write", SYS_write}}, none);
  EXPECT_EQ(none["seccomp_calls_cached"], 0);
  EXPECT_NE(none["seccomp_cache"].get<std::string>().find("runs on every call"), std::string::npos);
}

TEST(Seccomp, TheProfileIsBuiltWithLibseccompOrSaysItWasBuiltWithout) {
  if (!have_libseccomp()) {
    try {
      build_seccomp_filter("profile");
      FAIL() << "a profile without libseccomp";
    } catch (const ProbeError& e) {
      EXPECT_EQ(e.code, Reason::built_without);
      EXPECT_EQ(e.status, Status::unsupported);
    }
    return;
  }
  const SeccompFilter filter = build_seccomp_filter("profile");
  EXPECT_GT(filter.rules, 200u);                   // a few hundred rules
  EXPECT_GT(filter.program.size(), filter.rules);  // at least one jump per rule
  const auto arch = native_audit_arch();
  // Allowed by name: the cache answers. Allowed for some arguments only: it cannot.
  EXPECT_TRUE(answered_by_cache(filter.program, SYS_getppid, arch));
  EXPECT_TRUE(answered_by_cache(filter.program, SYS_read, arch));
  EXPECT_FALSE(answered_by_cache(filter.program, SYS_clone, arch));
  // Refused (EPERM): only ALLOW is cached.
  EXPECT_FALSE(answered_by_cache(filter.program, SYS_mount, arch));
  // Another architecture's calls take the other branch of the arch check.
  EXPECT_FALSE(answered_by_cache(filter.program, SYS_getppid, 0x12345678u));
}

TEST(Seccomp, AVariantUnderAFilterSaysWhatWasInstalledAndTheEngineStaysUnfiltered) {
  ASSERT_EQ(read_process_sandbox("/proc/self/status").seccomp_mode.value_or(-1), 0)
      << "the tests themselves run under a filter";
  std::vector<std::string> modes = {"allow"};
  if (have_libseccomp()) modes.push_back("profile");
  for (const auto& mode : modes) {
    const Result r = run_probe("syscall.getppid", {{"seccomp", mode}});
    if (r.verdict.status == Status::unsupported && !r.verdict.reasons.empty() &&
        r.verdict.reasons.front().first == Reason::permission_denied)
      GTEST_SKIP() << "this machine refuses seccomp filters: " << reasons(r);
    ASSERT_TRUE(measured_ok(r)) << mode << ": " << reasons(r);
    EXPECT_EQ(r.params.at("seccomp"), mode);
    EXPECT_GT(r.derived.at("seccomp_instructions").get<double>(), 0) << mode;
    EXPECT_EQ(r.derived.at("seccomp_calls").get<double>(), 1) << mode;
    // allow is evaluated on every call; the profile allows getppid by name.
    EXPECT_EQ(r.derived.at("seccomp_calls_cached").get<double>(), mode == "allow" ? 0 : 1) << mode;
    for (const int thread_mode : every_thread_seccomp_mode()) EXPECT_EQ(thread_mode, 0) << "after " << mode;
    EXPECT_EQ(capture_sandbox()["seccomp"]["mode"], "disabled") << "after " << mode;
  }
}

TEST(Seccomp, ASwitchVariantNamesBothItsCallsAndLeavesTheEngineUnfiltered) {
  const Result r = run_probe(
      "switch.pipe",
      {{"between", "processes"}, {"cpus", "same"}, {"policy", "normal"}, {"idle", "free"}, {"seccomp", "allow"}});
  ASSERT_NE(r.verdict.status, Status::failed) << reasons(r);
  ASSERT_NE(r.verdict.status, Status::unsupported) << reasons(r);
  EXPECT_EQ(r.derived.at("seccomp_calls").get<double>(), 2);  // read and write
  for (const int thread_mode : every_thread_seccomp_mode()) EXPECT_EQ(thread_mode, 0);
}

TEST(Seccomp, AFilterRefusedByAnOuterSandboxIsUnsupportedWithTheReason) {
  // An outer filter that answers seccomp() with EPERM, as a container's may:
  // installed on a thread of its own, which then measures a variant.
  SeccompFilter outer;
  outer.mode = "outer";
  outer.program = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_seccomp, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  Result r;
  std::string outer_error;
  std::thread confined([&] {
    try {
      install_seccomp_filter(outer);
    } catch (const ProbeError& e) {
      outer_error = e.what();
      return;
    }
    r = run_probe("syscall.getppid", {{"seccomp", "allow"}});
  });
  confined.join();
  ASSERT_TRUE(outer_error.empty()) << outer_error;
  EXPECT_EQ(r.verdict.status, Status::unsupported) << reasons(r);
  ASSERT_FALSE(r.verdict.reasons.empty());
  EXPECT_EQ(r.verdict.reasons.front().first, Reason::permission_denied);
  EXPECT_NE(r.verdict.reasons.front().second.find("refused"), std::string::npos);
  for (const int thread_mode : every_thread_seccomp_mode()) EXPECT_EQ(thread_mode, 0);
}

TEST(Seccomp, AStatusFileGivesModeFiltersAndTracer) {
  const std::string path = ::testing::TempDir() + "/status";
  std::ofstream(path) << "Name:\tx\nTracerPid:\t812\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t3\n";
  const auto sandbox = read_process_sandbox(path);
  EXPECT_EQ(sandbox.seccomp_mode, 2);
  EXPECT_EQ(sandbox.seccomp_filters, 3);
  EXPECT_EQ(sandbox.tracer_pid, 812);
  const auto block = sandbox_json(sandbox, path, {{"state", "disabled"}});
  EXPECT_EQ(block["seccomp"]["mode"], "filter");
  EXPECT_EQ(block["traced"], true);
  const auto missing = read_process_sandbox(path + ".absent");
  EXPECT_FALSE(missing.seccomp_mode);
  EXPECT_EQ(sandbox_json(missing, path + ".absent", {})["seccomp"]["mode"], "unknown");
}

TEST(Seccomp, TracepointsCountEveryBufferAndRecordingNeedsOneThatIsOn) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "tracefs";
  fs::remove_all(root);
  fs::create_directories(root / "instances" / "a");
  fs::create_directories(root / "instances" / "b");
  std::ofstream(root / "set_event") << "";
  std::ofstream(root / "tracing_on") << "1\n";
  std::ofstream(root / "instances" / "a" / "set_event") << "sched:sched_switch\nsched:sched_wakeup\n";
  std::ofstream(root / "instances" / "a" / "tracing_on") << "0\n";
  std::ofstream(root / "instances" / "b" / "set_event") << "";
  std::ofstream(root / "instances" / "b" / "tracing_on") << "1\n";
  auto block = tracepoints_json({(root / "absent").string(), root.string()});
  EXPECT_EQ(block["source"], root.string());
  EXPECT_EQ(block["enabled"], 2);
  EXPECT_EQ(block["recording"], false);  // a's events are enabled, its buffer is off
  std::ofstream(root / "instances" / "a" / "tracing_on") << "1\n";
  EXPECT_EQ(tracepoints_json({root.string()})["recording"], true);
  std::ofstream(root / "set_event") << "raw_syscalls:sys_enter\n";
  EXPECT_EQ(tracepoints_json({root.string()})["enabled"], 3);
  const auto none = tracepoints_json({(root / "absent").string()});
  EXPECT_TRUE(none["enabled"].is_null());
  EXPECT_TRUE(none["recording"].is_null());
  EXPECT_NE(none["why"].get<std::string>().find("set_event"), std::string::npos);
  fs::remove_all(root);
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
