// The traced pass (ctxbench-engine run --trace): after a switch variant's
// untraced measurement, the same variant runs again, shorter, while the
// kernel's tracepoints are recorded on the CPUs its tasks use (trace.hpp);
// the events of the variant's own tasks are followed switch by switch into
// phases (phases.hpp). The record's `trace` block carries the phases as
// measured under tracing, the traced figure beside the untraced one, the
// cost of one recorded event, and the share of the traced figure the phases
// account for. Without tracefs or the permission to record, the block says
// `unsupported` and why; the untraced figure is never touched.
#pragma once
#include <nlohmann/json.hpp>

#include "model/record.hpp"
#include "model/registry.hpp"
#include "os/timer.hpp"
#include "trace/phases.hpp"

namespace ctx {

// Switch probes whose untraced measurement gave a figure.
bool wants_traced_pass(const ProbeDescriptor& probe, const Result& untraced);

// Runs the traced pass and sets untraced.trace (schema: record.trace).
// The traced run is timed on CLOCK_MONOTONIC_RAW (the events' clock); `clock`
// times the event cost's getppid loops.
void add_traced_pass(Result& untraced, const ProbeDescriptor& probe, const Params& params, Clock& clock);

// The tracepoints missing (`missing`, as the session found them), and
// power:cpu_idle when it was opened but never fired although the CPUs went
// idle (switches to the idle task, pid 0): on some guests it never does, and
// then the pass cannot see an idle exit, which is not evidence that none
// came. Pure; unit-tested on scripted events.
std::vector<std::string> silent_idle_events(std::vector<std::string> missing, const std::vector<TraceEvent>& events);

// The block for a finished analysis (pure; unit-tested).
nlohmann::json trace_block(const PhaseReport& report, const std::optional<Summary>& traced,
                           std::optional<double> untraced_median, std::optional<double> event_cost_ns);

}  // namespace ctx
