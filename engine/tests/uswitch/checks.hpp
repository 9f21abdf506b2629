// Correctness checks of ctxbench's assembly switch (engine/uswitch), written
// once and run two ways: as GoogleTest cases natively
// (engine/tests/unit/uswitch_asm_test.cpp) and by ctxbench-uswitch-selftest,
// which has no GoogleTest and so also runs under qemu-user for the cross
// builds (engine/tests/cross_smoke.sh). Each check returns what went wrong,
// one line per problem; an empty list is a pass.
#pragma once
#include <string>
#include <vector>

namespace ctxbench::uswitch_test {

enum class Variant { abi, full };
const char* variant_name(Variant variant);

struct NamedCheck {
  std::string name;
  std::vector<std::string> (*run)();
};

// Every callee-saved register (and, for the full variant, every FP/vector
// register) and the FP control state survive a switch away and back, in both
// contexts; the stack pointer comes back unchanged.
std::vector<std::string> registers_survive(Variant variant);
// The stack is ABI-aligned at the entry of a new context's function.
std::vector<std::string> stack_aligned_at_entry(Variant variant);
// A new context's entry receives its argument; values pass both ways.
std::vector<std::string> entry_receives_argument(Variant variant);
// `switches` switches between two contexts complete, each handing over a value.
std::vector<std::string> many_switches(Variant variant, long switches);
// A chain of `contexts` contexts, each resuming the next, goes round twice.
std::vector<std::string> chain_of_contexts(Variant variant, int contexts);
// Where the switch swaps FP control, a new context starts with its creator's
// rounding mode and each context keeps its own; elsewhere it is the thread's.
std::vector<std::string> fp_control_inherited(Variant variant);
// The sentinel test itself works: a switch that corrupts one callee-saved
// register is caught, in both contexts, and nothing else is reported.
std::vector<std::string> broken_switch_is_caught();
// The full variant can run here and reports what it saves.
std::vector<std::string> full_state_described();

// All of the above with the sizes the issue asks for, for the self-test.
const std::vector<NamedCheck>& all_checks();

}  // namespace ctxbench::uswitch_test
