// What the harness tells a reader in words: the notes and details a record
// carries beside its figures. The reasons' names are the closed catalogue in
// record.hpp; the sentences that explain a reason or a host reference's
// decision are here, so the harness measures and decides and nothing else.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "record.hpp"

namespace ctx {

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

}  // namespace ctx
