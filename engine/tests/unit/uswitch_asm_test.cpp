// ctxbench's assembly switch (engine/uswitch): registers, FP control state,
// stack alignment, entry arguments, a million switches and a chain of 1000
// contexts, for both the abi and the full variant. The checks themselves live
// in engine/tests/uswitch/checks.cpp, and their list there is the one both
// runners use: one GoogleTest case per entry here, and
// ctxbench-uswitch-selftest, which has no GoogleTest and so also runs under
// qemu-user for aarch64 and riscv64 (engine/tests/cross_smoke.sh).
#include <gtest/gtest.h>

#if CTXBENCH_HAVE_USWITCH_ASM
#include <ostream>
#include <set>

#include "checks.hpp"

namespace ctxbench::uswitch_test {
// How GoogleTest prints a check in a failure message.
void PrintTo(const NamedCheck& check, std::ostream* out) { *out << check.name; }
}  // namespace ctxbench::uswitch_test

namespace {
namespace CTXBENCH_UNITY_ID {
using ctxbench::uswitch_test::NamedCheck;

class UswitchAsm : public testing::TestWithParam<NamedCheck> {};

TEST_P(UswitchAsm, Passes) {
  std::string problems;
  for (const auto& p : GetParam().run()) problems += p + "\n";
  EXPECT_TRUE(problems.empty()) << GetParam().name << ":\n" << problems;
}

// GoogleTest names a case after the check ("registers_survive.abi" becomes
// registers_survive_abi), so a duplicate name would stop the binary here.
INSTANTIATE_TEST_SUITE_P(Checks, UswitchAsm, testing::ValuesIn(ctxbench::uswitch_test::all_checks()),
                         [](const testing::TestParamInfo<NamedCheck>& check) {
                           std::string name = check.param.name;
                           for (auto& c : name)
                             if (c == '.') c = '_';
                           return name;
                         });

// Both variants of every per-variant check are on the list.
TEST(UswitchAsmChecks, EveryPerVariantCheckCoversBothVariants) {
  std::set<std::string> names;
  for (const auto& check : ctxbench::uswitch_test::all_checks()) names.insert(check.name);
  for (const auto& name : names) {
    for (const char* variant : {".abi", ".full"}) {
      const auto dot = name.rfind('.');
      if (dot == std::string::npos) continue;
      EXPECT_TRUE(names.count(name.substr(0, dot) + variant)) << name << " has no " << variant << " twin";
    }
  }
}

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
#else
TEST(UswitchAsm, NoSwitchForThisArchitecture) { GTEST_SKIP() << "no assembly switch for this target"; }
#endif
