// ctxbench's assembly switch (engine/uswitch): registers, FP control state,
// stack alignment, entry arguments, a million switches and a chain of 1000
// contexts, for both the abi and the full variant. The checks themselves live
// in engine/tests/uswitch/checks.cpp so that the GoogleTest-free self-test
// runs the same ones under qemu-user for aarch64 and riscv64.
#include <gtest/gtest.h>

#if CTXBENCH_HAVE_USWITCH_ASM
#include <ostream>

#include "checks.hpp"

namespace ctxbench::uswitch_test {
// How GoogleTest (and so ctest) names the variant.
void PrintTo(Variant variant, std::ostream* out) { *out << variant_name(variant); }
}  // namespace ctxbench::uswitch_test

namespace {
using ctxbench::uswitch_test::Variant;

std::string joined(const std::vector<std::string>& problems) {
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  return all;
}

class UswitchAsm : public testing::TestWithParam<Variant> {};

TEST_P(UswitchAsm, CalleeSavedRegistersAndFpControlSurvive) {
  const auto problems = ctxbench::uswitch_test::registers_survive(GetParam());
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

TEST_P(UswitchAsm, StackIsAbiAlignedAtEntry) {
  const auto problems = ctxbench::uswitch_test::stack_aligned_at_entry(GetParam());
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

TEST_P(UswitchAsm, EntryReceivesItsArgument) {
  const auto problems = ctxbench::uswitch_test::entry_receives_argument(GetParam());
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

TEST_P(UswitchAsm, AMillionSwitchesBetweenTwoContexts) {
  const auto problems = ctxbench::uswitch_test::many_switches(GetParam(), 1000000);
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

TEST_P(UswitchAsm, AChainOf1000ContextsGoesRoundTwice) {
  const auto problems = ctxbench::uswitch_test::chain_of_contexts(GetParam(), 1000);
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

TEST_P(UswitchAsm, NewContextInheritsItsCreatorsFpControl) {
  const auto problems = ctxbench::uswitch_test::fp_control_inherited(GetParam());
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

INSTANTIATE_TEST_SUITE_P(Variants, UswitchAsm, testing::Values(Variant::abi, Variant::full),
                         [](const testing::TestParamInfo<Variant>& param_info) {
                           return std::string(ctxbench::uswitch_test::variant_name(param_info.param));
                         });

TEST(UswitchAsmFull, SaysWhatItSaves) {
  const auto problems = ctxbench::uswitch_test::full_state_described();
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

TEST(UswitchAsmSentinels, CatchASwitchThatCorruptsOneRegister) {
  const auto problems = ctxbench::uswitch_test::broken_switch_is_caught();
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

// The self-test runs the same list; make sure it is the whole list.
TEST(UswitchAsmSelfTest, ListsEveryCheck) { EXPECT_EQ(ctxbench::uswitch_test::all_checks().size(), 14u); }

}  // namespace
#else
TEST(UswitchAsm, NoSwitchForThisArchitecture) { GTEST_SKIP() << "no assembly switch for this target"; }
#endif
