// The profile's tally of sampled tracepoints (dedup of a wake-up delivered
// twice, waker CPU against target CPU, voluntary against involuntary, threads
// against processes) on scripted samples, and the record's fields against
// schema/profile.schema.json's required ones.
#include "cli/profile.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "trace/profile_events.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {

using ctx::ProfileEventKind;
using ctx::ProfileSample;
using ctx::SampleTally;

ProfileSample sample(ProfileEventKind kind, std::uint64_t time, int cpu, int tid, std::int64_t a, std::int64_t b = 0) {
  ProfileSample s;
  s.kind = kind;
  s.time = time;
  s.cpu = cpu;
  s.tid = tid;
  s.a = a;
  s.b = b;
  return s;
}

TEST(ProfileTally, WakeUpsPlacedByWakerCpuAndTheMoveTheyMade) {
  SampleTally tally({100, 101});
  // 100 on CPU 0 wakes 101, which last ran on CPU 1: cross-CPU. The sample
  // reached the ring twice at one instant: counted once.
  tally.add(sample(ProfileEventKind::waking, 10, 0, 100, 101, 1));
  tally.add(sample(ProfileEventKind::waking, 10, 0, 100, 101, 1));
  // 101 on CPU 1 wakes 100 (last on CPU 0), and the wake-up moves it to CPU 1: same-CPU.
  tally.add(sample(ProfileEventKind::waking, 20, 1, 101, 100, 0));
  tally.add(sample(ProfileEventKind::migrate, 21, 1, 101, 100, 1));
  // A load balancer's move much later changes no wake-up.
  tally.add(sample(ProfileEventKind::migrate, 5000000, 0, 0, 100, 0));
  tally.settle_all();
  EXPECT_EQ(tally.wakeups, 2u);
  EXPECT_EQ(tally.cross_cpu, 1u);
  EXPECT_EQ(tally.same_cpu, 1u);
  EXPECT_EQ(tally.duplicates, 1u);
  EXPECT_EQ(tally.threads[101].wakeups, 1u);
}

TEST(ProfileTally, EachThreadsMovesToAnotherCpuAreItsMigrations) {
  SampleTally tally({100, 101});
  tally.add(sample(ProfileEventKind::sys_enter, 1, 0, 100, 39));  // the program runs
  auto move = [](std::uint64_t time, std::int64_t task, std::int64_t from, std::int64_t to) {
    ProfileSample s = sample(ProfileEventKind::migrate, time, 0, 0, task, to);
    s.c = from;
    return s;
  };
  tally.add(move(10, 100, 0, 1));
  tally.add(move(20, 100, 1, 0));
  tally.add(move(30, 101, 1, 1));  // placed where it was: no migration
  tally.add(move(40, 999, 0, 1));  // another program's task
  tally.settle_all();
  EXPECT_EQ(tally.threads[100].migrations, 2u);
  EXPECT_EQ(tally.threads[101].migrations, 0u);
  EXPECT_EQ(tally.threads.count(999), 0u);
}

TEST(ProfileTally, OtherProgramsTasksAreNotItsWakeUps) {
  SampleTally tally({100});
  tally.add(sample(ProfileEventKind::waking, 5, 0, 100, 555, 0));
  // Woken by a task of another program: the program's all the same.
  tally.add(sample(ProfileEventKind::waking, 7, 1, 999, 100, 0));
  tally.settle_all();
  EXPECT_EQ(tally.wakeups, 1u);
  EXPECT_EQ(tally.cross_cpu, 1u);
}

TEST(ProfileTally, NewTasksJoinInTimeOrderAcrossRings) {
  SampleTally tally({100});
  // Drained out of order (two rings): the new thread's wake-up comes first.
  tally.add(sample(ProfileEventKind::waking, 30, 1, 100, 200, 1));
  tally.add(sample(ProfileEventKind::newtask, 20, 0, 100, 200, 0x00010000));  // CLONE_THREAD
  tally.add(sample(ProfileEventKind::newtask, 25, 0, 100, 300, 0));           // a process
  tally.settle(26);                                                           // the ones before 26 only
  EXPECT_EQ(tally.threads_created, 1u);
  EXPECT_EQ(tally.processes_created, 1u);
  EXPECT_EQ(tally.wakeups, 0u);
  tally.settle_all();
  EXPECT_EQ(tally.wakeups, 1u);
  EXPECT_EQ(tally.same_cpu, 1u);
}

