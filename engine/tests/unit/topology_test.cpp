// The CPU topology on fake sysfs trees (fake_sysfs.hpp): what is read, how
// pairs are classed, which CPUs the smt/llc/remote placements pick, the
// cells a matrix measures (all pairs, or the stratified sample past the
// limit on a 128-CPU two-node machine), and `unsupported` where a class is
// absent (this project's 2-vCPU VM: no SMT, one LLC, one node).
#include "os/topology.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <set>

#include "fake_sysfs.hpp"
#include "os/env.hpp"
#include "os/tasks.hpp"
#include "os/timer.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {

using namespace ctx;
using namespace ctx::testing;

// 2 packages (nodes) x 32 cores x 2 threads = 128 CPUs; 4 cores per LLC.
const MachineShape big{
    .packages = 2, .cores_per_package = 32, .threads_per_core = 2, .cores_per_llc = 4, .smt_control = "on"};
// The project's VM: 2 vCPUs, one LLC, no SMT, one node.
const MachineShape vm{.packages = 1, .cores_per_package = 2, .threads_per_core = 1, .cores_per_llc = 2};

std::vector<int> range(int first, int last) {
  std::vector<int> cpus;
  for (int c = first; c <= last; ++c) cpus.push_back(c);
  return cpus;
}

Topology read(const FakeSysfs& tree) { return read_topology(sysfs_online_cpus(tree.root()), tree.root()); }

PairClass class_of(const Topology& t, int a, int b) { return classify(*t.find(a), *t.find(b)); }

TEST(Topology, ParsesKernelCpuLists) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list(""), std::vector<int>{});
  EXPECT_EQ(parse_cpu_list("5"), std::vector<int>{5});
}

TEST(Topology, ReadsEveryFieldOfAFakeTree) {
  FakeSysfs tree(big);
  const Topology t = read(tree);
  ASSERT_EQ(t.cpus.size(), 128u);
  EXPECT_EQ(t.smt_control, "on");
  EXPECT_EQ(t.smt_active, true);
  EXPECT_TRUE(t.has_smt_siblings());
  const CpuPlace& first = *t.find(0);
  EXPECT_EQ(first.core, 0);
  EXPECT_EQ(first.package, 0);
  EXPECT_EQ(first.die, 0);
  EXPECT_EQ(first.cluster, -1);  // 65535: unknown
  EXPECT_EQ(first.node, 0);
  EXPECT_EQ(first.llc_level, 3);  // not the L1 instruction cache, not L2
  EXPECT_EQ(first.llc, 0);
  EXPECT_EQ(first.smt_siblings, (std::vector<int>{0, 64}));
  EXPECT_EQ(first.llc_cpus, (std::vector<int>{0, 1, 2, 3, 64, 65, 66, 67}));
  const CpuPlace& last = *t.find(127);
  EXPECT_EQ(last.package, 1);
  EXPECT_EQ(last.node, 1);
  EXPECT_EQ(last.core, 31);
  EXPECT_EQ(last.llc, 15);
  EXPECT_EQ(last.smt_siblings, (std::vector<int>{63, 127}));
}

