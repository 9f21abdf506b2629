// switch.burst: n context switches in a row between two processes over two
// pipes (n/2 round trips of a 1-byte token), for n = 20, 200 and 20000,
// repeated many times; the figure is the minimum per switch over the tries.
// Short bursts show start-up effects (cold caches and TLB, the wakee's first
// scheduling) that a long calibrated run averages away; the minimum is the
// best a burst of that length achieved. Each sample is exactly one burst: a
// fixed n/2 round trips, no calibration. One op is one switch. Baseline: the
// self-pipe write + read of switch.pipe, over the same fixed counts.
#include <algorithm>

#include "pingpong.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;
using namespace ctx::pingpong;

std::uint64_t round_trips(const Params& p) { return std::max<std::uint64_t>(1, std::stoull(p.at("n")) / 2); }

void burst_figures(Result& r) {
  round_trip_figures(r);
  if (!r.summary) return;
  r.derived["min_ns_per_switch"] = r.summary->min;
  r.derived["min_ns_per_round_trip"] = r.summary->min * 2;  // one round trip = two switches
  if (r.baseline) r.derived["min_ns_per_switch_minus_baseline"] = r.summary->min - r.baseline->summary->min;
}

void annotate_burst(Result& r) {
  annotate_switch_kinds_per_round_trip(r);
  r.notes.push_back("the figure is the minimum over the tries (summary.min): each sample is one burst");
}

const Registrar registrar({
    .name = "switch.burst",
    .op = "one context switch within a burst of n in a row between two processes over two pipes (half a round "
          "trip of a 1-byte token)",
    .roles = {{"answer:burst", 0}},
    .unit = Unit::ns,
    .ops_per_iteration = constant(2),  // one iteration is a round trip = two switches
    .params =
        {
            {"n",
             {"20", "200", "20000"},
             {},
             "switches in one burst (n/2 round trips); each sample is one burst",
             true,
             true},
            cpus_param({"same"},
                       "same: both processes on one CPU (the classic setting); cross: on two CPUs; any: unpinned"),
            policy_param(),
        },
    .baseline = "write + read of 1 byte on a self-pipe in one process, n/2 times per try (the pipe's cost per "
                "switch, no switch)",
    .make =
        [](Context& ctx) {
          return std::make_unique<PingPong<FdChannel>>(ctx, Between::processes, FdChannel::pipes(1), annotate_burst);
        },
    .make_baseline = [](Context&) { return std::make_unique<SelfHandoff<FdChannel>>(FdChannel::pipes(1)); },
    .expects = [](const Params& p) { return std::optional<Expectation>(switch_expectation(p, "read")); },
    .tasks = [](const Params&) { return 2; },
    .fixed_iterations = round_trips,
    // Many tries for the short bursts (1000 at most), --samples for the long ones.
    .samples =
        [](const Params& p, int requested) {
          return std::max(requested, static_cast<int>(std::clamp<std::uint64_t>(100000 / round_trips(p), 1, 1000)));
        },
    .method = "the classic two-process, two-pipe ping-pong run for a fixed number of switches and reported as "
              "the best of many tries (osbench's keep-the-minimum policy)",
    .from_summary = burst_figures,
    .derived = {{"min_ns_per_switch", Aggregation::recompute},
                {"min_ns_per_round_trip", Aggregation::recompute},
                {"min_ns_per_switch_minus_baseline", Aggregation::recompute}},
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
