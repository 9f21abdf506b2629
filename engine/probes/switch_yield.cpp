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
#include <unistd.h>

#include <optional>

#include "measure/workloads.hpp"
#include "os/idle.hpp"
#include "os/tasks.hpp"
#include "os/timer.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

// Shared with a partner process (mapped before the fork) or thread.
struct YieldFlags {
  std::atomic<bool> started{false};
  std::atomic<bool> stop{false};
};

class YieldPingPong final : public Workload {
 public:
  explicit YieldPingPong(Context& ctx) : memory_(sizeof(YieldFlags)), flags_(new (memory_.data()) YieldFlags{}) {
    YieldFlags* flags = flags_;
    partner_.emplace(ctx, 1, parse_between(ctx.param("between")), [flags] {
      flags->started.store(true);
      std::uint64_t yields = 0;
      while (!flags->stop.load(std::memory_order_relaxed)) {
        sched_yield();
        ++yields;
      }
      return yields;
    });
    // A start barrier: the partner is yielding before anything is timed.
    const std::uint64_t deadline = monotonic_raw_ns() + 5'000'000'000ull;
    while (!flags_->started.load()) {
      if (monotonic_raw_ns() > deadline) {
        release();
        throw ProbeError(Reason::child_failed, "the partner did not start within 5 s");
      }
      usleep(100);
    }
  }
  ~YieldPingPong() override { release(); }
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) sched_yield();
  }
  std::vector<TaskReport> finish() override {
    flags_->stop.store(true);
    return {partner_->join()};
  }
  void annotate(Result& r) override { annotate_switch_kinds_per_round_trip(r); }

 private:
  void release() {
    flags_->stop.store(true);  // releases a partner thread; a process is killed by the Partner
    partner_.reset();
  }

  SharedMemory memory_;
  YieldFlags* flags_;
  std::optional<Partner> partner_;
};

const Registrar registrar({
    .name = "switch.yield",
    .op = "one context switch: half a round trip of two tasks taking turns with sched_yield()",
    .unit = Unit::ns,
    .ops_per_iteration = constant(2),  // one yield of the measuring task spans two switches
    .params = {between_param(), cpus_param(), policy_param(), idle_param()},
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
    .syscalls_per_op = constant(1),  // one sched_yield per switch
    .from_summary = round_trip_figures,
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