TEST(Topology, WithoutCachesThePackageStandsInForTheLlc) {
  MachineShape shape = vm;
  shape.caches = false;
  FakeSysfs tree(shape);
  const Topology t = read(tree);
  EXPECT_EQ(t.find(0)->llc_level, 0);
  EXPECT_EQ(t.find(0)->llc_cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(class_of(t, 0, 1), PairClass::llc);
  EXPECT_TRUE(topology_json(t)[0]["llc_level"].is_null());
}

TEST(Topology, ClassesPairsNearestFirst) {
  FakeSysfs tree(big);
  const Topology t = read(tree);
  EXPECT_EQ(class_of(t, 5, 5), PairClass::same_cpu);
  EXPECT_EQ(class_of(t, 0, 64), PairClass::smt);
  EXPECT_EQ(class_of(t, 64, 0), PairClass::smt);
  EXPECT_EQ(class_of(t, 0, 3), PairClass::llc);
  EXPECT_EQ(class_of(t, 0, 67), PairClass::llc);  // another core's second thread, same LLC
  EXPECT_EQ(class_of(t, 0, 4), PairClass::node);  // the next LLC of the package
  EXPECT_EQ(class_of(t, 0, 32), PairClass::other_node);
  EXPECT_EQ(class_of(t, 127, 0), PairClass::other_node);
}

TEST(Topology, OrdersCpusByNodeLlcAndCore) {
  FakeSysfs tree(big);
  const Topology t = read(tree);
  const auto order = topology_order(t, range(0, 127));
  ASSERT_EQ(order.size(), 128u);
  // SMT siblings side by side, each LLC one block, node 0 first.
  EXPECT_EQ(std::vector<int>(order.begin(), order.begin() + 8), (std::vector<int>{0, 64, 1, 65, 2, 66, 3, 67}));
  EXPECT_EQ(std::vector<int>(order.begin() + 8, order.begin() + 10), (std::vector<int>{4, 68}));
  EXPECT_EQ(order[64], 32);
  EXPECT_EQ(order.back(), 127);
}

TEST(Topology, EnvironmentJsonNamesEachField) {
  FakeSysfs tree(big);
  const auto j = topology_json(read(tree));
  ASSERT_EQ(j.size(), 128u);
  EXPECT_EQ(j[64]["cpu"], 64);
  EXPECT_EQ(j[64]["core"], 0);
  EXPECT_EQ(j[64]["node"], 0);
  EXPECT_EQ(j[64]["llc"], 0);
  EXPECT_EQ(j[64]["llc_level"], 3);
  EXPECT_EQ(j[64]["llc_shared_with"], "0-3,64-67");
  EXPECT_EQ(j[64]["smt_siblings"], "0,64");
  EXPECT_TRUE(j[64]["cluster"].is_null());
}

TEST(Topology, EnvironmentCaptureReadsTheOverriddenRoot) {
  FakeSysfs tree(big);
  setenv("CTXBENCH_SYSFS_ROOT", tree.root().c_str(), 1);
  MonotonicRawClock clock;
  const auto env = capture_environment("20260101T000000Z-00000000", characterize(clock, 100), "");
  unsetenv("CTXBENCH_SYSFS_ROOT");
  EXPECT_EQ(env["cpu"]["topology"].size(), 128u);
  EXPECT_EQ(env["cpu"]["topology_root"], tree.root());
  EXPECT_EQ(env["cpu"]["smt"]["control"], "on");
  EXPECT_EQ(env["cpu"]["smt"]["siblings_present"], true);
  EXPECT_EQ(sysfs_root(), "/sys");
}

// ---- placement ----------------------------------------------------------------------
TEST(Placement, SmtLlcAndRemoteMapToTheRightCpus) {
  FakeSysfs tree(big);
  const Topology t = read(tree);
  const auto all = range(0, 127);
  std::string why;
  auto smt = resolve_placement("smt", 2, all, t, &why);
  ASSERT_TRUE(smt) << why;
  EXPECT_EQ(smt->cpus, (std::vector<int>{0, 64}));
  EXPECT_NE(smt->detail.find("SMT siblings"), std::string::npos) << smt->detail;
  auto llc = resolve_placement("llc", 2, all, t, &why);
  ASSERT_TRUE(llc) << why;
  EXPECT_EQ(llc->cpus, (std::vector<int>{0, 1}));
  auto remote = resolve_placement("remote", 3, all, t, &why);
  ASSERT_TRUE(remote) << why;
  EXPECT_EQ(remote->cpus, (std::vector<int>{0, 32, 0}));  // another node first; tasks alternate
  // Within one node, remote is another LLC of that node.
  std::vector<int> package0 = range(0, 31);
  for (int c : range(64, 95)) package0.push_back(c);
  remote = resolve_placement("remote", 2, package0, t, &why);
  ASSERT_TRUE(remote) << why;
  EXPECT_EQ(remote->cpus, (std::vector<int>{0, 4}));
  EXPECT_NE(remote->detail.find("share NUMA node 0"), std::string::npos) << remote->detail;
  // The allowed CPUs decide: without CPU 0's sibling, the first pair of siblings is 1 and 65.
  std::vector<int> no_64 = all;
  no_64.erase(std::find(no_64.begin(), no_64.end(), 64));
  smt = resolve_placement("smt", 2, no_64, t, &why);
  ASSERT_TRUE(smt) << why;
  EXPECT_EQ(smt->cpus, (std::vector<int>{1, 65}));
}

TEST(Placement, AbsentClassesAreUnsupportedWithTheReason) {
  FakeSysfs tree(vm);
  const Topology t = read(tree);
  std::string why;
  EXPECT_FALSE(resolve_placement("smt", 2, {0, 1}, t, &why));
  EXPECT_NE(why.find("SMT siblings"), std::string::npos) << why;
  EXPECT_NE(why.find("notsupported"), std::string::npos) << why;
  const auto llc = resolve_placement("llc", 2, {0, 1}, t, &why);
  ASSERT_TRUE(llc) << why;
  EXPECT_EQ(llc->cpus, (std::vector<int>{0, 1}));
  why.clear();
  EXPECT_FALSE(resolve_placement("remote", 2, {0, 1}, t, &why));
  EXPECT_NE(why.find("no remote CPU"), std::string::npos) << why;
  EXPECT_NE(why.find("L3"), std::string::npos) << why;
  why.clear();
  EXPECT_FALSE(resolve_placement("llc", 2, {1}, t, &why));  // one allowed CPU
  EXPECT_NE(why.find("two CPUs"), std::string::npos) << why;
  // The default placements do not need the topology.
  ASSERT_TRUE(resolve_placement("cross", 2, {0, 1}, Topology{}, &why));
  EXPECT_EQ(resolve_placement("same", 2, {0, 1}, Topology{}, &why)->cpus, (std::vector<int>{0, 0}));
}

// ---- matrix cells ----------------------------------------------------------------------
TEST(MatrixPlan, TwoCpusGiveEveryPair) {
  FakeSysfs tree(vm);
  const Topology t = read(tree);
  MatrixPlan plan = plan_matrix(t, {0, 1}, false, 256);
  EXPECT_FALSE(plan.sampled);
  EXPECT_EQ(plan.pairs, 2u);
  ASSERT_EQ(plan.cells.size(), 2u);
  EXPECT_EQ(plan.cells[0].first, 0);
  EXPECT_EQ(plan.cells[0].second, 1);
  EXPECT_EQ(plan.cells[1].first, 1);
  EXPECT_EQ(plan.cells[0].cls, PairClass::llc);
  plan = plan_matrix(t, {0, 1}, true, 256);
  ASSERT_EQ(plan.cells.size(), 4u);
  EXPECT_EQ(plan.cells[0].cls, PairClass::same_cpu);
  EXPECT_EQ(plan.cells[3].first, 1);
  EXPECT_EQ(plan.cells[3].second, 1);
  EXPECT_EQ(plan.per_class.at("same_cpu"), std::make_pair(std::size_t{2}, std::size_t{2}));
  EXPECT_NE(plan.rule.find("all 4 ordered pairs"), std::string::npos) << plan.rule;
}

TEST(MatrixPlan, UpToTheLimitEveryOrderedPairOnce) {
  FakeSysfs tree({.packages = 2, .cores_per_package = 4, .threads_per_core = 2, .cores_per_llc = 2});
  const Topology t = read(tree);
  const MatrixPlan plan = plan_matrix(t, range(0, 15), false, 256);
  EXPECT_FALSE(plan.sampled);
  ASSERT_EQ(plan.cells.size(), 16u * 15u);
  std::set<std::pair<int, int>> seen;
  for (const auto& c : plan.cells) {
    EXPECT_NE(c.first, c.second);
    EXPECT_EQ(c.cls, class_of(t, c.first, c.second));
    seen.insert({c.first, c.second});
  }
  EXPECT_EQ(seen.size(), plan.cells.size());
  EXPECT_EQ(plan.cpus, topology_order(t, range(0, 15)));
}

TEST(MatrixPlan, PastTheLimitA128CpuMachineIsSampledByClass) {
  FakeSysfs tree(big);
  const Topology t = read(tree);
  const MatrixPlan plan = plan_matrix(t, range(0, 127), false, 256);
  EXPECT_TRUE(plan.sampled);
  EXPECT_EQ(plan.pairs, 128u * 127u);
  ASSERT_EQ(plan.cells.size(), 256u);
  // Every CPU: 1 sibling, 6 other threads in its LLC, 56 more on its node, 64 on the other.
  EXPECT_EQ(plan.per_class.at("smt"), std::make_pair(std::size_t{128}, std::size_t{64}));
  EXPECT_EQ(plan.per_class.at("llc"), std::make_pair(std::size_t{768}, std::size_t{64}));
  EXPECT_EQ(plan.per_class.at("node"), std::make_pair(std::size_t{7168}, std::size_t{64}));
  EXPECT_EQ(plan.per_class.at("other_node"), std::make_pair(std::size_t{8192}, std::size_t{64}));
  std::set<std::pair<int, int>> seen;
  std::set<int> rows;
  std::map<PairClass, int> counted;
  for (const auto& c : plan.cells) {
    EXPECT_EQ(c.cls, class_of(t, c.first, c.second));
    seen.insert({c.first, c.second});
    rows.insert(c.first);
    ++counted[c.cls];
  }
  EXPECT_EQ(seen.size(), 256u);  // no pair twice
  EXPECT_EQ(counted[PairClass::smt], 64);
  EXPECT_GE(rows.size(), 64u);  // spread over the machine, not bunched on the first CPUs
  EXPECT_NE(plan.rule.find("stratified"), std::string::npos);
  // Deterministic: the same machine gives the same cells.
  const MatrixPlan again = plan_matrix(t, range(0, 127), false, 256);
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    EXPECT_EQ(plan.cells[i].first, again.cells[i].first);
    EXPECT_EQ(plan.cells[i].second, again.cells[i].second);
  }
}

