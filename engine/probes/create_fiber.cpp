// create.fiber: what it costs to make a Boost.Fiber fiber and be done with it:
// construct a fiber (its control block and 64 KiB stack from Boost.Fiber's
// default fixedsize stack allocator), join it, which runs it to its end (its
// body does nothing) and switches back, and destroy it. One op is that whole
// life, the fiber counterpart of create.pthread (create + join). Runs on the
// measuring thread's round_robin scheduler; no kernel involvement (checked).
#include "boost_fiber.hpp"
#include "uswitch_common.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

#if CTXBENCH_HAVE_BOOST_FIBER
class CreateFiber final : public uswitch::UserSwitchWorkload {
 public:
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) {
      boost::fibers::fiber fiber([] {});
      fiber.join();  // runs it to its end: two switches (in, and back at its end)
    }
  }
};
#endif

std::unique_ptr<Workload> make(Context&) {
#if CTXBENCH_HAVE_BOOST_FIBER
  return std::make_unique<CreateFiber>();
#else
  throw ProbeError(Reason::built_without, "built without Boost.Context/Boost.Fiber", Status::unsupported);
#endif
}

const Registrar registrar({
    .name = "create.fiber",
    .op = "create a Boost.Fiber fiber (64 KiB default stack), join it (it runs its empty body to the end) and "
          "destroy it",
    .unit = Unit::ns,
    .make = make,
    .expects = expects_no_switches,
    .supported = [](const Params&) { return uswitch::boost_support(); },
    .method = "osbench create_threads / libMicro pthread_create, for fibers (Boost.Fiber's skynet benchmark times "
              "spawn+join of a million fibers in a tree; this is one spawn+join at a time)",
    .where_time_goes = "stack allocation (malloc of 64 KiB), context setup, two user-level switches, scheduler "
                       "bookkeeping and the free",
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
