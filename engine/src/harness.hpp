// The harness owns time. For one probe variant it pins the tasks, builds the
// workload, calibrates the batch size, warms up, takes timed samples,
// subtracts the timer's own cost, divides into per-operation figures, runs
// the baseline the same way, checks the kernel's switch counts and the CPUs
// the tasks ran on, and returns a finished Result. It never prints.
//
// Batch calibration follows Google Benchmark's iteration prediction: start at
// one iteration and grow by the ratio of the target to the time taken (x1.4
// head-room, at most x10 per step) until one batch lasts the target, which is
// the larger of --min-time and 1000x the timer's resolution and 100x a read's
// cost. lmbench's linearity search is more thorough but costs seconds per
// probe; the prediction reaches the target in a few steps, and the
// quantization check below flags a sample that still came out too short.
// The batch that reaches the target is timed again, and its count kept only
// when that one lasts half the target too (one stretched batch would fix a
// count far too small).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "host_reference.hpp"
#include "kernel_counters.hpp"
#include "registry.hpp"
#include "tasks.hpp"
#include "timer.hpp"

namespace ctx {

// `--host-reference on|off` when the option is not given. On, every sample
// (the baseline's too) is judged by the host reference and the record keeps
// what was set aside; off, no reference is taken and nothing is set aside.
inline constexpr bool host_reference_by_default = true;

struct HarnessOptions {
  int samples = 30;
  int warmup_samples = 2;
  double min_sample_s = 0.01;   // a batch lasts at least this long
  double max_variant_s = 20.0;  // sampling stops early past this budget
  bool quick = false;
  // Timed before each sample when set (--host-reference on); a sample taken
  // while it ran slowed is set aside and taken again, and a variant measured
  // while it ran slowed is measured again, up to `retries` times
  // (host_reference.hpp). With retries 0 the reference is timed and recorded
  // but nothing is set aside or taken again.
  HostReference* reference = nullptr;
  int retries = 2;
  // When set, read around each sample (outside its timing): a sample the
  // kernel's counters show interfered with is set aside and taken again under
  // the same budget as the reference's, with its reason (kernel_counters.hpp).
  // Applies with the host reference on or off; with retries 0 the counters are
  // recorded and nothing is taken again.
  KernelCounters* counters = nullptr;
  // Where a same-CPU variant may go: when set, the CPU with the least other
  // work just before the variant, among the allowed ones (least_busy_cpu);
  // an affinity mask of one CPU (the user's choice) always wins.
  bool place_on_least_busy = false;
  double least_busy_window_s = 0.02;
  // The CPU an earlier round of the same variant was placed on (schedule.hpp):
  // a variant's rounds run where its first did. -1: choose.
  int same_cpu = -1;
  // When set, run_variant returns the first attempt and leaves the
  // re-measurement to its caller (wants_another_attempt, measure_attempt,
  // keep_better_attempt, close_interference): `ctxbench-engine run` measures
  // a slowed variant again after the variants that follow it, so the attempts
  // are spread over the run instead of falling into one slow spell, and waits
  // until at least retry_gap_s has passed since the variant's last attempt.
  bool defer_retries = false;
  double retry_gap_s = 1.0;
  // Iterations per sample of the probe and of its baseline when an earlier
  // round of the same variant calibrated them (schedule.hpp); 0: calibrate.
  std::uint64_t batch = 0;
  std::uint64_t baseline_batch = 0;
  // When set, the probe's kept samples as timed batches (clock readings and
  // operations), in the order taken; the baseline's are not recorded.
  std::vector<TimedBatch>* kept_batches = nullptr;

  // --quick: fewer, shorter samples (the whole catalogue in well under 90 s).
  static HarnessOptions quick_run() {
    HarnessOptions options;
    options.samples = 10;
    options.warmup_samples = 1;
    options.min_sample_s = 0.002;
    options.max_variant_s = 3;
    options.quick = true;
    options.retries = 1;
    options.retry_gap_s = 0.25;
    return options;
  }
};

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

// The steps of a re-measurement after host interference (host_reference.hpp).
// True while the kept attempt was measured slowed, attempts are left
// (options.retries) and none failed.
bool wants_another_attempt(const Result& r, const HarnessOptions& options);
// One more attempt at the variant first measured at `started_at` (the record
// keeps the variant's start, whichever attempt is kept).
Result measure_attempt(const ProbeDescriptor& probe, const Params& params, Clock& clock, const TimerInfo& timer,
                       const HarnessOptions& options, const std::string& started_at);
// Adds `again` to r's attempts; r becomes `again` when its reference ran
// fastest. A failed attempt ends the re-measurement, with a note.
void keep_better_attempt(Result& r, Result&& again);
// Judges every attempt against the run's best reference, writes the notes and
// judges the verdict (judge_interference).
void close_interference(Result& r, const HarnessOptions& options);
// A variant still slowed when it is written is never `ok`: suspect with reason
// `interference` when the kept attempt's reference ran slowed, or when over
// kept_interfered_limit of its kept samples carry what the kernel's counters
// call interference (the re-takes ran out).
void judge_interference(Result& r);

// Adds `check` to the one of the same name in `totals` (expected and observed
// summed where both are numbers; ok while every part is ok), or appends it.
void add_to_totals(std::vector<Check>& totals, const Check& check);

// The switches of `counter`'s kind in `c` (both kinds for Counter::any).
long counted_switches(const SwitchCount& c, Counter counter);

// Verdict from observed vs expected switches (pure, tested on known counts).
// Fills `check`; returns the reason when outside 90%..110%.
std::optional<std::pair<Reason, std::string>> judge_switches(double expected, double observed, Check& check);

// Verdict where no switch is expected (Expectation::none): the kernel may
// switch the measuring task fewer than once per 100 ops (a timer tick can
// preempt any batch; more means the operation itself enters the scheduler).
// `switches` and `ops` cover every batch. Pure, tested on recorded counts.
// Fills `check` (named no_switches_check); returns the reason when it fails.
inline constexpr const char* no_switches_check = "kernel_not_involved";
std::optional<std::pair<Reason, std::string>> judge_no_switches(const SwitchCount& switches, double ops, Check& check);
// The same rule over a variant's rounds (merge_rounds): `switches` of both
// kinds in all, over `ops` in `rounds` rounds.
std::optional<std::pair<Reason, std::string>> judge_pooled_no_switches(double switches, double ops, int rounds,
                                                                       Check& check);

}  // namespace ctx
