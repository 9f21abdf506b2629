// uswitch.ucontext: glibc's swapcontext ping-pong between two ucontexts, the
// portable POSIX (now obsolescent) way to switch user-level contexts, as in
// stress-ng's context stressor and libMicro's getcontext/setcontext. One op is
// one swapcontext: one switch, half a round trip. Unlike the other uswitch
// probes, every swapcontext enters the kernel: it saves and restores the
// signal mask with an rt_sigprocmask system call (Boost.Context's docs show
// ucontext ~60x slower than fcontext for this reason). A unit test counts
// those calls with strace. The baseline is that system call alone, so the
// baseline-corrected figure is the user-level part of swapcontext.
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>

#include "uswitch_common.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

class UcontextPingPong final : public uswitch::UserSwitchWorkload {
 public:
  UcontextPingPong() {
    if (getcontext(&peer_) != 0) throw_errno("getcontext");
    peer_.uc_stack.ss_sp = stack_.bottom();
    peer_.uc_stack.ss_size = stack_.size();
    peer_.uc_link = nullptr;
    // makecontext passes int arguments only: the pointer goes in two halves.
    const auto self = reinterpret_cast<std::uintptr_t>(this);
    makecontext(&peer_, reinterpret_cast<void (*)()>(peer_entry), 2, static_cast<unsigned>(self >> 32),
                static_cast<unsigned>(self & 0xffffffffu));
  }
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) swapcontext(&main_, &peer_);  // there and back: two swaps
  }
  void annotate(Result& r) override {
    r.notes.push_back(
        "each swapcontext makes one rt_sigprocmask system call (glibc saves and restores the signal mask); the "
        "baseline is that call alone, so the corrected figure is swapcontext's user-level part");
  }

 private:
  static void peer_entry(unsigned high, unsigned low) {
    auto* self = reinterpret_cast<UcontextPingPong*>(static_cast<std::uintptr_t>(high) << 32 | low);
    for (;;) swapcontext(&self->peer_, &self->main_);
  }

  uswitch::GuardedStack stack_;
  ucontext_t main_{};
  ucontext_t peer_{};
};

// What swapcontext does to the signal mask, alone: set it to what it already is.
class SigprocmaskCall final : public Workload {
 public:
  SigprocmaskCall() { sigprocmask(SIG_SETMASK, nullptr, &mask_); }
  void run(std::uint64_t iterations) override {
    sigset_t old;
    for (std::uint64_t i = 0; i < iterations; ++i)
      syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask_, &old, _NSIG / 8);  // as glibc's swapcontext calls it
  }

 private:
  sigset_t mask_{};
};

const Registrar registrar({
    .name = "uswitch.ucontext",
    .op = "one swapcontext (glibc ucontext): one user-level context switch, half a round trip, including the "
          "rt_sigprocmask system call it makes",
    .roles = {{"uswitch:ucontext", 0}},
    .unit = Unit::ns,
    .ops_per_iteration = constant(2),  // one iteration is a round trip = two swapcontext calls
    .baseline = "one rt_sigprocmask(SIG_SETMASK) system call, as swapcontext makes per switch (the corrected figure "
                "is swapcontext's user-level part)",
    .make = [](Context&) { return std::make_unique<UcontextPingPong>(); },
    .make_baseline = [](Context&) { return std::make_unique<SigprocmaskCall>(); },
    .expects = expects_no_switches,
    .method = "stress-ng context / libMicro setcontext style ping-pong; Boost.Context's ucontext comparison",
    .where_time_goes = "glibc stores the callee-saved and argument registers, the x87 environment (fnstenv/fldenv on "
                       "x86_64, slow instructions) and MXCSR in the ucontext_t, and enters the kernel once per swap "
                       "for rt_sigprocmask, which dominates (the baseline is that call alone; a unit test counts "
                       "those calls with strace).",
    .from_summary = round_trip_figures,
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