TEST(ProfileTally, SwitchesSplitByStateLeftIn) {
  SampleTally tally({100});
  tally.add(sample(ProfileEventKind::sched_switch, 1, 0, 100, 1, 100));      // S: asleep
  tally.add(sample(ProfileEventKind::sched_switch, 2, 0, 100, 2, 100));      // D
  tally.add(sample(ProfileEventKind::sched_switch, 3, 0, 100, 0x100, 100));  // R+: preempted
  tally.add(sample(ProfileEventKind::sched_switch, 4, 0, 100, 0, 100));      // R: yielded
  tally.add(sample(ProfileEventKind::sys_enter, 5, 0, 100, 110));
  tally.add(sample(ProfileEventKind::sys_enter, 6, 0, 100, 110));
  tally.settle_all();
  EXPECT_EQ(tally.voluntary, 2u);
  EXPECT_EQ(tally.involuntary, 2u);
  EXPECT_EQ(tally.syscalls_by_call[110], 2u);
  EXPECT_EQ(tally.threads[100].syscalls, 2u);
}

TEST(ProfileTally, InPlaceLatencyFromWakingToTheSwitchThatRunsTheTask) {
  SampleTally tally({100, 101});
  tally.track_cpus();
  // CPU 1 idles (pid 0), CPU 0 runs 100. 100 wakes 101 (last on CPU 1) at
  // t=1000: a cross-CPU wake-up that finds its target idle; CPU 1 runs 101 at
  // t=4000: 3 µs in place.
  tally.add(sample(ProfileEventKind::switch_in, 100, 1, 0, 0, 101));
  tally.add(sample(ProfileEventKind::switch_in, 200, 0, 0, 100, 0));
  tally.add(sample(ProfileEventKind::waking, 1000, 0, 100, 101, 1));
  tally.add(sample(ProfileEventKind::switch_in, 4000, 1, 0, 101, 0));
  // 101 wakes 100 on CPU 1, moving it there (busy with 101): same-CPU, busy,
  // run at t=10000 after 101 sleeps: 5 µs.
  tally.add(sample(ProfileEventKind::switch_in, 4500, 0, 100, 0, 100));
  tally.add(sample(ProfileEventKind::waking, 5000, 1, 101, 100, 0));
  tally.add(sample(ProfileEventKind::migrate, 5001, 1, 101, 100, 1));
  tally.add(sample(ProfileEventKind::switch_in, 10000, 1, 101, 100, 101));
  tally.settle_all();
  EXPECT_TRUE(tally.in_place());
  EXPECT_EQ(tally.idle_target, 1u);
  EXPECT_EQ(tally.busy_target, 1u);
  ASSERT_EQ(tally.latency_cross_cpu.size(), 1u);
  EXPECT_EQ(tally.latency_cross_cpu[0], 3000u);
  ASSERT_EQ(tally.latency_same_cpu.size(), 1u);
  EXPECT_EQ(tally.latency_same_cpu[0], 5000u);
  EXPECT_EQ(tally.latency_idle_target, std::vector<std::uint64_t>{3000});
  EXPECT_EQ(tally.latency_busy_target, std::vector<std::uint64_t>{5000});
  EXPECT_EQ(tally.latency_all, (std::vector<std::uint64_t>{3000, 5000}));
}

TEST(ProfileTally, InPlaceWakeUpOfATaskStillOnItsCpuHasNoLatency) {
  SampleTally tally({100, 101});
  tally.track_cpus();
  // 101 is still on CPU 1 when 100 wakes it (it never slept); it leaves CPU 1
  // later, preempted (a runnable prev_state: 0x100), and comes back without a
  // wake-up: no latency.
  tally.add(sample(ProfileEventKind::switch_in, 10, 1, 0, 101, 0));
  tally.add(sample(ProfileEventKind::waking, 1000, 0, 100, 101, 1));
  tally.add(sample(ProfileEventKind::sched_switch, 2000, 1, 101, 0x100, 101));
  tally.add(sample(ProfileEventKind::switch_in, 2000, 1, 101, 555, 101));
  tally.add(sample(ProfileEventKind::switch_in, 9000, 1, 555, 101, 555));
  // A target CPU that has shown no switch is neither idle nor busy.
  tally.add(sample(ProfileEventKind::waking, 9500, 1, 101, 100, 3));
  tally.settle_all();
  EXPECT_TRUE(tally.latency_cross_cpu.empty());
  EXPECT_TRUE(tally.latency_same_cpu.empty());
  EXPECT_EQ(tally.busy_target, 1u);
  EXPECT_EQ(tally.idle_target, 0u);
  EXPECT_EQ(tally.wakeups, 2u);
}

