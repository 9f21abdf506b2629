// What the harness tells a reader in words, its one job: every note, detail
// and check text a record carries beside its figures. The reasons' names are
// the closed catalogue in record.hpp; the sentences that explain a reason or
// a decision, and how a figure is written, are here, so the harness
// (harness.hpp, sampling.hpp, verdict_checks.hpp, attempts.hpp,
// pair_matrix.hpp) measures and decides and nothing else.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "model/record.hpp"

namespace ctx {

// How a figure is written, in the table, the generated docs and the notes:
// "key=value key=value" in parameter order.
std::string format_params(const Params& params);
// A duration in ns with a sensible unit (ns, us, ms).
std::string format_ns(double ns);
// A figure in its unit, as the table and the generated docs show it.
std::string format_value(double value, Unit unit);

// "1.10 us, 4 of 34 samples set aside as host interference; 1.31 us with
// them": the figure, how many samples were left out of it and the figure
// with them. Empty when none were set aside.
std::string set_aside_statement(const std::vector<double>& kept, const std::vector<double>& set_aside, Unit unit);

// Why an unstable record's median is not one figure (stats.hpp's rule), with
// the likely cause where the placement points at one.
std::string unstable_detail(const Stability& stability, const Result& r);

// The kernel_not_involved check of an operation that expects no switch
// (harness.hpp's judge_no_switches): what is expected, what was counted, and
// the reason when the kernel switched the measuring task too often.
std::string no_switches_expected();
std::string no_switches_counted(long voluntary, long involuntary, double ops);
std::string no_switches_pooled(double switches, double ops, int rounds);
std::string kernel_switched_detail(double per_op);

// A baseline that is not below the figure it would be subtracted from.
std::string nonpositive_detail(double baseline, double median);

// The notes a record measured with the host reference carries
// (host_reference.hpp): re-measured, still slowed. `r.interference->best_ns`
// is set.
std::vector<std::string> interference_notes(const Result& r);

// Samples set aside (the result's and the baseline's): both figures and how
// many each reason took.
std::vector<std::string> set_aside_notes(const Result& r);

// Why a record is still slowed when written (harness.hpp, judge_interference):
// the reference ran slowed over the kept attempt, its re-takes ran out, or
// too many kept samples carry what the kernel's counters call interference.
// Empty when it is not slowed.
std::optional<std::string> interference_detail(const Result& r);

// A re-measurement after host interference that failed: the note begins with
// the prefix, and gives the failure's first reason.
inline constexpr const char* failed_remeasurement_prefix = "a re-measurement after host interference failed";
std::string failed_remeasurement_note(const Result& failed_attempt);

// Interleaved rounds: a slowed variant is not measured again.
std::string rounds_not_remeasured_note();
// A run that ended early, for a variant not finished: after `done` of its
// `rounds` rounds, or (rounds 0) before its re-measurement.
std::string ended_early_note(std::size_t done, int rounds);

// A variant measured in rounds whose round `round` (from 2) was unsupported
// or failed: the record is that round's.
std::string round_failed_note(int round);

// ---- sampling (sampling.hpp) and the cycle counter (cycle_counter.hpp) ----
std::string interrupted_detail();
std::string stopped_between_batches_detail();      // --timeout, for a probe with no child to kill
std::string counters_unread_note();                // the kernel's counters could not be read for some samples
std::string cycle_counter_unavailable(int error);  // perf_event_open failed with `error` (an errno)
std::string cycles_user_only();
std::string cycle_counter_read_failed();

// ---- the verdict checks (verdict_checks.hpp) ----
std::string no_switches_were_expected();  // a descriptor whose expectation counts none (not Expectation::none)
std::string too_few_switches_detail(const std::string& check, double observed, double expected);
std::string too_many_switches_detail(const std::string& check, double observed, double expected);
std::string partner_switches_detail(std::size_t partners);
std::string partner_switches_kept_detail(std::size_t partners);
std::string preemptions_expected();
std::string spinning_tasks_preempted_detail(long switches);
std::string migrated_detail();
std::string unpinned_detail();
std::string quantization_detail(double shortest_batch_ns, double resolution_ns);

// ---- one variant (harness.hpp) ----
std::string idle_held_without_driver_note();
std::string budget_ran_out_note(std::size_t samples, double budget_s);
std::string no_seccomp_thread_detail(const std::string& error);
std::string seccomp_axis_note();
std::string only_allowed_cpu_why(int cpu);
std::string least_busy_cpu_why(int cpu, const std::string& why);

// ---- the CPU-pair matrix (pair_matrix.hpp) ----
std::string matrix_needs_two_cpus(int only_cpu);
std::string matrix_diagonal(bool measured, const std::string& why_not);
std::string matrix_cell_name(int row, int column);
std::string matrix_cell_reason(const std::string& cell, const std::string& detail);
std::string matrix_cell_problem(const std::string& reason, const std::string& detail);
std::string matrix_summed_switches_detail(std::size_t cells);
std::string matrix_placement_expected();
std::string matrix_placement_detail(bool stayed, std::size_t cells);
std::string matrix_reason_detail(std::size_t cells_with_it, std::size_t cells, const std::string& first);
std::string matrix_cut_short_note(std::size_t cut_short, std::size_t cells, double budget_s);
std::string matrix_baseline_failed(const std::string& error);
std::string matrix_nonpositive_detail(double baseline, double median);

// ---- a run (run_command.hpp) ----
// Where a variant stands in the run before it is measured: `index` from 0,
// its attempt (from 1) and round (from 1; 0 when not interleaved) of `rounds`.
struct ProgressPoint {
  std::size_t index = 0, total = 0, attempt = 1;
  int round = 0, rounds = 1;
};
// "@progress {json}\n", for a front end (--progress).
std::string progress_line(const ProgressPoint& at, const std::string& probe, const Params& params);
// "[2/9] switch.pipe cpus=same (round 1/5)\n", for a person at a terminal.
std::string progress_text(const ProgressPoint& at, const std::string& probe, const Params& params);
std::string variant_overran_detail(double timeout_s);
std::string parent_gone_error();
std::string parent_watch_refused_note(int error);
std::string trace_unavailable_error(const std::string& problem);
std::string trace_unavailable_note(const std::string& problem);
std::string tracefs_mounted_note();
std::string no_monitor_thread_error(const std::string& error);
std::string out_unwritable_error(const std::string& path, int error);
std::string preset_title(const std::string& name, const std::string& description, const std::vector<std::string>* laps);

}  // namespace ctx
