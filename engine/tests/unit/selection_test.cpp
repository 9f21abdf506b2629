// Option handling: probe selection, parameter expansion, bad values refused.
#include "plan/selection.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "os/idle.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {

using namespace ctx;

std::vector<ProbeDescriptor> fake_probes() {
  ProbeDescriptor a;
  a.name = "switch.alpha";
  a.params = {cpus_param(), {"size", {"1", "2"}, {"1"}, "size", true, true}};
  ParamSpec laps{"laps", {"10", "100"}, {}, "optional", true};
  laps.optional = true;
  a.params.push_back(laps);
  ProbeDescriptor b;
  b.name = "syscall.beta";
  return {a, b};
}

TEST(Selection, EverythingByDefaultWithDefaultValues) {
  const auto variants = expand(fake_probes(), {});
  // alpha: every default cpus value x 1 default size; beta: 1
  ASSERT_EQ(variants.size(), default_values(cpus_param()).size() + 1);
  EXPECT_EQ(variants[0].params.at("size"), "1");
}

TEST(Selection, GlobsAndFamilyNames) {
  EXPECT_TRUE(probe_matches("switch.*", "switch.alpha"));
  EXPECT_TRUE(probe_matches("switch", "switch.alpha"));
  EXPECT_FALSE(probe_matches("switch", "switchy.alpha"));
  EXPECT_FALSE(probe_matches("sys*.alpha", "syscall.beta"));
  Selection s;
  s.patterns = {"syscall"};
  EXPECT_EQ(expand(fake_probes(), s).size(), 1u);
}

TEST(Selection, UnknownProbeIsAUsageError) {
  Selection s;
  s.patterns = {"nope.*"};
  try {
    expand(fake_probes(), s);
    FAIL() << "expected a usage error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown probe 'nope.*'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("ctxbench-engine list"), std::string::npos);
  }
}

// A typo names what exists: the family for a shortened family name, the
// parameter for a misspelled one; an unrelated word gets no guess.
TEST(Selection, MistakesSuggestWhatExists) {
  EXPECT_EQ(did_you_mean("syscal", {"syscall", "switch", "syscall.getpid"}), "did you mean syscall? ");
  EXPECT_EQ(did_you_mean("sysc", {"syscall", "switch", "syscall.getpid"}), "did you mean syscall, syscall.getpid? ");
  EXPECT_EQ(did_you_mean("proc", {"procs", "size_kib"}), "did you mean procs? ");
  EXPECT_EQ(did_you_mean("zebra", {"procs", "size_kib"}), "");
  Selection s;
  s.patterns = {"switch.alfa"};
  try {
    expand(fake_probes(), s);
    FAIL() << "expected a usage error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean switch.alpha"), std::string::npos) << e.what();
  }
  s.patterns = {"switch.alpha"};
  s.choices["cpu"] = {"same"};
  try {
    expand(fake_probes(), s);
    FAIL() << "expected a usage error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean cpus?"), std::string::npos) << e.what();
  }
}

TEST(Selection, ChoicesNarrowAndAreValidated) {
  Selection s;
  s.patterns = {"switch.alpha"};
  s.choices["cpus"] = {"same"};
  s.choices["size"] = {"2", "64"};  // 64 accepted: open-ended numeric
  EXPECT_EQ(expand(fake_probes(), s).size(), 2u);
  s.choices["cpus"] = {"sideways"};
  EXPECT_THROW(expand(fake_probes(), s), UsageError);
  s.choices["cpus"] = {"same"};
  s.choices["size"] = {"-4"};
  EXPECT_THROW(expand(fake_probes(), s), UsageError);
  s.choices.erase("size");
  s.choices["colour"] = {"red"};
  EXPECT_THROW(expand(fake_probes(), s), UsageError);
}

