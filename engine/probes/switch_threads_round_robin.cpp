// switch.threads_round_robin: N kernel threads passing a baton round-robin
// (by default all pinned to one CPU), the kernel counterpart of
// uswitch.boost_fiber; the fibers-vs-threads preset runs the two side by side.
// Each thread has a futex word: it stores the next thread's, wakes it with
// FUTEX_WAKE, and sleeps in FUTEX_WAIT on its own until the baton comes
// round again. The measuring thread is one of the N; one of its iterations
// is a lap, N hand-offs, and one op is one hand-off: one kernel context
// switch from one thread to the next, with the futex calls that cause it.
// Every thread leaves the CPU once per lap: the kernel's switch counts (both
// kinds) are checked against that. Policy batch keeps a woken thread from
// preempting its waker, so on a quiet CPU each switch is the waker going to
// sleep; while another task wants the CPU a tick may preempt it instead.
#include <fmt/format.h>

#include <atomic>
#include <memory>
#include <vector>

#include "uswitch_common.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

class ThreadRoundRobin final : public Workload {
 public:
  ThreadRoundRobin(Context& ctx, int threads) : baton_(threads) {
    for (int k = 1; k < threads; ++k)
      partners_.push_back(std::make_unique<Partner>(ctx, k, Between::threads, [this, k] { return serve(k); }));
  }
  ~ThreadRoundRobin() override {
    if (finished_) return;
    stop_ = true;  // a failed run: release every partner so that its thread can be joined
    for (int k = 1; k < baton_.size(); ++k) baton_.pass(k);
  }
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) {
      baton_.pass(1);  // a lap: 1, 2, ... N-1 and back to us
      baton_.wait(0);
    }
  }
  std::vector<TaskReport> finish() override {
    finished_ = true;
    stop_ = true;
    baton_.pass(1);  // each partner passes the stop on and returns
    std::vector<TaskReport> reports;
    for (auto& p : partners_) reports.push_back(p->join());
    return reports;
  }

 private:
  std::uint64_t serve(int k) {
    const int next = (k + 1) % baton_.size();
    std::uint64_t served = 0;
    for (;;) {
      baton_.wait(k);
      ++served;  // every wait, the last included, is one sleep
      if (stop_) {
        baton_.pass(next);
        return served;
      }
      baton_.pass(next);
    }
  }

  uswitch::FutexBaton baton_;
  std::atomic<bool> stop_{false};
  bool finished_ = false;
  std::vector<std::unique_ptr<Partner>> partners_;  // last: joined before the baton goes
};

int thread_count(const Params& p) { return static_cast<int>(std::stol(p.at("threads"))); }

const Registrar registrar({
    .name = "switch.threads_round_robin",
    .op = "one kernel context switch: a futex hand-off from one of N threads passing a baton round-robin to the next",
    .roles = {{"answer:round_robin", 0}},
    .unit = Unit::ns,
    .ops_per_iteration = [](const Params& p) { return static_cast<double>(thread_count(p)); },  // a lap: N hand-offs
    .params = {{"threads", {"2", "4", "8"}, {"4"}, "threads in the ring, the measuring one included", true, true},
               cpus_param({"same"},
                          "same: all threads pinned to one CPU (every hand-off is a switch on that CPU); cross: "
                          "alternate threads on two CPUs; any: unpinned"),
               policy_param(),
               uswitch::laps_param()},
    .make =
        [](Context& ctx) {
          return std::make_unique<ThreadRoundRobin>(ctx, static_cast<int>(ctx.param_int("threads")));
        },
    .expects =
        [](const Params& p) {
          const double n = thread_count(p);
          const bool normal = p.at("policy") == "normal";
          // Both counters, under either policy: see switch_expectation.
          Expectation e{Counter::any, 1.0 / n, 1,
                        fmt::format("each of the {} threads leaves the CPU once per lap of {} hand-offs: a sleep in "
                                    "FUTEX_WAIT",
                                    n, n) +
                            (normal ? " or a preemption by the thread it woke"
                                    : ", or, while another task wants the CPU, a preemption after which it finds the "
                                      "baton back")};
          // With three or more, the baton is back only after the others' turns.
          if (normal && n > 2) allow_preemption_then_sleep(e, "FUTEX_WAIT");
          return std::optional<Expectation>(e);
        },
    .supported =
        [](const Params& p) {
          if (thread_count(p) < 2) return Support::no(Reason::not_supported_here, "threads must be at least 2");
          return Support::yes();
        },
    .tasks = thread_count,
    .fixed_iterations = uswitch::laps_batch,
    .samples = uswitch::laps_samples,
    .method = "the thread half of the Boost.Fiber vs std::thread experiment; futex hand-off as in tsuna/contextswitch",
    .where_time_goes = "FUTEX_WAKE (system call, wake-up of the next thread), FUTEX_WAIT (system call, sleep), and the "
                       "scheduler's switch itself: kernel entry/exit, picking the next task, switching register state "
                       "and, unlike a user-level switch, saving the FP/vector state of a thread that used it (see "
                       "uswitch.asm fpstate=full for that part alone). Threads share one address space: no "
                       "page-table switch.",
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
