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

}  // namespace ctx
