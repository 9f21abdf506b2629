// The CPU-pair matrix, the harness's fifth job: a matrix probe (matrix.*)
// is measured once per pair of allowed CPUs, each cell at its pair as the
// placement, and the record carries every cell, the checks summed over the
// cells, and each pair class's summary (Result::matrix).
#pragma once
#include <functional>
#include <optional>

#include "measure/harness_options.hpp"
#include "model/record.hpp"
#include "model/registry.hpp"
#include "os/tasks.hpp"

namespace ctx {

// How the harness measures for the matrix.
struct MatrixMeasures {
  // One cell: the variant's calibration, sampling and checks at `cell`.
  std::function<Result(const Placement& cell, const HarnessOptions& options)> cell;
  // The baseline, once, on `cpu`; null where the probe has none. May throw ProbeError.
  std::function<std::optional<Baseline>(int cpu, const HarnessOptions& options)> baseline;
  // The figures that are functions of the summary (derive_from_summary).
  std::function<void(Result&)> derive;
};

// A CPU-pair matrix. Each cell is measured by measure_at with the pair as its
// placement (task 0 on the row CPU, task 1 on the column CPU), so calibration,
// warm-up, timer correction, the division into ops and the checks are exactly
// a variant's. The cells share the variant's sampling budget evenly (each
// still takes at least five samples), the baseline is measured once, on the
// first CPU, and the record's samples are every cell's samples in cell order.
void measure_matrix(const ProbeDescriptor& probe, const Params& params, const HarnessOptions& options,
                    const MatrixMeasures& measure, Result& r);

}  // namespace ctx
