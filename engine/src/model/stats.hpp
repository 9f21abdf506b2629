// Small pure statistics over per-operation samples. Methods are named so a
// reader can check them: percentiles interpolate linearly between order
// statistics (numpy's default, Hyndman & Fan type 7); stddev is the sample
// standard deviation (n-1); the median's confidence interval is the
// distribution-free one from order statistics of Binomial(n, 1/2).
#pragma once
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ctx {

struct MedianCI {
  double low = 0;
  double high = 0;
  double level = 0;  // coverage actually achieved (>= the level asked for)
  std::string method;
};

struct Summary {
  std::size_t n = 0;
  double min = 0, median = 0, mean = 0, stddev = 0, p90 = 0, p99 = 0, max = 0;
  std::optional<MedianCI> median_ci;
};

// q in [0, 1]; `sorted` must be sorted ascending and non-empty.
double percentile_sorted(std::span<const double> sorted, double q);

// Null when n is too small for any pair of order statistics to reach `level`.
std::optional<MedianCI> median_ci_sorted(std::span<const double> sorted, double level = 0.95);

// Throws std::invalid_argument on an empty input.
Summary summarize(std::span<const double> samples);

// Is the distribution one figure? The sorted samples are split into groups
// wherever one value exceeds the one before it by more than
// `mode_gap_ratio`; a group holding at least `min_mode_share` of the samples
// (and `min_mode_samples` of them) is a mode. The samples are unstable when there are two or more modes, or
// when the middle half spans more than `max_middle_spread` (p75 / p25), which
// catches a spread with no clean gap. A heavy tail (a few scattered slow
// samples) is neither: its groups are too small to be modes and it leaves
// the middle half alone. Two samples are not a mode even where they are 20 %
// (a quick run's ten): two batches the host slowed alike, as happens on a
// shared VM, are a tail, not a second figure of the workload.
inline constexpr std::size_t stability_min_samples = 5;
inline constexpr std::size_t min_mode_samples = 3;
inline constexpr double mode_gap_ratio = 1.5;
inline constexpr double min_mode_share = 0.2;
inline constexpr double max_middle_spread = 1.5;

struct Mode {
  double center = 0;  // median of the mode's samples
  double low = 0, high = 0;
  double share = 0;  // fraction of all samples
};

struct Stability {
  bool unstable = false;
  double middle_spread = 0;  // p75 / p25
  std::vector<Mode> modes;   // largest share first
  double outside_modes = 0;  // share of samples in no mode (tail, scattered values)
};

// Null when it cannot be judged: fewer than stability_min_samples samples, or
// a value that is not positive (ratios mean nothing there).
std::optional<Stability> assess_stability(std::span<const double> samples);

}  // namespace ctx
