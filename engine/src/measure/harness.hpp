// The harness owns time; this file holds its one job: measuring one probe
// variant to a finished Result, step by step. It pins the tasks (or a matrix's
// cells), builds the workload, holds the CPUs out of deep idle where asked,
// samples it (sampling.hpp: calibration, warm-up, timed batches, the timer's
// own cost subtracted), divides into per-operation figures, measures the
// baseline the same way, runs the verdict checks (verdict_checks.hpp) and
// derives the figures that follow from the summary. Whether a slowed variant
// is measured again is the attempt policy's (attempts.hpp); a CPU-pair
// matrix is pair_matrix.hpp's; the cycle counter is cycle_counter.hpp's; every
// sentence is wording.hpp's. It never prints.
#pragma once
#include <string>

#include "measure/attempts.hpp"
#include "measure/harness_options.hpp"
#include "measure/sampling.hpp"
#include "measure/verdict_checks.hpp"
#include "model/registry.hpp"
#include "os/timer.hpp"

namespace ctx {

// The figures that are functions of r's summary, computed over the samples r
// keeps: tsc_ticks_per_op (with a clock that counts ticks), median_ns_per_msg
// (a rate probe), per_observed_switch_ns (from observed_switches_per_expected)
// and the probe's own (ProbeDescriptor::from_summary). The one home of these
// figures, for a variant measured whole and for merged rounds alike.
void derive_from_summary(const ProbeDescriptor& probe, bool counts_ticks, const TimerInfo& timer, Result& r);

// Runs one variant (a probe with one value per parameter) to a finished record;
// with options.defer_retries, to its first attempt.
Result run_variant(const ProbeDescriptor& probe, const Params& params, Clock& clock, const TimerInfo& timer,
                   const HarnessOptions& options);

// One more attempt at the variant first measured at `started_at` (the record
// keeps the variant's start, whichever attempt is kept); when to make one is
// the attempt policy's (attempts.hpp).
Result measure_attempt(const ProbeDescriptor& probe, const Params& params, Clock& clock, const TimerInfo& timer,
                       const HarnessOptions& options, const std::string& started_at);

}  // namespace ctx