TEST(ProfileTally, InPlaceWakeUpJustBeforeItsTaskSleptKeepsItsLatency) {
  SampleTally tally({100, 101});
  tally.track_cpus();
  // 100 wakes 101 at t=1000 while 101 is still switching out: 101's switch
  // (asleep, prev_state 1) comes at t=1200; it runs again at t=3000.
  tally.add(sample(ProfileEventKind::switch_in, 10, 1, 0, 101, 0));
  tally.add(sample(ProfileEventKind::waking, 1000, 0, 100, 101, 1));
  tally.add(sample(ProfileEventKind::sched_switch, 1200, 1, 101, 1, 101));
  tally.add(sample(ProfileEventKind::switch_in, 1200, 1, 101, 0, 101));
  tally.add(sample(ProfileEventKind::switch_in, 3000, 1, 0, 101, 0));
  tally.settle_all();
  EXPECT_EQ(tally.latency_cross_cpu, std::vector<std::uint64_t>{2000});
}

TEST(ProfileTally, ACommandsWakeUpsCountFromItsExec) {
  SampleTally tally({100});
  tally.wait_for_exec();
  // The engine lets the child go (a wake-up of 100 before its exec), then the
  // program's first own event (a system call after exec), then its wake-ups.
  tally.add(sample(ProfileEventKind::waking, 10, 0, 1, 100, 0));
  tally.add(sample(ProfileEventKind::sys_enter, 20, 0, 100, 12));
  tally.add(sample(ProfileEventKind::waking, 30, 1, 101, 100, 0));
  tally.settle_all();
  EXPECT_EQ(tally.wakeups, 1u);
}

TEST(ProfileTally, AChildsCountsBeforeItsExecAreKeptAtTheExec) {
  SampleTally tally({100});
  tally.wait_for_exec();
  // The command's own exec (its start: a switch inside it may come first),
  // then it forks 101, which blocks, is woken and moved, and execs; after
  // the exec it counts on.
  tally.add(sample(ProfileEventKind::sched_switch, 4, 0, 100, 2, 100));
  tally.add(sample(ProfileEventKind::exec, 5, 0, 100, 100, 100));
  tally.add(sample(ProfileEventKind::newtask, 10, 0, 100, 101, 0x11));
  ProfileSample slept = sample(ProfileEventKind::sched_switch, 20, 1, 101, 1, 101);
  tally.add(slept);
  ProfileSample moved = sample(ProfileEventKind::migrate, 30, 0, 100, 101, 0);
  moved.c = 1;
  tally.add(moved);
  tally.add(sample(ProfileEventKind::sys_enter, 35, 0, 101, 59));
  tally.add(sample(ProfileEventKind::exec, 40, 0, 101, 101, 101));
  tally.add(sample(ProfileEventKind::sys_enter, 50, 0, 101, 12));
  tally.settle_all();
  ASSERT_EQ(tally.execs.size(), 1u);  // the command's own exec is its start
  const ctx::ExecTally& exec = tally.execs[0];
  EXPECT_EQ(exec.tid, 101);
  EXPECT_EQ(exec.time, 40u);
  EXPECT_EQ(exec.before.voluntary, 1u);
  EXPECT_EQ(exec.before.migrations, 1u);
  EXPECT_EQ(exec.before.syscalls, 1u);
  EXPECT_EQ(tally.threads[101].syscalls, 2u);  // the thread's own counts go on
}

TEST(ProfileTally, AThreadThatExecsCountsUnderTheTidItHad) {
  SampleTally tally({100, 102});
  tally.add(sample(ProfileEventKind::sys_enter, 1, 0, 102, 59));
  tally.add(sample(ProfileEventKind::sys_enter, 2, 0, 102, 59));
  // Thread 102 execs: it takes the leader's pid (100); old_pid says 102.
  tally.add(sample(ProfileEventKind::exec, 3, 0, 100, 100, 102));
  tally.settle_all();
  ASSERT_EQ(tally.execs.size(), 1u);  // attached: every exec is after the start
  EXPECT_EQ(tally.execs[0].tid, 100);
  EXPECT_EQ(tally.execs[0].before.syscalls, 2u);
}

TEST(ProfileTally, WithoutTrackingNoTargetStateIsCounted) {
  SampleTally tally({100, 101});
  tally.add(sample(ProfileEventKind::waking, 1000, 0, 100, 101, 1));
  tally.settle_all();
  EXPECT_FALSE(tally.in_place());
  EXPECT_EQ(tally.idle_target + tally.busy_target, 0u);
}

