// The fibers-vs-threads preset (`ctxbench-engine run --preset
// fibers-vs-threads`): the classic Boost.Fiber vs std::thread experiment, with
// the two cheapest hand-offs of each kind beside it. Four workers take turns
// round-robin, each making `laps` switches (1,000,000 unless --param laps says
// otherwise; the table's header states the laps run): as Boost.Fiber fibers on
// one thread (uswitch.boost_fiber) and as kernel threads on one CPU handing a
// futex baton on (switch.threads_round_robin, policy batch). Beside them, a
// C++20 coroutine's symmetric transfer (uswitch.coroutine) and two threads on
// one CPU handing a futex word back and forth (switch.futex between=threads),
// which calibrate their own sample sizes. All are ordinary variants of those
// probes: the same records come from `run uswitch.coroutine uswitch.boost_fiber
// switch.futex switch.threads_round_robin` with these parameters, and the
// harness applies its usual timer correction.
#include "plan/presets.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {

const ctx::PresetRegistrar registrar({
    .name = "fibers-vs-threads",
    .description = "C++20 coroutines and Boost.Fiber fibers on one thread vs kernel threads on one CPU (a "
                   "futex hand-off between two threads; 4 threads passing a futex baton round-robin)",
    .probes = {"uswitch.coroutine", "uswitch.boost_fiber", "switch.futex", "switch.threads_round_robin"},
    .params = {"fibers=4", "threads=4", "cpus=same", "between=threads", "policy=batch", "laps=1000000"},
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
