// One way to finish a record (finish.hpp lists the steps).
#include "measure/finish.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "measure/verdict_checks.hpp"
#include "report/wording.hpp"

namespace ctx {

namespace {

// The corrected figure (the median less the baseline's) must be positive.
void check_baseline(Result& r, const Finishing& how) {
  if (!r.baseline || r.summary->median - r.baseline->value > 0) return;
  const double baseline = r.baseline->value, median = r.summary->median;
  r.verdict.add(Status::suspect, Reason::nonpositive_after_baseline,
                how.measured == Measured::matrix ? matrix_nonpositive_detail(baseline, median)
                                                 : nonpositive_detail(baseline, median));
}

// A whole set of batches where no switch is expected: judged over every batch.
void check_no_switches(Result& r, const NoSwitchCounts& counts) {
  Check check;
  if (auto problem = judge_no_switches(counts.counted, counts.ops, check))
    r.verdict.add(Status::suspect, problem->first, problem->second);
  r.checks.push_back(check);
}

// The median of the shortest interval holding half the sorted samples (and
// one more): where most of them sit, whatever a tail does.
double shorth_median(const std::vector<double>& sorted) {
  const std::size_t h = sorted.size() / 2 + 1;
  std::size_t best = 0;
  for (std::size_t i = 1; i + h <= sorted.size(); ++i)
    if (sorted[i + h - 1] - sorted[i] < sorted[best + h - 1] - sorted[best]) best = i;
  return percentile_sorted(std::span<const double>(sorted).subspan(best, h), 0.5);
}

// Interference only adds time: where it still shows in the kept samples as a
// long right tail (p90 further above the median than twice p10 below it, and
// over 5% above it), the shorth's median, which the tail cannot move.
std::optional<double> tail_figure(const std::vector<double>& samples) {
  if (samples.size() < 5) return std::nullopt;
  const Summary s = summarize(samples);
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const double p10 = percentile_sorted(sorted, 0.1), p90 = percentile_sorted(sorted, 0.9);
  if (!(p90 - s.median > 2 * (s.median - p10) && p90 > 1.05 * s.median)) return std::nullopt;
  return shorth_median(sorted);
}

bool judged_alone(Measured measured) { return measured == Measured::batches || measured == Measured::rounds; }

}  // namespace

bool filled_inside_interval(const std::vector<double>& samples, std::size_t filled, const std::optional<MedianCI>& ci) {
  if (filled == 0) return true;
  if (!ci || samples.empty()) return false;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size(), lo = (n - 1) / 2, hi = n / 2;
  if (lo < filled || hi + filled >= n) return false;
  return sorted[lo - filled] >= ci->low && sorted[hi + filled] <= ci->high;
}

InterferenceAttempt reference_attempt(const std::vector<double>& reference_ns, double best_ns, const Result& r) {
  InterferenceAttempt attempt = judge_attempt(reference_ns, best_ns, r.summary->median);
  attempt.set_aside = r.set_aside.size();
  if (!r.set_aside.empty()) attempt.set_aside_median = summarize(r.set_aside).median;
  if (r.counters) attempt.interfered_share = interfered_share(*r.counters);
  attempt.short_of_clean = r.clean && !clean_enough(*r.clean);
  return attempt;
}

void judge_totals(Result& r, const Finishing& how) {
  const bool matrix = how.measured == Measured::matrix;
  double expected_all = 0, observed_all = 0;
  for (auto& check : r.checks) {
    switch (check.kind) {
      case CheckKind::placement:
        if (matrix) {
          check.expected = matrix_placement_expected();
          check.observed = nullptr;
          check.detail = matrix_placement_detail(check.ok, how.parts);
        } else {
          check.observed = nlohmann::json{{"start", r.observed_start}, {"end", r.observed_end}};
        }
        break;
      case CheckKind::no_switches:
        if (!matrix && how.no_switches)
          if (auto problem = judge_pooled_no_switches(how.no_switches->pooled, how.no_switches->ops,
                                                      static_cast<int>(how.parts), check))
            r.verdict.add(Status::suspect, problem->first, problem->second);
        break;
      case CheckKind::preemptions: break;
      case CheckKind::switches: {
        if (!check.expected.is_number() || !check.observed.is_number()) break;
        const double expected = check.expected.get<double>(), observed = check.observed.get<double>();
        if (matrix) {
          // The cells' reasons are the matrix's, counted cell by cell.
          Check judged = check;
          judge_switches(expected, observed, judged);
          check.ratio = judged.ratio;
          check.ok = judged.ok;
          check.detail = matrix_summed_switches_detail(how.parts);
          break;
        }
        if (auto problem = judge_switches(expected, observed, check))
          r.verdict.add(Status::suspect, problem->first, problem->second);
        check.detail += fmt::format(" (summed over {} rounds)", how.parts);
        expected_all += expected;
        observed_all += observed;
        break;
      }
    }
  }
  if (expected_all > 0 && observed_all > 0) r.derived["observed_switches_per_expected"] = observed_all / expected_all;
}

void finish_record(Result& r, const Finishing& how) {
  r.summary = summarize(r.samples);
  if (r.clean) {
    r.clean->tail_figure = tail_figure(r.samples);
    r.clean->filled_inside = filled_inside_interval(r.samples, r.clean->filled, r.summary->median_ci);
  }
  check_baseline(r, how);
  if (how.measured == Measured::rounds) judge_totals(r, how);  // a matrix judges its totals as it sums them
  if (how.derive) how.derive(r);
  if (judged_alone(how.measured)) {
    // A matrix's cells differ by design; a variant's samples must be one figure.
    r.stability = assess_stability(r.samples);
    if (r.stability && r.stability->unstable)
      r.verdict.add(Status::suspect, Reason::unstable, unstable_detail(*r.stability, r));
  }
  if (how.measured == Measured::batches && how.no_switches) check_no_switches(r, *how.no_switches);
  if (how.reference) {
    Interference in = *how.reference;
    in.attempts = {reference_attempt(how.reference_ns, how.best_ns, r)};
    in.kept = 0;
    r.interference = std::move(in);
  }
}

}  // namespace ctx
