// The run's schedule: in what order the variants of a selection are measured,
// and when a variant is measured again. Two policies, chosen per run:
//
// - interleave off: each variant is measured whole, one after the other; a
//   variant whose attempt the host slowed (host_reference.hpp) waits while
//   the variants after it are measured and is measured again in a pass of
//   its own, at least retry_gap_s after its last attempt, so its attempts
//   fall in other moments of the host's load.
// - interleave rounds: each variant's samples are split into `rounds`
//   rounds, and every round visits the variants in an order drawn from a
//   seeded generator (Google Benchmark documents the same idea as random
//   interleaving), so a slow spell of the host lands on many variants a
//   little instead of on one variant whole. A variant's rounds are merged
//   into one record (merge_rounds). The rounds already spread a variant over
//   the run, so a slowed variant is not measured again.
//
// Every record is handed to the output the moment its variant is done.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "measure/harness.hpp"
#include "plan/selection.hpp"
#include "report/output.hpp"

namespace ctx {

// `--interleave off|rounds` when not given; `--rounds` when not given.
inline constexpr bool interleave_by_default = true;  // docs/accuracy.md: why rounds
inline constexpr int rounds_by_default = 5;

struct ScheduleOptions {
  bool interleave = interleave_by_default;
  int rounds = rounds_by_default;
  std::uint32_t seed = 0;
};

// The order in which round `round` (from 0) visits `count` variants: a
// permutation drawn from a generator seeded by (seed, round). Pure.
std::vector<std::size_t> round_order(std::size_t count, std::uint32_t seed, int round);

// The samples round `round` (from 0) takes when `samples` are split over
// `rounds`: as even as whole samples allow, the first rounds one more.
int samples_in_round(int samples, int rounds, int round);

// The rounds a variant is split into: one for a probe that fixes its own
// samples or a matrix (their samples are not interchangeable), at most one
// per sample otherwise.
int rounds_for(const ProbeDescriptor& probe, int samples, const ScheduleOptions& schedule);

// One record from a variant's rounds, in the order they were taken: samples,
// set-aside samples, the baseline's samples and the kernel's counts pooled;
// the summary, the stability, the switch checks and the baseline's verdict
// judged again over the pooled samples; other reasons kept with the round
// they came from. A round that is unsupported or failed makes the record
// that round's. Pure, given the rounds.
// best_ns: the host reference's best (0 without one), to judge the pooled
// reference times by. derive: computes the figures that are functions of the
// summary (derive_from_summary for the variant's probe) over the pooled
// samples; may be empty. probe: whose derived figures say how they combine
// (aggregation_of: summed, averaged by samples, or left to `derive`); null:
// the harness's figures alone.
Result merge_rounds(std::vector<Result> rounds, double best_ns, const std::function<void(Result&)>& derive,
                    const ProbeDescriptor* probe = nullptr);

// The record's `schedule.round_figures`: per round of the variant, in the
// order taken (round k here is the run's round k, the same for every variant,
// so two variants' round k were taken close together), the kept samples'
// count, their median in the record's unit less `baseline` (the record's
// baseline value, 0 without one: the record's own correction), and the
// samples set aside in that round. A round with no kept sample has a null
// median. Pure.
nlohmann::json round_figures(const std::vector<Result>& rounds, double baseline);

// What the scheduler needs from the command line around it.
struct ScheduleHooks {
  // Before each measurement: the variant's index, its attempt (from 1) and
  // round (from 1; 0 when not interleaved).
  std::function<void(std::size_t index, std::size_t attempt, int round)> announce;
  // Runs one measurement under the variant's time limit.
  std::function<Result(const std::function<Result()>&)> limited;
  // After a variant's first attempt (its last round when interleaved), still
  // under its time limit: e.g. the traced pass. May be empty.
  std::function<void(const Variant& variant, Result& result)> after_measured;
  // Ends the run after an output failed (does not return).
  std::function<void(const OutputError&)> output_failed;
  // Interleaved: after a round that is not its variant's last, the variant
  // as it stands (what write_unfinished_locked would write), for a front end
  // that keeps it in case the engine is killed before the variant's record
  // is written. Called with output.lock() held. May be empty.
  std::function<void(const Result& so_far)> round_kept;
};

class Scheduler {
 public:
  Scheduler(const std::vector<Variant>& variants, const HarnessOptions& harness, const ScheduleOptions& schedule,
            Clock& clock, const TimerInfo& timer, Output& output, std::string run_id, ScheduleHooks hooks);
  // Measures every variant and writes each record when its variant is done.
  void run();
  // For a run that ends early; the caller holds output.lock(). Writes every
  // variant begun and not yet written as it stands, with a note.
  void write_unfinished_locked();

 private:
  struct Pending {
    std::size_t index = 0;
    std::vector<Result> rounds;  // interleaved: the rounds so far
    Result result;               // not interleaved: the kept attempt so far
    std::uint64_t last_ended_ns = 0;
    bool written = false;
  };
  void run_whole();
  void run_rounds();
  // Closes the record's interference and writes it; the failure, if any.
  std::optional<OutputError> finish_locked(Result& result);
  Result merged(const Pending& pending) const;
  // A variant begun and not finished, as it stands, with the note that says so.
  Result unfinished(const Pending& pending) const;
  Result merged(std::size_t index, const std::vector<Result>& rounds) const;
  nlohmann::json schedule_record(const Variant& variant) const;

  const std::vector<Variant>& variants_;
  HarnessOptions harness_;
  ScheduleOptions schedule_;
  Clock& clock_;
  const TimerInfo& timer_;
  Output& output_;
  std::string run_id_;
  ScheduleHooks hooks_;
  std::vector<Pending> pending_;  // guarded by output_.lock()
};

}  // namespace ctx