TEST(MatrixPlan, ASmallClassGivesItsShareToTheOthers) {
  // 1 package, 8 cores x 2 threads, 4 cores per LLC: 16 smt pairs, 96 llc, 128 node.
  FakeSysfs tree({.packages = 1, .cores_per_package = 8, .threads_per_core = 2, .cores_per_llc = 4});
  const Topology t = read(tree);
  const MatrixPlan plan = plan_matrix(t, range(0, 15), false, 100);
  ASSERT_EQ(plan.cells.size(), 100u);
  EXPECT_EQ(plan.per_class.at("smt"), std::make_pair(std::size_t{16}, std::size_t{16}));
  EXPECT_EQ(plan.per_class.at("llc"), std::make_pair(std::size_t{96}, std::size_t{42}));
  EXPECT_EQ(plan.per_class.at("node"), std::make_pair(std::size_t{128}, std::size_t{42}));
  // With the diagonal a fourth class shares the limit; the remainder goes to the nearest class.
  const MatrixPlan with_diagonal = plan_matrix(t, range(0, 15), true, 101);
  EXPECT_EQ(with_diagonal.cells.size(), 101u);
  EXPECT_EQ(with_diagonal.per_class.at("same_cpu"), std::make_pair(std::size_t{16}, std::size_t{16}));
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