TEST(ProfileRecord, CarriesEverySchemaRequiredField) {
  std::ifstream in(std::string(CTXBENCH_SOURCE_DIR) + "/schema/profile.schema.json");
  ASSERT_TRUE(in);
  const auto schema = nlohmann::json::parse(in);
  SampleTally tally({100});
  tally.add(sample(ProfileEventKind::sys_enter, 5, 0, 100, 39));
  tally.settle_all();
  ctx::ProfileInputs inputs;
  inputs.env = {{"kind", "env"}};
  inputs.run_id = "20260101T000000-abcdef";
  inputs.command = {"true"};
  inputs.pid = 100;
  inputs.ended = "exited";
  inputs.exit_status = 0;
  inputs.counters.context_switches = 3;
  inputs.tally = &tally;
  inputs.accounting.source = "rusage";
  inputs.accounting.user_s = 0.1;
  const auto record = ctx::profile_to_json(inputs);
  for (const auto& field : schema["required"]) EXPECT_TRUE(record.contains(field)) << field;
  for (const auto& field : schema["properties"]["counts"]["required"])
    EXPECT_TRUE(record["counts"].contains(field)) << field;
  EXPECT_EQ(record["counts"]["context_switches"], 3);
  EXPECT_TRUE(record["counts"]["migrations"].is_null());
  EXPECT_EQ(record["syscalls_by_call"][0]["count"], 1);
  EXPECT_EQ(record["sources"]["context_switches"], "perf_counter");
  // Version 2's fields, null without --trace.
  EXPECT_EQ(record["schema"], 2);
  for (const auto& field : schema["allOf"][0]["then"]["required"]) EXPECT_TRUE(record.contains(field)) << field;
  for (const auto& field : schema["allOf"][0]["then"]["properties"]["counts"]["required"])
    EXPECT_TRUE(record["counts"][field].is_null()) << field;
  EXPECT_TRUE(record["wakeup_latency"].is_null());
  EXPECT_TRUE(record["execs"].is_array() && record["execs"].empty());
}

TEST(ProfileRecord, InPlaceLatenciesAsQuantilesInMicroseconds) {
  SampleTally tally({100, 101});
  tally.track_cpus();
  tally.add(sample(ProfileEventKind::switch_in, 100, 1, 0, 0, 101));
  for (int i = 0; i < 4; ++i) {
    const std::uint64_t t = 1000 + 100000 * static_cast<std::uint64_t>(i);
    tally.add(sample(ProfileEventKind::waking, t, 0, 100, 101, 1));
    tally.add(sample(ProfileEventKind::switch_in, t + 2000 * (i + 1), 1, 0, 101, 0));
    tally.add(sample(ProfileEventKind::switch_in, t + 50000, 1, 101, 0, 101));
  }
  tally.settle_all();
  ctx::ProfileInputs inputs;
  inputs.tally = &tally;
  const auto record = ctx::profile_to_json(inputs);
  const auto& cross = record["wakeup_latency"]["cross_cpu"];
  EXPECT_EQ(cross["n"], 4);
  EXPECT_DOUBLE_EQ(cross["median_us"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(cross["max_us"].get<double>(), 8.0);
  EXPECT_TRUE(record["wakeup_latency"]["same_cpu"].is_null());
  EXPECT_EQ(record["wakeup_latency"]["all"], cross);
  EXPECT_EQ(record["counts"]["wakeups_idle_target"], 4);
  EXPECT_EQ(record["counts"]["wakeups_busy_target"], 0);
}

TEST(ProfileRecord, ListsTheCommandsThreadWhereverItRanks) {
  std::set<int> tasks;
  for (int tid = 100; tid < 120; ++tid) tasks.insert(tid);
  SampleTally tally(tasks);
  // Threads 101..119 switch 2 times each, the command's thread (100) once.
  std::uint64_t t = 1;
  for (int tid = 100; tid < 120; ++tid)
    for (int k = 0; k < (tid == 100 ? 1 : 2); ++k)
      tally.add(sample(ProfileEventKind::sched_switch, t++, 0, tid, 1, tid));
  tally.settle_all();
  ctx::ProfileInputs inputs;
  inputs.pid = 100;
  inputs.tally = &tally;
  const auto record = ctx::profile_to_json(inputs);
  ASSERT_EQ(record["threads"].size(), 17u);
  EXPECT_EQ(record["threads"][16]["tid"], 100);
  EXPECT_EQ(record["threads"][16]["voluntary_switches"], 1);
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
