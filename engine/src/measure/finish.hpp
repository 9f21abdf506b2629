// One way to finish a record. Whatever was measured (one set of batches, a
// variant's pooled rounds, one cell of a CPU-pair matrix or the matrix whole),
// its samples go through the same steps, in this order: the summary, the
// baseline check (nonpositive_after_baseline), the switch checks judged again
// where counts were added up, the figures that are functions of the summary,
// the stability, and the host reference's attempt. Each step's rule lives
// here once; what differs between the kinds of measurement is said by
// `Measured`, never by a check's name.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "model/record.hpp"
#include "os/tasks.hpp"

namespace ctx {

enum class Measured {
  batches,  // one set of timed batches: a whole variant, or one round of it
  rounds,   // a variant's rounds, pooled (merge_rounds)
  cell,     // one cell of a CPU-pair matrix: judged with the matrix, not alone
  matrix,   // a CPU-pair matrix, its cells' samples in cell order
};

// Where no switch is expected (a user-level switch), what the kernel counted
// and over how many ops: every batch of one set, or every round's, summed.
struct NoSwitchCounts {
  SwitchCount counted;  // one set of batches
  double pooled = 0;    // rounds: both kinds, summed over the rounds
  double ops = 0;
};

struct Finishing {
  Measured measured = Measured::batches;
  std::size_t parts = 1;  // rounds pooled, or cells summed (the checks' details)
  // The figures that are functions of the summary (derive_from_summary); may be empty.
  std::function<void(Result&)> derive;
  // Set where the probe expects no switch (the kernel_not_involved check).
  std::optional<NoSwitchCounts> no_switches;
  // The host reference, where it was timed: what it is (reference, retries),
  // its times before each kept sample, and the run's best. Unset: none.
  std::optional<Interference> reference;
  std::vector<double> reference_ns;
  double best_ns = 0;
};

// Takes r (its samples, baseline, checks and counters in place) through the
// steps above. Adds reasons to r.verdict; never removes one.
void finish_record(Result& r, const Finishing& how);

// Pooled rounds' or a matrix's checks, each added up over its parts
// (add_to_totals): judged again by their kind over the totals. Adds the
// switch reasons to r.verdict for rounds; a matrix words its own (its
// cells' reasons are counted cell by cell).
void judge_totals(Result& r, const Finishing& how);

// Interference only adds time, and the filled samples (CleanSampling) carry
// what the kernel saw: had they run clean, the median could have moved by at
// most `filled` places in the sorted samples. True where those places stay
// inside the median's interval (`ci`, both ways, so a rate's samples are
// judged alike): the figure is the clean samples' within its own
// uncertainty. False without an interval; true with nothing filled.
bool filled_inside_interval(const std::vector<double>& samples, std::size_t filled, const std::optional<MedianCI>& ci);

// The host reference's attempt over r's kept samples: its times against the
// run's best, r's median, the set-aside samples and the kernel's share.
InterferenceAttempt reference_attempt(const std::vector<double>& reference_ns, double best_ns, const Result& r);

}  // namespace ctx
