// switch.yield: one context switch made by sched_yield() between two tasks
// that both keep yielding, as in tsuna/contextswitch timetctxsw2 and
// context_switch2 --test=yield. On one CPU each yield hands the CPU to the
// other task: the measuring task's yield returns after the partner's yield,
// so one iteration is two switches and one op is one switch. The kernel
// counts a yield's switch as involuntary (the task stays runnable), whatever
// the policy. With the tasks on different CPUs there is nothing to yield to,
// so no switch happens and the check says too_few_switches (rightly).
// Baseline: sched_yield alone, with nothing else runnable on the CPU.
#include <sched.h>

#include <optional>

#include "tasks.hpp"
#include "workloads.hpp"

namespace {
using namespace ctx;

class YieldPingPong final : public Workload {
 public:
  explicit YieldPingPong(Context& ctx)
      : between_(parse_between(ctx.param("between"))),
        memory_(sizeof(std::atomic<bool>)),
        stop_(new (memory_.data()) std::atomic<bool>(false)) {
    std::atomic<bool>* stop = stop_;
    partner_.emplace(ctx, 1, between_, [stop] {
      std::uint64_t yields = 0;
      while (!stop->load(std::memory_order_relaxed)) {
        sched_yield();
        ++yields;
      }
      return yields;
    });
  }
  ~YieldPingPong() override {
    stop_->store(true);  // releases a partner thread; a process is killed by the Partner
    partner_.reset();
  }
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) sched_yield();
  }
  std::vector<TaskReport> finish() override {
    stop_->store(true);
    return {partner_->join()};
  }
  void annotate(Result& r) override {
    if (r.summary) r.derived["per_round_trip_ns"] = r.summary->median * 2;  // one round trip = two switches
  }

 private:
  Between between_;
  SharedMemory memory_;  // the stop flag, shared with a partner process
  std::atomic<bool>* stop_;
  std::optional<Partner> partner_;
};

const Registrar registrar({
    .name = "switch.yield",
    .op = "one context switch: half a round trip of two tasks taking turns with sched_yield()",
    .unit = Unit::ns,
    .ops_per_iteration = constant(2),  // one yield of the measuring task spans two switches
    .params = {between_param(), cpus_param(), policy_param()},
    .baseline = "sched_yield() alone in one task, nothing else runnable on its CPU (the call's cost, no switch)",
    .make = [](Context& ctx) { return std::make_unique<YieldPingPong>(ctx); },
    .make_baseline = [](Context&) { return loop_of([] { sched_yield(); }); },
    .expects =
        [](const Params&) {
          return std::optional<Expectation>(
              {Counter::involuntary, 0.5, 1,
               "each side's sched_yield switches it out once per round trip (two switches); a yielding task stays "
               "runnable, so Linux counts the switch as involuntary"});
        },
    .tasks = [](const Params&) { return 2; },
    .method = "tsuna/contextswitch timetctxsw2 and context_switch2 --test=yield (SCHED_BATCH or SCHED_OTHER here, "
              "not SCHED_FIFO, so it runs unprivileged)",
});

}  // namespace
