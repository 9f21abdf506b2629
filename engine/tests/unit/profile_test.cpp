// The profile's tally of sampled tracepoints (dedup of a wake-up delivered
// twice, waker CPU against target CPU, voluntary against involuntary, threads
// against processes) on scripted samples, and the record's fields against
// schema/profile.schema.json's required ones.
#include "profile.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "profile_events.hpp"

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
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
