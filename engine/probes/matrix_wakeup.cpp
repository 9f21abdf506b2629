// matrix.wakeup: how long a blocked thread takes to run again once another
// thread wakes it, for every pair of allowed CPUs. switch.futex between
// threads with task 0 pinned to the row CPU and task 1 to the column CPU:
// each side sleeps in FUTEX_WAIT until the other's FUTEX_WAKE. One op is one
// hand-off (half a round trip): the wake-up, and where the CPUs differ the
// IPI to the wakee's CPU, that CPU's exit from idle and the switch to the
// woken thread. The diagonal is the same-CPU switch, the reference the other
// cells compare with. The kernel's switch counts are checked in every cell as
// for the switch probes (both sides really sleep), and the baseline is
// switch.futex's: FUTEX_WAKE with no waiter plus an exchange that finds the
// word set, measured once, on the first CPU. With idle=held (beside free where
// /dev/cpu_dma_latency is writable) every cell runs with the CPUs held out of
// deep idle states.
#include "futex_channel.hpp"
#include "os/idle.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;
using namespace ctx::pingpong;

std::unique_ptr<FutexChannel> private_futexes() { return std::make_unique<FutexChannel>(Between::threads); }

// idle=held beside idle=free wherever holding is permitted: every cell but
// the diagonal crosses CPUs, where the wakee CPU's exit from idle is part of
// the hand-off.
ParamSpec matrix_idle_param() {
  ParamSpec spec = idle_param();
  spec.also_runs = [](const std::string& value, const Params&) { return value == "held" && idle_hold_permitted(); };
  spec.also_runs_help = "held beside free, where /dev/cpu_dma_latency can be opened for writing";
  return spec;
}

const Registrar registrar({
    .name = "matrix.wakeup",
    .op = "one blocking hand-off between two pinned threads: half a round trip of FUTEX_WAKE / FUTEX_WAIT (a "
          "wake-up on the partner's CPU and a switch to it)",
    .unit = Unit::ns,
    .ops_per_iteration = constant(2),  // one iteration is a round trip = two hand-offs
    .params = {policy_param(), matrix_idle_param(), max_pairs_param()},
    .baseline = "FUTEX_WAKE with no waiter + an atomic exchange that finds the word set, in one thread on the first "
                "CPU (the futex's cost per hand-off, no sleep, no switch)",
    .make = [](Context& ctx) -> std::unique_ptr<Workload> {
      return std::make_unique<PingPong<FutexChannel>>(ctx, Between::threads, private_futexes());
    },
    .make_baseline = [](Context&) -> std::unique_ptr<Workload> {
      return std::make_unique<SelfHandoff<FutexChannel>>(private_futexes());
    },
    .expects = [](const Params& p) { return std::optional<Expectation>(switch_expectation(p, "FUTEX_WAIT")); },
    .tasks = [](const Params&) { return 2; },
    .method = "switch.futex between threads (tsuna/contextswitch timetctxsw without sched_yield, context_switch2 "
              "--test=futex CPU1 CPU2) for every ordered pair of allowed CPUs and each CPU with itself, as "
              "core-to-core-latency does for cache lines; stratified sampling past max_pairs",
    .matrix = PairMatrixSpec{.diagonal = true,
                             .rows = "CPU of the thread that wakes first (task 0)",
                             .columns = "CPU of the woken thread (task 1)",
                             .diagonal_why_not = ""},
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
