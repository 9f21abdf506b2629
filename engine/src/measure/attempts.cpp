#include "measure/attempts.hpp"

#include <algorithm>

#include "os/tasks.hpp"
#include "report/wording.hpp"

namespace ctx {

bool wants_another_attempt(const Result& r, const HarnessOptions& options) {
  if (!r.interference || !options.reference || r.interference->no_more_attempts) return false;
  if (!r.summary || r.verdict.status == Status::unsupported || r.verdict.status == Status::failed) return false;
  if (interrupted_flag().load()) return false;
  const Interference& in = *r.interference;
  return in.attempts.size() <= static_cast<std::size_t>(options.retries) &&
         slowed(in.attempts[in.kept], options.reference->best_ns());
}

void keep_better_attempt(Result& r, Result&& again) {
  Interference& in = *r.interference;
  if (!again.interference || !again.summary || again.verdict.status == Status::unsupported ||
      again.verdict.status == Status::failed) {
    in.no_more_attempts = true;
    r.duration_s += again.duration_s;
    r.notes.push_back(failed_remeasurement_note(again));
    return;
  }
  std::vector<InterferenceAttempt> attempts = std::move(in.attempts);
  attempts.push_back(again.interference->attempts.front());
  std::size_t kept = in.kept;
  const double duration_s = r.duration_s + again.duration_s;  // every attempt's time
  if (attempt_to_keep(attempts) == attempts.size() - 1) {
    // The new attempt is kept: its record replaces the old one, notes and all,
    // except the note of a failed re-measurement, which stays true.
    std::vector<std::string> failed_notes;
    for (auto& note : r.notes)
      if (note.starts_with(failed_remeasurement_prefix)) failed_notes.push_back(note);
    std::string run_id = std::move(r.run_id);  // the run's, not the attempt's, as its place and schedule
    const std::size_t variant_index = r.variant_index;
    again.trace = std::move(r.trace);  // the variant's traced pass, whichever attempt is kept
    nlohmann::json schedule = std::move(r.schedule);
    r = std::move(again);
    r.run_id = std::move(run_id);
    r.variant_index = variant_index;
    r.schedule = std::move(schedule);
    r.notes.insert(r.notes.end(), failed_notes.begin(), failed_notes.end());
    kept = attempts.size() - 1;
  }
  r.interference->attempts = std::move(attempts);
  r.interference->kept = kept;
  r.duration_s = duration_s;
}

void close_interference(Result& r, const HarnessOptions& options) {
  if (r.interference && options.reference) {
    Interference& in = *r.interference;
    // The best was fixed when the run started: every attempt was judged by it.
    const double best = options.reference->best_ns();
    in.best_ns = best;
    for (auto& note : interference_notes(r)) r.notes.push_back(std::move(note));
  }
  for (auto& note : set_aside_notes(r)) r.notes.push_back(std::move(note));
  judge_interference(r);
}

void judge_interference(Result& r) {
  if (r.verdict.status != Status::ok && r.verdict.status != Status::suspect) return;
  if (std::any_of(r.verdict.reasons.begin(), r.verdict.reasons.end(),
                  [](const auto& reason) { return reason.first == Reason::interference; }))
    return;
  if (auto detail = interference_detail(r)) r.verdict.add(Status::suspect, Reason::interference, *detail);
}

}  // namespace ctx
