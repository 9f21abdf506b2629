// Every registered probe is complete; registration keeps names unique and
// sorted; the default-variant rule; and a record round-trips through JSON
// with the fields the schema requires.
#include "model/registry.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "model/stats.hpp"
#include "report/describe.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {

using namespace ctx;

TEST(Registry, EveryDescriptorIsComplete) {
  ASSERT_FALSE(all_probes().empty());
  for (const auto& p : all_probes()) EXPECT_EQ(descriptor_problems(p), "") << p.name;
}

// A figure from_summary writes is a function of the summary: merged rounds
// must compute it again over the pooled samples, not average the rounds'
// (schedule.hpp). So the probe defines it as recompute, or the harness does
// (round_trip_figures); this fails for a new figure defined nowhere.
TEST(Registry, EveryFigureFromTheSummaryIsRecomputedOverMergedRounds) {
  for (const auto& p : all_probes()) {
    if (!p.from_summary) continue;
    const Params params = default_params(p);
    Result r;
    r.params = params;
    r.numeric_params = numeric_params(p, params);
    r.samples = {10, 11, 12};
    r.summary = summarize(r.samples);
    Baseline baseline;
    baseline.samples = {2, 3};
    baseline.summary = summarize(baseline.samples);
    baseline.value = baseline.summary->median;
    r.baseline = baseline;
    p.from_summary(r);
    EXPECT_FALSE(r.derived.empty()) << p.name;
    for (const auto& [name, value] : r.derived.items())
      EXPECT_EQ(aggregation_of(&p, name), Aggregation::recompute) << p.name << ": derived." << name;
  }
}

// The registration function itself, on a registry of the test's own (a
// duplicate among the real probes would stop the binary before any test ran).
TEST(Registry, InsertKeepsNamesSortedFillsDefaultsAndRefusesADuplicate) {
  std::vector<ProbeDescriptor> probes;
  for (const char* name : {"switch.b", "syscall.a", "switch.a"}) {
    ProbeDescriptor d;
    d.name = name;
    insert_probe(probes, std::move(d));
  }
  ASSERT_EQ(probes.size(), 3u);
  EXPECT_EQ(probes[0].name, "switch.a");
  EXPECT_EQ(probes[1].name, "switch.b");
  EXPECT_EQ(probes[2].name, "syscall.a");
  ASSERT_TRUE(probes[0].ops_per_iteration);
  EXPECT_EQ(probes[0].ops_per_iteration({}), 1);
  EXPECT_EQ(probes[0].tasks({}), 1);
  ProbeDescriptor again;
  again.name = "switch.b";
  EXPECT_THROW(insert_probe(probes, std::move(again)), std::logic_error);
  EXPECT_EQ(probes.size(), 3u);
}

