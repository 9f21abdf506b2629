// The CPU-pair matrix probes through the harness on this machine's CPUs:
// every cell is a measured pair of the right class, the record's samples are
// the cells' samples, the switch checks are per cell and summed, sampling past
// max_pairs keeps to the limit, a fake topology classes the real CPUs, one
// allowed CPU is `unsupported`, and the matrix JSON has exactly the fields the
// schema declares. Asserts on checks and record shape, never on speed.
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>

#include <fstream>
#include <set>

#include "fake_sysfs.hpp"
#include "os/tasks.hpp"
#include "os/topology.hpp"
#include "probe_test_support.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {

using namespace ctx;
using namespace ctx::testing;

bool measured(const Result& r) { return r.verdict.status == Status::ok || r.verdict.status == Status::suspect; }

// The cells' samples are the record's samples, in cell order, without gaps.
void expect_cells_partition_samples(const Result& r) {
  ASSERT_TRUE(r.matrix);
  std::size_t next = 0;
  for (const auto& c : r.matrix->cells) {
    EXPECT_EQ(c.first_sample, next);
    ASSERT_LE(c.first_sample + c.summary.n, r.samples.size());
    const std::vector<double> own(r.samples.begin() + static_cast<std::ptrdiff_t>(c.first_sample),
                                  r.samples.begin() + static_cast<std::ptrdiff_t>(c.first_sample + c.summary.n));
    EXPECT_DOUBLE_EQ(summarize(own).median, c.summary.median);
    EXPECT_GE(c.summary.n, 5u);
    next += c.summary.n;
  }
  EXPECT_EQ(next, r.samples.size());
  EXPECT_EQ(r.summary->n, r.samples.size());
}

TEST(MatrixProbes, CachelineMeasuresEveryOrderedPairOfTwoCpus) {
  const auto cpus = allowed_cpus();
  const Result r = run_default_variant("matrix.cacheline");
  SCOPED_TRACE(reasons(r));
  if (cpus.size() < 2) {
    EXPECT_EQ(r.verdict.status, Status::unsupported);
    return;
  }
  ASSERT_TRUE(measured(r));
  ASSERT_TRUE(r.matrix);
  const Topology topology = read_topology(cpus, sysfs_root());
  EXPECT_EQ(r.matrix->cpus, topology_order(topology, cpus));
  EXPECT_EQ(r.placement_requested, "matrix");
  EXPECT_FALSE(r.baseline);
  const std::size_t n = cpus.size();
  if (n * (n - 1) <= 256) {
    EXPECT_FALSE(r.matrix->sampled);
    EXPECT_EQ(r.matrix->cells.size(), n * (n - 1));
  }
  std::set<std::pair<int, int>> pairs;
  for (const auto& c : r.matrix->cells) {
    EXPECT_NE(c.row, c.column);  // no diagonal
    EXPECT_EQ(c.pair_class, pair_class_name(classify(*topology.find(c.row), *topology.find(c.column))));
    EXPECT_FALSE(c.switches_expected);  // spinning, not switching
    pairs.insert({c.row, c.column});
    EXPECT_GT(c.summary.median, 0);
  }
  EXPECT_EQ(pairs.size(), r.matrix->cells.size());
  expect_cells_partition_samples(r);
  const Check* placement = find_check(r, "placement");
  ASSERT_NE(placement, nullptr);
  EXPECT_EQ(find_check(r, "voluntary_switches"), nullptr);
  // Spinning tasks: any switch is a preemption, and makes the record suspect.
  const Check* preemptions = find_check(r, "preemptions.spinning_tasks");
  ASSERT_NE(preemptions, nullptr);
  EXPECT_EQ(preemptions->expected, 0);
  const bool preempted = preemptions->observed.get<long>() > 0;
  EXPECT_EQ(preemptions->ok, !preempted);
  EXPECT_EQ(preempted, std::any_of(r.verdict.reasons.begin(), r.verdict.reasons.end(),
                                   [](const auto& reason) { return reason.first == Reason::too_many_switches; }));
  EXPECT_NE(r.matrix->diagonal.find("not measured"), std::string::npos);
}

