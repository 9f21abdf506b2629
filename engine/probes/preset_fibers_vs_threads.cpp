// The fibers-vs-threads preset (`ctxbench-engine run --preset
// fibers-vs-threads`): the classic Boost.Fiber vs std::thread experiment.
// Four workers take turns round-robin, each making 1,000,000 switches: as
// Boost.Fiber fibers on one thread (uswitch.boost_fiber) and as kernel
// threads on one CPU handing a futex baton on (switch.threads_round_robin,
// policy batch). Both are ordinary variants of those probes: the same records
// come from `run uswitch.boost_fiber switch.threads_round_robin` with these
// parameters, and the harness applies its usual timer correction.
#include "presets.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {

const ctx::PresetRegistrar registrar({
    .name = "fibers-vs-threads",
    .description = "Boost.Fiber fibers on one thread vs kernel threads on one CPU, 4 workers taking turns, "
                   "1,000,000 switches each (the laps parameter)",
    .probes = {"uswitch.boost_fiber", "switch.threads_round_robin"},
    .params = {"fibers=4", "threads=4", "cpus=same", "policy=batch", "laps=1000000"},
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
