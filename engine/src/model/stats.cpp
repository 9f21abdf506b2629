#include "model/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace ctx {

double percentile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) throw std::invalid_argument("percentile of no samples");
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

namespace {
// P(X <= k) for X ~ Binomial(n, 1/2), summed in log space to stay exact
// enough for n in the thousands.
double binomial_half_cdf(std::size_t n, std::size_t k) {
  double total = 0;
  for (std::size_t i = 0; i <= k && i <= n; ++i) {
    const double log_choose = std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(i) + 1) -
                              std::lgamma(static_cast<double>(n - i) + 1);
    total += std::exp(log_choose - static_cast<double>(n) * std::log(2.0));
  }
  return std::min(total, 1.0);
}
}  // namespace

std::optional<MedianCI> median_ci_sorted(std::span<const double> sorted, double level) {
  const std::size_t n = sorted.size();
  if (n < 2) return std::nullopt;
  // The interval [x(j), x(n-1-j)] (0-based) covers the median with
  // probability 1 - 2 P(X <= j) where X ~ Bin(n, 1/2); take the largest j
  // (the narrowest interval) that still reaches the level.
  std::optional<std::size_t> best;
  for (std::size_t j = 0; j < n / 2; ++j) {
    const double coverage = 1.0 - 2.0 * binomial_half_cdf(n, j);
    if (coverage >= level)
      best = j;
    else
      break;
  }
  if (!best) return std::nullopt;
  MedianCI ci;
  ci.low = sorted[*best];
  ci.high = sorted[n - 1 - *best];
  ci.level = 1.0 - 2.0 * binomial_half_cdf(n, *best);
  ci.method = "binomial order statistics (distribution-free)";
  return ci;
}

Summary summarize(std::span<const double> samples) {
  if (samples.empty()) throw std::invalid_argument("summary of no samples");
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  Summary s;
  s.n = sorted.size();
  s.min = sorted.front();
  s.max = sorted.back();
  s.median = percentile_sorted(sorted, 0.5);
  s.p90 = percentile_sorted(sorted, 0.90);
  s.p99 = percentile_sorted(sorted, 0.99);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(s.n);
  if (s.n > 1) {
    double squares = 0;
    for (double v : sorted) squares += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(squares / static_cast<double>(s.n - 1));
  }
  s.median_ci = median_ci_sorted(sorted);
  return s;
}

std::optional<Stability> assess_stability(std::span<const double> samples) {
  if (samples.size() < stability_min_samples) return std::nullopt;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  if (sorted.front() <= 0) return std::nullopt;
  Stability out;
  out.middle_spread = percentile_sorted(sorted, 0.75) / percentile_sorted(sorted, 0.25);
  const double n = static_cast<double>(sorted.size());
  std::size_t first = 0;
  double in_modes = 0;
  for (std::size_t i = 1; i <= sorted.size(); ++i) {
    if (i < sorted.size() && sorted[i] <= sorted[i - 1] * mode_gap_ratio) continue;
    const std::span<const double> group(sorted.data() + first, i - first);
    const double share = static_cast<double>(group.size()) / n;
    if (share >= min_mode_share && group.size() >= min_mode_samples) {
      out.modes.push_back({percentile_sorted(group, 0.5), group.front(), group.back(), share});
      in_modes += share;
    }
    first = i;
  }
  std::stable_sort(out.modes.begin(), out.modes.end(), [](const Mode& a, const Mode& b) { return a.share > b.share; });
  out.outside_modes = std::max(0.0, 1.0 - in_modes);
  out.unstable = out.modes.size() >= 2 || out.middle_spread > max_middle_spread;
  return out;
}

}  // namespace ctx
