// Calibration and sampling, the harness's first job: how many iterations
// make one batch (calibrate_batch), how one batch is timed (time_batch), and
// the samples of one workload (sample): calibration, warm-up, the timed
// batches with the kernel's counts read around each, and which samples the
// host reference or the kernel's counters set aside and take again.
//
// Batch calibration follows Google Benchmark's iteration prediction: start at
// one iteration and grow by the ratio of the target to the time taken (x1.4
// head-room, at most x10 per step) until one batch lasts the target, which is
// the larger of --min-time and 1000x the timer's resolution and 100x a read's
// cost. lmbench's linearity search is more thorough but costs seconds per
// probe; the prediction reaches the target in a few steps, and the
// quantization check (verdict_checks.hpp) flags a sample that still came out
// too short.
// The batch that reaches the target is timed again, and its count kept only
// when that one lasts half the target too (one stretched batch would fix a
// count far too small).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "measure/cycle_counter.hpp"
#include "measure/harness_options.hpp"
#include "model/registry.hpp"
#include "os/kernel_counters.hpp"
#include "os/tasks.hpp"
#include "os/timer.hpp"

namespace ctx {

// Target duration of one batch, in ns.
double batch_target_ns(const HarnessOptions& options, const TimerInfo& timer);

// Grows the iteration count until `timed_run(k)` (ns) reaches `target_ns`.
// Pure given its callback, so it is tested with a fake clock.
std::uint64_t calibrate_batch(const std::function<double(std::uint64_t)>& timed_run, double target_ns,
                              std::uint64_t max_iterations = 1ull << 40);

// Times one batch of `iterations` with `clock`; returns ns, timer-corrected.
// With `readings`, its start and end are the clock's two readings.
double time_batch(Clock& clock, const TimerInfo& timer, Workload& workload, std::uint64_t iterations,
                  TimedBatch* readings = nullptr);

// What sampling one workload gave.
struct Sampled {
  std::vector<double> per_op;
  std::uint64_t iterations_per_sample = 0;
  std::uint64_t total_iterations = 0;  // in the kept samples, the ones that make the figure
  std::uint64_t all_iterations = 0;    // calibration, warm-up and set-aside samples included
  bool budget_hit = false;
  std::vector<double> reference_ns;               // the host reference, timed before each kept sample
  std::vector<double> set_aside;                  // per-op times of samples set aside as interference
  std::vector<SetAsideReason> set_aside_reasons;  // why, one per set-aside sample
  SwitchCount kept_switches;                      // the measuring thread's switches during the kept samples
  SwitchCount all_switches;                       // and during every batch (calibration and warm-up included)
  std::optional<std::uint64_t> kept_cycles;       // its core cycles then, where the counter reads
  std::optional<CounterTotals> counters;          // the kernel's counters, where read
  std::optional<CleanSampling> clean;             // set where interfered samples are taken again
  std::optional<double> cpu_loop_ns;              // the plain loop's fastest timing before a kept sample
  std::optional<double> cpu_calls_ns;             // the call loop's fastest timing before a kept sample
};

// Which tasks and CPUs the kernel's counters are read for, and by which rule
// (kernel_counters.hpp). The calling thread is the first task; the partners
// are added when sampling starts (they run by then).
struct CounterPlan {
  Sharing sharing = Sharing::unknown;
  std::vector<int> cpus;
  int tasks = 1;  // the probe's tasks (ProbeDescriptor::tasks)
};

// How the tasks of a variant share its CPUs. A create probe's children come
// and go between reads, so its tasks are never all known.
CounterPlan counter_plan(const ProbeDescriptor& probe, const Params& params, const Placement& placement);

// Calibrates (or takes `batch`, an earlier round's count, or the probe's
// fixed count), warms up and takes the variant's samples of `workload`,
// `ops_per_iteration` ops each iteration; `cycles` is read around each kept
// sample when given; `kept_batches` gets the kept samples' clock readings.
Sampled sample(const ProbeDescriptor& probe, const Params& params, Workload& workload, Clock& clock,
               const TimerInfo& timer, const HarnessOptions& options, double ops_per_iteration, const CounterPlan& plan,
               const CycleCounter* cycles = nullptr, std::uint64_t batch = 0,
               std::vector<TimedBatch>* kept_batches = nullptr);

}  // namespace ctx