TEST(Selection, AnOptionalParameterIsAbsentUnlessChosen) {
  Selection s;
  s.patterns = {"switch.alpha"};
  for (const auto& v : expand(fake_probes(), s)) EXPECT_EQ(v.params.count("laps"), 0u);
  s.choices["laps"] = {"100"};
  for (const auto& v : expand(fake_probes(), s)) EXPECT_EQ(v.params.at("laps"), "100");
}

// --cpus/--between: values checked against the probes' axis parameter, and
// the choice narrows only the probes that have it.
TEST(Selection, AxisChoicesNarrowTheProbesThatHaveThem) {
  Selection s;
  s.patterns = {"syscall.beta"};
  add_axis_choice(s, fake_probes(), "cpus", "cross", "--cpus");
  EXPECT_EQ(expand(fake_probes(), s).size(), 1u);  // beta has no cpus: left alone, not refused
  s.patterns = {};
  const auto variants = expand(fake_probes(), s);
  ASSERT_EQ(variants.size(), 2u);
  EXPECT_EQ(variants[0].params.at("cpus"), "cross");
  try {
    add_axis_choice(s, fake_probes(), "cpus", "same,sideways", "--cpus");
    FAIL() << "expected a usage error";
  } catch (const UsageError& e) {
    // The allowed values come from the probes' parameter, not from a copy.
    EXPECT_NE(std::string(e.what()).find("--cpus: 'sideways'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(fmt::format("{}", fmt::join(cpus_param().values, ", "))), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(add_axis_choice(s, fake_probes(), "between", "threads", "--between"), UsageError);  // nobody has it
  Selection not_axis;
  not_axis.patterns = {"syscall.beta"};
  not_axis.choices["size"] = {"1"};  // a plain parameter no chosen probe has is still a typo
  EXPECT_THROW(expand(fake_probes(), not_axis), UsageError);
}

TEST(Selection, VariantJsonGivesParamsAsTheRecordDoes) {
  Selection s;
  s.patterns = {"switch.alpha"};
  s.choices["cpus"] = {"same"};
  const auto j = variant_json(expand(fake_probes(), s).front());
  EXPECT_EQ(j["probe"], "switch.alpha");
  EXPECT_EQ(j["params"]["cpus"], "same");
  EXPECT_EQ(j["params"]["size"], 1);  // numeric: a number, as in the record
}

TEST(Selection, ParamSyntax) {
  Selection s;
  add_param_choice(s, "procs=2,8");
  EXPECT_EQ(s.choices.at("procs"), (std::vector<std::string>{"2", "8"}));
  EXPECT_THROW(add_param_choice(s, "procs"), UsageError);
  EXPECT_THROW(add_param_choice(s, "=3"), UsageError);
  Selection fresh;
  EXPECT_THROW(add_param_choice(fresh, "procs=2,,8"), UsageError);
  EXPECT_THROW(add_param_choice(fresh, "procs="), UsageError);
}

// A value given twice would be measured twice (and compare would silently
// pick one of the two records); an empty one would mean "everything".
TEST(Selection, DuplicateAndEmptyValuesAreRefused) {
  auto message = [](auto&& call) {
    try {
      call();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no usage error");
  };
  EXPECT_NE(message([] { split_list("same,same", "--cpus"); }).find("'same' is given twice"), std::string::npos);
  EXPECT_NE(message([] { split_list("", "--cpus"); }).find("no value given"), std::string::npos);
  EXPECT_NE(message([] { split_list("same,", "--cpus"); }).find("empty value"), std::string::npos);
  Selection s;
  add_param_choice(s, "procs=2");
  EXPECT_NE(message([&] { add_param_choice(s, "procs=8"); }).find("given twice"), std::string::npos);
  EXPECT_NE(message([] {
              Selection t;
              add_param_choice(t, "procs=2,2");
            }).find("'2' is given twice"),
            std::string::npos);
  // Equal numbers written differently are one value too.
  Selection numbers;
  numbers.patterns = {"switch.alpha"};
  numbers.choices["size"] = {"2", "02"};
  EXPECT_NE(message([&] { expand(fake_probes(), numbers); }).find("2 is given twice"), std::string::npos);
  numbers.choices["size"] = {"0064"};
  const auto variants = expand(fake_probes(), numbers);
  ASSERT_FALSE(variants.empty());
  EXPECT_EQ(variants[0].params.at("size"), "64");
  // A number too long for a count is refused, never an uncaught std::out_of_range.
  numbers.choices["size"] = {"99999999999999999999"};
  EXPECT_THROW(expand(fake_probes(), numbers), UsageError);
}

TEST(Selection, SamplesMustBeAPositiveWholeNumber) {
  EXPECT_EQ(parse_positive("30", "--samples", 1000), 30);
  for (const char* bad : {"0", "-3", "x", "", "3.5", "99999999999999999999", "1001"})
    EXPECT_THROW(parse_positive(bad, "--samples", 1000), UsageError) << bad;
  EXPECT_DOUBLE_EQ(parse_seconds("0.01", "--min-time"), 0.01);
  for (const char* bad : {"0", "-1", "soon", "nan"}) EXPECT_THROW(parse_seconds(bad, "--min-time"), UsageError) << bad;
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace

namespace {
namespace CTXBENCH_UNITY_ID {

// The real switch parameters: policy batch runs beside cpus=same only, and
// idle held beside cpus=cross only where the latency device is writable.
std::vector<ProbeDescriptor> switch_like() {
  ProbeDescriptor p;
  p.name = "switch.gamma";
  p.params = {between_param(), cpus_param(), policy_param(), idle_param()};
  return {p};
}

std::vector<std::string> flat(const std::vector<Variant>& variants) {
  std::vector<std::string> out;
  for (const auto& v : variants)
    out.push_back(v.params.at("between") + "/" + v.params.at("cpus") + "/" + v.params.at("policy") + "/" +
                  v.params.at("idle"));
  return out;
}

class LatencyDevice : public ::testing::Test {
 protected:
  void point_at(const std::string& path) { setenv("CTXBENCH_CPU_DMA_LATENCY", path.c_str(), 1); }
  void TearDown() override { unsetenv("CTXBENCH_CPU_DMA_LATENCY"); }
};

TEST_F(LatencyDevice, AlsoRunsAddsBatchBesideSameAndHeldBesideCrossWherePermitted) {
  point_at("/nonexistent/cpu_dma_latency");
  Selection s;
  s.choices["between"] = {"threads"};
  auto got = flat(expand(switch_like(), s));
  EXPECT_EQ(got, (std::vector<std::string>{"threads/same/normal/free", "threads/same/batch/free",
                                           "threads/cross/normal/free", "threads/any/normal/free"}));
  char path[] = "/tmp/ctxbench-latency-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  point_at(path);
  got = flat(expand(switch_like(), s));
  unlink(path);
  EXPECT_EQ(
      got, (std::vector<std::string>{"threads/same/normal/free", "threads/same/batch/free", "threads/cross/normal/free",
                                     "threads/cross/normal/held", "threads/any/normal/free"}));
}

TEST_F(LatencyDevice, AChosenValueIsNotWidenedByAlsoRuns) {
  point_at("/nonexistent/cpu_dma_latency");
  Selection s;
  s.choices["between"] = {"threads"};
  s.choices["cpus"] = {"same"};
  s.choices["policy"] = {"normal"};
  EXPECT_EQ(flat(expand(switch_like(), s)), (std::vector<std::string>{"threads/same/normal/free"}));
  s.choices["policy"] = {"batch"};
  s.choices["cpus"] = {"cross"};
  s.choices["idle"] = {"held"};  // asked for: runs, and the harness says whether it can hold
  EXPECT_EQ(flat(expand(switch_like(), s)), (std::vector<std::string>{"threads/cross/batch/held"}));
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