TEST(Registry, DefaultVariantRule) {
  ProbeDescriptor d;
  d.name = "switch.x";
  d.params = {{"all", {"a", "b"}, {}, "every value runs"}, {"some", {"1", "2", "3"}, {"2", "3"}, "runs 2 and 3", true}};
  ParamSpec optional{"laps", {"10"}, {}, "unset unless chosen", true};
  optional.optional = true;
  d.params.push_back(optional);
  EXPECT_EQ(default_values(d.params[0]), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(default_values(d.params[1]), (std::vector<std::string>{"2", "3"}));
  EXPECT_TRUE(default_values(d.params[2]).empty());
  EXPECT_EQ(default_params(d), (Params{{"all", "a"}, {"some", "2"}}));
  EXPECT_EQ(numeric_params(d, {{"all", "a"}, {"some", "3"}, {"laps", "10"}}),
            (std::map<std::string, double>{{"some", 3}, {"laps", 10}}));
  d.params[2].runs = {"10"};
  EXPECT_NE(descriptor_problems(d).find("optional"), std::string::npos);
}

TEST(Registry, AxesAreMarked) {
  EXPECT_TRUE(cpus_param().axis);
  EXPECT_TRUE(between_param().axis);
  EXPECT_FALSE(policy_param().axis);
  const ParamSpec own = cpus_param({"same"}, "only the first");
  EXPECT_EQ(own.values, cpus_param().values);
  EXPECT_EQ(own.runs, (std::vector<std::string>{"same"}));
  EXPECT_EQ(own.help, "only the first");
}

std::vector<nlohmann::json> reference_run() {
  const std::string path = std::string(CTXBENCH_SOURCE_DIR) + "/docs/data/reference-run.jsonl";
  std::ifstream probe(path);
  return probe ? read_reference_run(path) : std::vector<nlohmann::json>{};
}

TEST(Registry, GeneratedFilesAreCurrent) {
  // docs/probes.md and schema/probe-names.json are generated; a stale copy fails here.
  for (const auto& [path, text] :
       {std::pair<std::string, std::string>{"/docs/probes.md", probes_markdown(reference_run())},
        {"/schema/probe-names.json", probe_names_json()}}) {
    std::ifstream in(std::string(CTXBENCH_SOURCE_DIR) + path);
    ASSERT_TRUE(in) << path << " is missing: run 'make docs'";
    const std::string stored((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(stored, text) << path << " is stale: run 'make docs'";
  }
}

// The "where the time goes" table lists a probe's default variants at its
// default placement; a variant run only beside them (policy=batch beside
// cpus=same) stands in only where the run has no default one.
TEST(Registry, WhereTheTimeGoesShowsTheDefaultVariants) {
  const auto run = reference_run();
  if (run.empty()) GTEST_SKIP() << "no docs/data/reference-run.jsonl";
  auto pipe = [](const std::string& policy, double median) {
    return nlohmann::json{{"kind", "result"},
                          {"probe", "switch.pipe"},
                          {"params", {{"between", "threads"}, {"cpus", "same"}, {"policy", policy}}},
                          {"unit", "ns"},
                          {"summary", {{"median", median}}},
                          {"corrected", nullptr},
                          {"verdict", {{"status", "ok"}}}};
  };
  const std::string normal_row = "| `switch.pipe` | between=threads cpus=same policy=normal |";
  const std::string batch_row = "| `switch.pipe` | between=threads cpus=same policy=batch |";
  const std::string both = probes_markdown({run.front(), pipe("normal", 1500), pipe("batch", 1100)});
  EXPECT_NE(both.find(normal_row), std::string::npos);
  EXPECT_EQ(both.find(batch_row), std::string::npos);
  const std::string batch_only = probes_markdown({run.front(), pipe("batch", 1100)});
  EXPECT_NE(batch_only.find(batch_row), std::string::npos);
}

TEST(Record, RoundTripKeepsEveryField) {
  Result r;
  r.run_id = "20260101T000000Z-00000000";
  r.probe = "switch.pipe";
  r.family = "switch";
  r.params = {{"cpus", "same"}, {"procs", "4"}};
  r.numeric_params = {{"procs", 4}};
  r.op = "one test operation";
  r.samples = {1, 2, 3};
  r.summary = summarize(r.samples);
  r.baseline = Baseline{"nothing", "switch.pipe.baseline", 0.5, Unit::ns, std::nullopt};
  r.checks.push_back({"voluntary", 10, 9, 0.9, true, "detail"});
  r.verdict.add(Status::suspect, Reason::migrated, "moved");
  const auto j = nlohmann::json::parse(result_to_json(r).dump());
  EXPECT_EQ(j["schema"], 1);
  EXPECT_EQ(j["kind"], "result");
  EXPECT_EQ(j["params"]["procs"], 4);  // numeric params stay numbers
  EXPECT_EQ(j["params"]["cpus"], "same");
  EXPECT_EQ(j["samples"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["summary"]["median"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["corrected"]["median"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["corrected"]["min"].get<double>(), 0.5);  // the same baseline median subtracted
  EXPECT_DOUBLE_EQ(j["corrected"]["p99"].get<double>(), r.summary->p99 - 0.5);
  EXPECT_EQ(j["corrected"]["nonpositive"], false);
  EXPECT_EQ(j["verdict"]["status"], "suspect");
  EXPECT_EQ(j["verdict"]["reasons"][0]["code"], "migrated");
  EXPECT_EQ(j["checks"][0]["ratio"], 0.9);
}

TEST(Record, StabilityKeepsTheModes) {
  Result r;
  r.run_id = "20260101T000000Z-00000000";
  r.probe = "switch.pipe";
  r.family = "switch";
  r.op = "one test operation";
  r.samples = {100, 101, 102, 99, 300, 301, 302, 303};
  r.summary = summarize(r.samples);
  r.stability = assess_stability(r.samples);
  ASSERT_TRUE(r.stability.has_value());
  const auto j = nlohmann::json::parse(result_to_json(r).dump());
  EXPECT_EQ(j["stability"]["unstable"], true);
  ASSERT_EQ(j["stability"]["modes"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["stability"]["modes"][0]["share"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["stability"]["modes"][0]["low"].get<double>(), 99);
  EXPECT_DOUBLE_EQ(j["stability"]["modes"][1]["high"].get<double>(), 303);
  EXPECT_DOUBLE_EQ(j["stability"]["outside_modes"].get<double>(), 0);
  EXPECT_FALSE(j["stability"]["method"].get<std::string>().empty());
  r.stability.reset();
  EXPECT_FALSE(nlohmann::json::parse(result_to_json(r).dump()).contains("stability"));
}

TEST(Record, ReasonNamesMatchTheSchemaEnum) {
  std::ifstream in(std::string(CTXBENCH_SOURCE_DIR) + "/schema/record.schema.json");
  ASSERT_TRUE(in);
  const auto schema = nlohmann::json::parse(in);
  const auto& codes = schema["$defs"]["reason_code"]["enum"];
  std::vector<std::string> engine;
  for (int i = 0; i <= static_cast<int>(Reason::interference); ++i)
    engine.push_back(reason_name(static_cast<Reason>(i)));
  EXPECT_EQ(engine, codes.get<std::vector<std::string>>());
  const auto& units = schema["$defs"]["unit"]["enum"];
  for (Unit u : {Unit::ns, Unit::cycles, Unit::instructions, Unit::msgs_per_s})
    EXPECT_NE(std::find(units.begin(), units.end(), unit_name(u)), units.end());
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
