// uswitch.asm: ctxbench's own user-level context switch (engine/uswitch, one
// assembly file per arch), the floor under every other switch in the family.
// Two contexts ping-pong: the measuring one switches to a peer on its own
// stack, the peer switches straight back. One op is one switch, half a round
// trip (Boost.Context's performance test divides the same way). fpstate=abi
// saves what a function call must preserve: the callee-saved registers and
// the FP control state (x86: MXCSR and the x87 control word); fpstate=full
// also saves every FP/vector register (x86: XSAVE of all XCR0 components),
// which is what a kernel thread switch has to do for a task that used them
// and what lazy/deferred FPU switching avoids. fpcontrol=differs lets the
// peer raise an FP exception flag first (one inexact division), so the two
// contexts' FP status differs and every switch loads a changed value (x86: LDMXCSR of a new
// value, much slower than reloading the same one). No kernel entry: a check
// in the record confirms the kernel saw no switches.
#include <fmt/format.h>

#include "uswitch_common.hpp"

#if CTXBENCH_HAVE_USWITCH_ASM
#include "uswitch.h"
#endif

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

#if CTXBENCH_HAVE_USWITCH_ASM
using SwitchFn = void* (*)(void**, void*, void*);

// One division that cannot be exact, in the FP unit the compiler uses for
// double (x86_64: SSE, so it sets MXCSR.PE; feraiseexcept would set the x87
// status word instead, which no switch reloads).
void inexact_division() {
  volatile double third = 1.0;
  third = third / 3.0;
}

template <SwitchFn Switch>
class AsmPingPong final : public uswitch::UserSwitchWorkload {
 public:
  AsmPingPong(bool full, bool differs) : full_(full), differs_(differs) {
    peer_ = full ? ctxbench_uswitch_make_full(stack_.bottom(), stack_.size(), peer_entry, this)
                 : ctxbench_uswitch_make(stack_.bottom(), stack_.size(), peer_entry, this);
    if (!peer_) throw ProbeError(Reason::not_supported_here, ctxbench_uswitch_full_state_what(), Status::unsupported);
  }
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) Switch(&main_, peer_, nullptr);  // there and back: two switches
  }
  void annotate(Result& r) override {
    r.derived["abi"] = ctxbench_uswitch_abi();
    r.derived["saved_state"] =
        full_ ? fmt::format("callee-saved general registers + {}", ctxbench_uswitch_full_state_what())
              : std::string("callee-saved registers and FP control state only (what a call must preserve)");
    if (full_) r.derived["fp_state_bytes"] = static_cast<double>(ctxbench_uswitch_full_state_bytes());
    if (differs_)
      r.notes.push_back(
          "the peer context made one inexact division before its first switch back, so the two contexts' FP "
          "status flags differ and every switch loads a changed value");
  }

 private:
  // The peer never returns: it answers every switch with one back.
  static void peer_entry(void* arg) {
    auto* self = static_cast<AsmPingPong*>(arg);
    if (self->differs_) inexact_division();  // this context's FP status flags now differ from the other's
    for (;;) Switch(&self->peer_, self->main_, nullptr);
  }

  uswitch::GuardedStack stack_;
  void* main_ = nullptr;
  void* peer_ = nullptr;
  bool full_;
  bool differs_;
};
#endif

Support supported(const Params& p) {
#if CTXBENCH_HAVE_USWITCH_ASM
  if (p.at("fpstate") == "full" && ctxbench_uswitch_full_state_bytes() == 0)
    return Support::no(Reason::not_supported_here, ctxbench_uswitch_full_state_what());
  return Support::yes();
#else
  (void)p;
  return Support::no(Reason::not_supported_here,
                     "no assembly context switch for this architecture (x86_64, aarch64, riscv64 only)");
#endif
}

std::unique_ptr<Workload> make(Context& ctx) {
#if CTXBENCH_HAVE_USWITCH_ASM
  const bool differs = ctx.param("fpcontrol") == "differs";
  if (ctx.param("fpstate") == "full") return std::make_unique<AsmPingPong<ctxbench_uswitch_full>>(true, differs);
  return std::make_unique<AsmPingPong<ctxbench_uswitch>>(false, differs);
#else
  (void)ctx;
  throw ProbeError(Reason::not_supported_here, "no assembly context switch for this architecture", Status::unsupported);
#endif
}

const Registrar registrar({
    .name = "uswitch.asm",
    .op = "one user-level context switch with ctxbench's own assembly switch (half a round trip between two "
          "contexts on their own stacks)",
    .roles = {{"ladder:asm", 0}, {"uswitch:floor", 0}, {"profile:asm", 0}},
    .unit = Unit::ns,
    .ops_per_iteration = constant(2),  // one iteration is a round trip = two switches
    .params = {{"fpstate",
                {"abi", "full"},
                {},
                "abi: save the callee-saved registers and FP control state, as a function call must (x86_64: "
                "rbx rbp r12-r15 rsp, MXCSR, x87 CW; aarch64: x19-x30, sp, d8-d15; riscv64: ra sp s0-s11 "
                "fs0-fs11). full: also every FP/vector register (x86_64: XSAVE64/XRSTOR64 of all XCR0 "
                "components; aarch64: q0-q31, FPCR, FPSR; riscv64: f0-f31, fcsr), what a kernel switch saves for a "
                "task that used them"},
               {"fpcontrol",
                {"same", "differs"},
                {},
                "same: both contexts run with the same FP control/status values (their exception flags cleared "
                "before each batch), so each switch reloads what is already there. differs: the peer makes one "
                "inexact division, so every switch loads a changed value; on x86_64 that is a changed MXCSR, on "
                "aarch64/riscv64 the abi switch does not touch FPCR/FPSR/fcsr at all (only fpstate=full does)"}},
    .make = make,
    .expects = expects_no_switches,
    .supported = supported,
    .method = "Boost.Context's performance test (ping-pong of jumps, total / 2), with ctxbench's own switch "
              "(engine/uswitch/switch_*.S)",
    .where_time_goes = "a few stores and loads of callee-saved registers, a stack-pointer swap and one indirect "
                       "jump, all in user mode (x86 also reloads MXCSR and the x87 control word). No system call, no "
                       "kernel switch (checked). fpstate=full adds saving the whole FP/vector state, the cost an "
                       "ABI-only switch avoids; fpcontrol=differs makes every switch load a changed MXCSR/FPCR.",
    .from_summary = round_trip_figures,
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