TEST(MatrixProbes, WakeupHasTheDiagonalAndChecksSwitchesInEveryCell) {
  const auto cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "one allowed CPU";
  const Result r = run_default_variant("matrix.wakeup");
  SCOPED_TRACE(reasons(r));
  ASSERT_TRUE(measured(r));
  ASSERT_TRUE(r.matrix);
  const std::size_t n = cpus.size();
  if (n * n <= 256) {
    EXPECT_EQ(r.matrix->cells.size(), n * n);
  }
  expect_cells_partition_samples(r);
  double expected = 0, observed = 0;
  std::size_t diagonal = 0;
  for (const auto& c : r.matrix->cells) {
    ASSERT_TRUE(c.switches_expected && c.switches_observed);
    EXPECT_GT(*c.switches_expected, 0);
    expected += *c.switches_expected;
    observed += *c.switches_observed;
    diagonal += c.row == c.column;
    // A cell is not ok exactly when it says why.
    if (!c.problems.empty()) {
      EXPECT_EQ(r.verdict.status, Status::suspect);
    }
  }
  EXPECT_EQ(diagonal, std::min<std::size_t>(n, r.matrix->cells.size()));
  // The record's switch checks are the cells' counts added up.
  double summed_expected = 0, summed_observed = 0;
  for (const auto& check : r.checks)
    if (check.name.find("_switches.") != std::string::npos) {
      summed_expected += check.expected.get<double>();
      summed_observed += check.observed.get<double>();
      ASSERT_TRUE(check.ratio);
      EXPECT_DOUBLE_EQ(*check.ratio, check.observed.get<double>() / check.expected.get<double>());
    }
  EXPECT_DOUBLE_EQ(summed_expected, expected);
  EXPECT_DOUBLE_EQ(summed_observed, observed);
  ASSERT_TRUE(r.baseline);
  EXPECT_GT(r.baseline->value, 0);
  // Classes: every measured cell in exactly one.
  std::size_t in_classes = 0;
  for (const auto& k : r.matrix->classes) {
    in_classes += k.measured;
    if (k.measured > 0) {
      ASSERT_TRUE(k.summary);
      EXPECT_LE(k.lowest_cell_median, k.highest_cell_median);
    }
  }
  EXPECT_EQ(in_classes, r.matrix->cells.size());
}

TEST(MatrixProbes, PastMaxPairsASampleIsMeasured) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "one allowed CPU";
  const Result r = run_default_variant("matrix.wakeup", {{"max_pairs", "2"}});
  SCOPED_TRACE(reasons(r));
  ASSERT_TRUE(measured(r));
  EXPECT_TRUE(r.matrix->sampled);
  EXPECT_EQ(r.matrix->limit, 2u);
  EXPECT_EQ(r.matrix->cells.size(), 2u);
  EXPECT_NE(r.matrix->rule.find("stratified"), std::string::npos);
}

TEST(MatrixProbes, AFakeTopologyClassesTheRealCpus) {
  const auto cpus = allowed_cpus();
  if (cpus.size() < 2 || cpus[0] != 0 || cpus[1] != 1) GTEST_SKIP() << "needs CPUs 0 and 1";
  // CPUs 0 and 1 described as two threads of one core.
  FakeSysfs tree(
      {.packages = 1, .cores_per_package = 1, .threads_per_core = 2, .cores_per_llc = 1, .smt_control = "on"});
  setenv("CTXBENCH_SYSFS_ROOT", tree.root().c_str(), 1);
  std::string why;
  const auto smt = resolve_placement("smt", 2, &why);
  HarnessOptions options = quick_options();
  const Result r = run_probe("matrix.cacheline", {{"max_pairs", "256"}}, options);
  unsetenv("CTXBENCH_SYSFS_ROOT");
  ASSERT_TRUE(smt) << why;
  EXPECT_EQ(smt->cpus, (std::vector<int>{0, 1}));
  ASSERT_TRUE(measured(r)) << reasons(r);
  EXPECT_EQ(r.matrix->topology_root, tree.root());
  for (const auto& c : r.matrix->cells)
    if (c.row <= 1 && c.column <= 1) {
      EXPECT_EQ(c.pair_class, "smt");
    }
}

