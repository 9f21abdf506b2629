// uswitch.boost_context: a Boost.Context switch, the library most C++ fiber
// and coroutine runtimes build on (Debian libboost-context-dev). Two contexts
// ping-pong as in Boost's own performance test (performance/fcontext): one op
// is one switch, half a round trip. api=fiber uses the public
// boost::context::fiber (resume() on a fiber with a 64 KiB fixedsize_stack);
// api=fcontext calls the assembly underneath it, detail::jump_fcontext,
// directly, which is the figure Boost's docs report. Without Boost the probe
// lists as unsupported, never as missing.
#include "uswitch_common.hpp"

#if CTXBENCH_HAVE_BOOST_CONTEXT
#include <boost/context/detail/fcontext.hpp>
#include <boost/context/fiber.hpp>
#include <boost/context/fixedsize_stack.hpp>
#endif

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

#if CTXBENCH_HAVE_BOOST_CONTEXT
namespace bctx = boost::context;

class FiberPingPong final : public uswitch::UserSwitchWorkload {
 public:
  FiberPingPong()
      : peer_(std::allocator_arg, bctx::fixedsize_stack(64 * 1024), [](bctx::fiber&& main) {
          for (;;) main = std::move(main).resume();  // answer every switch with one back
          return std::move(main);
        }) {}
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) peer_ = std::move(peer_).resume();  // there and back
  }

 private:
  bctx::fiber peer_;  // destroyed (its stack unwound by forced_unwind) with the workload
};

class FcontextPingPong final : public uswitch::UserSwitchWorkload {
 public:
  FcontextPingPong() { peer_ = bctx::detail::make_fcontext(stack_.top(), stack_.size(), peer_entry); }
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i)
      peer_ = bctx::detail::jump_fcontext(peer_, nullptr).fctx;  // there and back
  }

 private:
  static void peer_entry(bctx::detail::transfer_t from) {
    for (;;) from = bctx::detail::jump_fcontext(from.fctx, nullptr);
  }

  uswitch::GuardedStack stack_;
  bctx::detail::fcontext_t peer_ = nullptr;
};
#endif

std::unique_ptr<Workload> make(Context& ctx) {
#if CTXBENCH_HAVE_BOOST_CONTEXT
  if (ctx.param("api") == "fcontext") return std::make_unique<FcontextPingPong>();
  return std::make_unique<FiberPingPong>();
#else
  (void)ctx;
  throw ProbeError(Reason::built_without, "built without Boost.Context/Boost.Fiber", Status::unsupported);
#endif
}

const Registrar registrar({
    .name = "uswitch.boost_context",
    .op = "one Boost.Context switch (half a round trip between two contexts on their own stacks)",
    .roles = {{"uswitch:boost_context", 0}},
    .unit = Unit::ns,
    .ops_per_iteration = constant(2),  // one iteration is a round trip = two switches
    .params = {{"api",
                {"fiber", "fcontext"},
                {},
                "fiber: boost::context::fiber::resume(), the public API; fcontext: "
                "boost::context::detail::jump_fcontext, the assembly under it"}},
    .make = make,
    .expects = expects_no_switches,
    .supported = [](const Params&) { return uswitch::boost_support(); },
    .method = "Boost.Context performance/fcontext (ping-pong of jumps, total / 2), batched and timer-corrected",
    .where_time_goes = "jump_fcontext saves the same callee-saved set and FP control words as uswitch.asm "
                       "(fpstate=abi) and swaps stacks; api=fiber adds the fiber object's bookkeeping around each "
                       "jump. No system call, no kernel switch (checked).",
    .from_summary = round_trip_figures,
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
