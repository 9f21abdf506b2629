#include "model/derived.hpp"

namespace ctx {

const std::vector<DerivedFigure>& harness_figures() {
  static const std::vector<DerivedFigure> figures = {
      // Totals over the variant's operations.
      {"ops_executed", Aggregation::sum},
      {"ops_in_figure", Aggregation::sum},
      {"involuntary_switches_measuring_task", Aggregation::sum},
      {"cells", Aggregation::sum},
      // Functions of the summary (derive_from_summary, round_trip_figures)
      // or of the pooled switch counts (merge_rounds).
      {"tsc_ticks_per_op", Aggregation::recompute},
      {"median_ns_per_msg", Aggregation::recompute},
      {"observed_switches_per_expected", Aggregation::recompute},
      {"per_observed_switch_ns", Aggregation::recompute},
      {"per_round_trip_ns", Aggregation::recompute},
      // Per op, or the same in every round.
      {"voluntary_switches_per_op", Aggregation::mean},
      {"involuntary_switches_per_op", Aggregation::mean},
      {"voluntary_switches_per_round_trip", Aggregation::mean},
      {"involuntary_switches_per_round_trip", Aggregation::mean},
      {"core_cycles_per_op", Aggregation::mean},
      {"core_cycles_scope", Aggregation::mean},
      {"core_cycles_unavailable", Aggregation::mean},
      {"syscalls_per_op", Aggregation::mean},
      {"cpu_loop_ns", Aggregation::mean},
      {"cpu_calls_ns", Aggregation::mean},
      {"idle_latency_bound_us", Aggregation::mean},
      {"cpuidle_driver", Aggregation::mean},
      {"seccomp_rules", Aggregation::mean},
      {"seccomp_instructions", Aggregation::mean},
      {"seccomp_built_with", Aggregation::mean},
      {"seccomp_cache", Aggregation::mean},
      {"seccomp_calls", Aggregation::mean},
      {"seccomp_calls_cached", Aggregation::mean},
  };
  return figures;
}

}  // namespace ctx
