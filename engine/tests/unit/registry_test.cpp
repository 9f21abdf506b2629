// Every registered probe is complete, and its record round-trips through
// JSON with the fields the schema requires.
#include "registry.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "describe.hpp"

namespace {

using namespace ctx;

TEST(Registry, EveryDescriptorIsComplete) {
  ASSERT_FALSE(all_probes().empty());
  for (const auto& p : all_probes()) EXPECT_EQ(descriptor_problems(p), "") << p.name;
}

TEST(Registry, NamesAreUniqueAndSorted) {
  for (std::size_t i = 1; i < all_probes().size(); ++i) EXPECT_LT(all_probes()[i - 1].name, all_probes()[i].name);
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
  for (int i = 0; i <= static_cast<int>(Reason::error); ++i) engine.push_back(reason_name(static_cast<Reason>(i)));
  EXPECT_EQ(engine, codes.get<std::vector<std::string>>());
  const auto& units = schema["$defs"]["unit"]["enum"];
  for (Unit u : {Unit::ns, Unit::cycles, Unit::instructions, Unit::msgs_per_s})
    EXPECT_NE(std::find(units.begin(), units.end(), unit_name(u)), units.end());
}

}  // namespace
