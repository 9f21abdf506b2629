// The verdict checks, the harness's second job: each compares what the
// kernel or the clock recorded with what the measurement needs, fills a
// Check for the record and adds its reason to the verdict. The switch counts
// against the probe's expectation (or none, for a user-level switch), a
// spinning matrix's preemptions, where the tasks ran, and the timer's
// quantization. Pure where it can be, so the rules are tested on recorded
// counts; their sentences are in wording.hpp.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/record.hpp"
#include "model/registry.hpp"
#include "model/stats.hpp"
#include "os/tasks.hpp"
#include "os/timer.hpp"

namespace ctx {

// Adds `check` to the one of the same name in `totals` (expected and observed
// summed where both are numbers; ok while every part is ok), or appends it.
void add_to_totals(std::vector<Check>& totals, const Check& check);

// The switches of `counter`'s kind in `c` (both kinds for Counter::any).
long counted_switches(const SwitchCount& c, Counter counter);

// Verdict from observed vs expected switches (pure, tested on known counts).
// Fills `check`; returns the reason when outside 90% .. 110% x check.most.
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

// The switch checks of a probe that expects switches: the measuring task's
// over the kept samples (ops_total ops), and the partners'. Where the kernel's
// counters gave the partners' switches over the kept samples
// (`partner_runs_kept`, both kinds: Counter::any), those are judged against
// the hand-offs the kept samples hold (the partners' hand-offs scaled by
// ops_total / ops_all), so a partner preempted by other work during a sample
// that was set aside does not count against the figure; otherwise the
// partners' switches over their whole life against every hand-off (ops_all
// ops). The per-op switch figures go in r.derived.
void add_switch_checks(const Expectation& expectation, double ops_total, double ops_all, const SwitchCount& main_delta,
                       const std::vector<TaskReport>& partners, std::optional<long> partner_runs_kept, Result& r);

// A matrix probe that expects no switches spins on both sides
// (matrix.cacheline): any switch of its tasks is `too_many_switches`.
void add_preemption_check(const SwitchCount& main_delta, const std::vector<TaskReport>& partners, Result& r);

// Where the tasks ran (r.observed_start, r.observed_end) against `placement`:
// a pinned task seen elsewhere is `migrated`.
void add_placement_check(const Placement& placement, Result& r);

// A batch shorter than 100x the timer's resolution is `timer_quantization`:
// the timer cannot resolve it well enough.
void add_quantization_check(const Summary& summary, std::uint64_t ops_per_sample, const TimerInfo& timer, Result& r);

}  // namespace ctx
