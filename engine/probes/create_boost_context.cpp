// create.boost_context: what it costs to make a Boost.Context fiber and be
// done with it: construct a boost::context::fiber on a fresh 64 KiB
// fixedsize_stack, resume it once (its body returns at once, handing control
// back) and let it finish, which frees its stack. One op is that whole life:
// allocation, context setup, two switches, deallocation. No scheduler, no
// kernel involvement (checked).
#include "uswitch_common.hpp"

#if CTXBENCH_HAVE_BOOST_CONTEXT
#include <boost/context/fiber.hpp>
#include <boost/context/fixedsize_stack.hpp>
#endif

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

#if CTXBENCH_HAVE_BOOST_CONTEXT
class CreateBoostContext final : public uswitch::UserSwitchWorkload {
 public:
  void run(std::uint64_t iterations) override {
    namespace bctx = boost::context;
    for (std::uint64_t i = 0; i < iterations; ++i) {
      bctx::fiber fiber(std::allocator_arg, bctx::fixedsize_stack(64 * 1024),
                        [](bctx::fiber&& caller) { return std::move(caller); });
      fiber = std::move(fiber).resume();  // in and straight back out: the fiber completes, its stack is freed
    }
  }
};
#endif

std::unique_ptr<Workload> make(Context&) {
#if CTXBENCH_HAVE_BOOST_CONTEXT
  return std::make_unique<CreateBoostContext>();
#else
  throw ProbeError(Reason::built_without, "built without Boost.Context/Boost.Fiber", Status::unsupported);
#endif
}

const Registrar registrar({
    .name = "create.boost_context",
    .op = "create a boost::context::fiber on a new 64 KiB fixedsize_stack, run it to its end (one resume) and "
          "free it",
    .unit = Unit::ns,
    .make = make,
    .expects = expects_no_switches,
    .supported = [](const Params&) { return uswitch::boost_support(); },
    .method = "Boost.Context performance tests time switches only; this adds the creation",
    .where_time_goes = "malloc/free of the 64 KiB stack, make_fcontext, two jumps and the ontop call that ends the "
                       "fiber",
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
