// The run command's plan: its options as typed on the command line
// (RunOptions) checked and turned into what a run needs (RunPlan): the
// harness's and the schedule's options, the variant time limit, the
// selection and the variants it expands to. Every usage error of the
// options' values is raised here, as a UsageError naming the option and the
// fix, before anything is measured.
#pragma once
#include <string>
#include <vector>

#include "measure/harness_options.hpp"
#include "plan/schedule.hpp"
#include "plan/selection.hpp"

namespace ctx {

struct RunOptions {
  std::vector<std::string> probes;
  bool quick = false;
  std::string samples, min_time, timeout, retries, host_reference, clean_budget;
  std::string shield;  // --shield: empty (none) or weight
  std::string interleave, rounds, seed;
  std::string cpus, between;
  bool hold_idle = false;
  std::vector<std::string> params;
  bool json = false;
  std::string out;
  bool progress = false;
  bool die_with_parent = false;
  std::string preset;
  bool dry_run = false;
  bool trace = false;
  bool trace_optional = false;
};

struct RunPlan {
  HarnessOptions harness;
  ScheduleOptions schedule;
  double variant_timeout_s = 120;
  bool host_reference = host_reference_by_default;
  Selection selection;
  std::vector<Variant> variants;
};

// Throws UsageError on a value the run cannot take.
RunPlan plan_run(const RunOptions& o);

}  // namespace ctx
