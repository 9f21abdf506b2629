// What the harness is asked to do for one variant (harness.hpp): how many
// samples and how long, the host reference and the kernel's counters that
// judge them, the re-measurement policy, and what an earlier round already
// decided (batch sizes, the CPU).
#pragma once
#include <cstdint>
#include <vector>

#include "measure/host_reference.hpp"
#include "os/kernel_counters.hpp"
#include "os/timer.hpp"

namespace ctx {

// `--host-reference on|off` when the option is not given. On, every sample
// (the baseline's too) is judged by the host reference and the record keeps
// what was set aside; off, no reference is taken and nothing is set aside.
inline constexpr bool host_reference_by_default = true;

// `--clean-budget` when not given: the seconds one variant may spend taking
// samples again until it has its samples clean of interference (sampling.hpp),
// and with --quick. Past it the variant is judged on the clean samples it got.
inline constexpr double clean_budget_by_default_s = 5.0;
inline constexpr double quick_clean_budget_by_default_s = 1.5;

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
  // Seconds this sample set may spend taking samples again until `samples`
  // are clean (with retries > 0 and a reference or counters): the budget ends
  // the re-takes once `samples` were taken. The scheduler gives each round
  // its share of the variant's.
  double clean_budget_s = clean_budget_by_default_s;
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
    options.clean_budget_s = quick_clean_budget_by_default_s;
    options.retry_gap_s = 0.25;
    return options;
  }
};

}  // namespace ctx
