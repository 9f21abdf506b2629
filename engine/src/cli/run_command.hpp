// One run, from its plan (run_plan.hpp) to its closing record: the watch on
// the parent, the tracing check, the monitor thread (monitor.hpp, which owns
// the signals and the variant time limit), the outputs, the environment
// record, the scheduler (schedule.hpp) that measures the variants through
// the harness and writes each finished record at once, and run_end; with
// the exit status of each way a run can end (exits.hpp).
#pragma once
#include "plan/run_plan.hpp"

namespace ctx {

// The exit status (exits.hpp).
int run_command(const RunOptions& o);

}  // namespace ctx
