// The figures a record derives beside its samples (Result::derived), each
// with how the rounds of a variant measured in interleaved rounds
// (schedule.hpp, merge_rounds) combine into the one record. The harness's
// figures are defined here; a probe defines its own in its descriptor
// (ProbeDescriptor::derived).
#pragma once
#include <string>
#include <vector>

namespace ctx {

enum class Aggregation {
  // A per-op figure or a property of the variant: the rounds' values,
  // weighted by their samples (a text: the first round's).
  mean,
  // A count over the variant's operations (ops_executed): the rounds' added.
  sum,
  // A function of the summary (or of the pooled switch counts): computed
  // again over the pooled samples, never averaged (derive_from_summary).
  recompute,
};

struct DerivedFigure {
  std::string name;
  Aggregation aggregation = Aggregation::mean;
};

// Every figure the harness writes (and the shared helpers of workloads.hpp).
const std::vector<DerivedFigure>& harness_figures();

}  // namespace ctx
