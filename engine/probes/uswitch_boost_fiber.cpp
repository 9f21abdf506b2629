// uswitch.boost_fiber: N Boost.Fiber fibers on one thread taking turns with
// this_fiber::yield() under the default round_robin scheduler (Debian
// libboost-fiber-dev). The measuring thread's own (main) fiber is one of the
// N: each of its yields lets the N-1 others run once and come back, so one
// iteration is N switches and one op is one switch, from one fiber to the
// next. Unlike uswitch.boost_context this is a scheduler's switch: the ready
// queue, the fiber's state and its context all take part. The workers count
// their turns, and a check confirms each ran once per yield of the main fiber.
#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "boost_fiber.hpp"
#include "uswitch_common.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

#if CTXBENCH_HAVE_BOOST_FIBER
class FiberRoundRobin final : public uswitch::UserSwitchWorkload {
 public:
  explicit FiberRoundRobin(int fibers) : turns_(static_cast<std::size_t>(fibers - 1), 0) {
    for (int w = 0; w < fibers - 1; ++w)
      workers_.emplace_back([this, w] {
        while (!stop_) {
          ++turns_[static_cast<std::size_t>(w)];
          boost::this_fiber::yield();
        }
      });
  }
  ~FiberRoundRobin() override { stop_and_join(); }
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) boost::this_fiber::yield();  // N switches round the ring
    yields_ += iterations;
  }
  std::vector<TaskReport> finish() override {
    stop_and_join();
    return {};
  }
  void annotate(Result& r) override {
    Check check;
    check.name = "fiber_turns";
    check.expected =
        fmt::format("each of the {} other fibers runs once per yield of the main fiber ({})", turns_.size(), yields_);
    std::uint64_t least = yields_, most = 0;
    for (auto t : turns_) {
      least = std::min(least, t);
      most = std::max(most, t);
    }
    check.observed = nlohmann::json{{"least", least}, {"most", most}};
    check.ok = least == yields_ && most == yields_;
    check.detail = "counted by the fibers themselves, calibration and warm-up included";
    if (!check.ok)
      r.verdict.add(Status::suspect, Reason::error, "the fibers did not take turns round-robin once per yield");
    r.checks.push_back(check);
  }

 private:
  void stop_and_join() {
    stop_ = true;
    for (auto& f : workers_)
      if (f.joinable()) f.join();
  }

  bool stop_ = false;  // read by fibers of this same thread only
  std::uint64_t yields_ = 0;
  std::vector<std::uint64_t> turns_;
  std::vector<boost::fibers::fiber> workers_;
};
#endif

std::unique_ptr<Workload> make(Context& ctx) {
#if CTXBENCH_HAVE_BOOST_FIBER
  return std::make_unique<FiberRoundRobin>(static_cast<int>(ctx.param_int("fibers")));
#else
  (void)ctx;
  throw ProbeError(Reason::built_without, "built without Boost.Context/Boost.Fiber", Status::unsupported);
#endif
}

const Registrar registrar({
    .name = "uswitch.boost_fiber",
    .op = "one Boost.Fiber switch: a this_fiber::yield() handing the thread to the next of N fibers, round-robin",
    .roles = {{"ladder:fiber", 0}, {"answer:fiber", 0}, {"uswitch:on_boost_context", 0}, {"profile:fiber", 0}},
    .unit = Unit::ns,
    .ops_per_iteration = [](const Params& p) { return std::stod(p.at("fibers")); },  // a lap: one switch per fiber
    .params = {{"fibers",
                {"2", "4", "8", "16"},
                {"4"},
                "fibers taking turns on one thread, the measuring one included",
                true,
                true},
               uswitch::laps_param()},
    .make = make,
    .expects = expects_no_switches,
    .supported =
        [](const Params& p) {
          if (std::stol(p.at("fibers")) < 2)
            return Support::no(Reason::not_supported_here, "fibers must be at least 2 for a switch to happen");
          return uswitch::boost_support();
        },
    .fixed_iterations = uswitch::laps_batch,
    .samples = uswitch::laps_samples,
    .method = "the kernel-free half of the Boost.Fiber vs std::thread experiment (see the fibers-vs-threads "
              "preset and switch.threads_round_robin)",
    .where_time_goes = "yield() puts the running fiber at the back of round_robin's ready queue, takes the next, and "
                       "switches with Boost.Context; no system call, no kernel switch (checked).",
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
