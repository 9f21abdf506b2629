// The attempt policy, the harness's third job: whether a variant the host
// slowed is measured again (host_reference.hpp), which attempt a record
// keeps, and, once the last attempt is in, the notes and the verdict of
// interference. The attempts themselves are measured by the harness
// (measure_attempt); the schedule decides when (schedule.hpp).
#pragma once
#include "measure/harness_options.hpp"
#include "model/record.hpp"

namespace ctx {

// True while the kept attempt was measured slowed, attempts are left
// (options.retries) and none failed.
bool wants_another_attempt(const Result& r, const HarnessOptions& options);
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

}  // namespace ctx