TEST(MatrixProbes, OneAllowedCpuIsUnsupported) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(allowed_cpus().front(), &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const Result r = run_default_variant("matrix.wakeup");
  sched_setaffinity(0, sizeof saved, &saved);
  EXPECT_EQ(r.verdict.status, Status::unsupported);
  ASSERT_FALSE(r.verdict.reasons.empty());
  EXPECT_EQ(r.verdict.reasons[0].first, Reason::placement_unavailable);
  EXPECT_NE(r.verdict.reasons[0].second.find("two CPUs"), std::string::npos);
  EXPECT_FALSE(r.summary);
}

// Every field the engine writes in a matrix is declared in the schema, and
// every field the schema requires is written.
void expect_fields_match(const nlohmann::json& object, const nlohmann::json& definition, const std::string& what) {
  for (const auto& [key, value] : object.items())
    EXPECT_TRUE(definition["properties"].contains(key)) << what << "." << key << " is not in the schema";
  for (const auto& key : definition["required"]) EXPECT_TRUE(object.contains(key)) << what << " lacks " << key;
}

TEST(MatrixRecord, FieldsMatchTheSchema) {
  std::ifstream in(std::string(CTXBENCH_SOURCE_DIR) + "/schema/record.schema.json");
  ASSERT_TRUE(in);
  const auto defs = nlohmann::json::parse(in)["$defs"];
  Matrix m;
  m.cpus = {0, 1};
  m.rows = "row task";
  m.columns = "column task";
  m.diagonal = "measured";
  MatrixCell cell;
  cell.row = 0;
  cell.column = 1;
  cell.pair_class = "llc";
  cell.summary = summarize(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8});
  cell.ops_per_sample = 10;
  cell.observed = {0, 1};
  cell.switches_expected = 10;
  cell.switches_observed = 9;
  cell.problems = {"too_few_switches: test"};
  m.cells = {cell};
  MatrixClass k;
  k.name = "llc";
  k.pairs = 2;
  k.measured = 1;
  k.summary = cell.summary;
  m.classes = {k, MatrixClass{"smt", 0, 0, std::nullopt, 0, 0}};
  m.pairs = 2;
  m.limit = 256;
  m.rule = "all";
  m.topology = nlohmann::json::array({{{"cpu", 0}}});
  m.topology_root = "/sys";
  const auto j = matrix_to_json(m);
  expect_fields_match(j, defs["matrix"], "matrix");
  expect_fields_match(j["cells"][0], defs["matrix_cell"], "cell");
  expect_fields_match(j["classes"][0], defs["matrix"]["properties"]["classes"]["items"], "class");
  expect_fields_match(j["classes"][1], defs["matrix"]["properties"]["classes"]["items"], "class");
  expect_fields_match(j["selection"], defs["matrix"]["properties"]["selection"], "selection");
  const auto& classes = defs["pair_class"]["enum"];
  for (PairClass c : {PairClass::same_cpu, PairClass::smt, PairClass::llc, PairClass::node, PairClass::other_node})
    EXPECT_NE(std::find(classes.begin(), classes.end(), pair_class_name(c)), classes.end());
  EXPECT_EQ(j["cells"][0]["ok"], false);
  EXPECT_EQ(j["cells"][0]["switches"]["observed"], 9);
  // Placement values the engine writes are the schema's.
  const auto& placements = defs["placement"]["properties"]["requested"]["enum"];
  for (const auto& value : cpus_param().values)
    EXPECT_NE(std::find(placements.begin(), placements.end(), value), placements.end()) << value;
  Result r;
  r.matrix = m;
  EXPECT_EQ(result_to_json(r)["matrix"], j);
  EXPECT_FALSE(result_to_json(Result{}).contains("matrix"));
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
