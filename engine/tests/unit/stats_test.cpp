// Statistics against values computed by hand (and by numpy's defaults, and
// scipy.stats.binom for the median interval's coverage).
#include "stats.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using ctx::median_ci_sorted;
using ctx::percentile_sorted;
using ctx::summarize;

TEST(Stats, SummaryOfKnownData) {
  const std::vector<double> data = {4, 1, 3, 2, 5};
  const auto s = summarize(data);
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_NEAR(s.stddev, 1.5811388300841898, 1e-12);  // sqrt(2.5)
  EXPECT_DOUBLE_EQ(s.p90, 4.6);                      // numpy.percentile(data, 90)
  EXPECT_DOUBLE_EQ(s.p99, 4.96);
}

TEST(Stats, EvenCountMedianInterpolates) {
  const std::vector<double> data = {10, 20, 30, 40};
  EXPECT_DOUBLE_EQ(summarize(data).median, 25);
}

TEST(Stats, SingleSampleHasZeroSpreadAndNoInterval) {
  const std::vector<double> data = {7.5};
  const auto s = summarize(data);
  EXPECT_EQ(s.n, 1u);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
  EXPECT_DOUBLE_EQ(s.p99, 7.5);
  EXPECT_FALSE(s.median_ci.has_value());
}

TEST(Stats, TiesAndZeroSpread) {
  const std::vector<double> data(12, 3.0);
  const auto s = summarize(data);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
  ASSERT_TRUE(s.median_ci.has_value());
  EXPECT_DOUBLE_EQ(s.median_ci->low, 3.0);
  EXPECT_DOUBLE_EQ(s.median_ci->high, 3.0);
}

TEST(Stats, EmptyInputIsRefused) {
  const std::vector<double> none;
  EXPECT_THROW(summarize(none), std::invalid_argument);
  EXPECT_THROW(percentile_sorted(none, 0.5), std::invalid_argument);
}

TEST(Stats, MedianIntervalUsesBinomialOrderStatistics) {
  // n = 5: the widest interval [x1, x5] covers with 1 - 2/32 = 0.9375 < 0.95.
  const std::vector<double> five = {1, 2, 3, 4, 5};
  EXPECT_FALSE(median_ci_sorted(five).has_value());
  // n = 6: [x1, x6] covers with 1 - 2/64 = 0.96875.
  const std::vector<double> six = {1, 2, 3, 4, 5, 6};
  auto ci = median_ci_sorted(six);
  ASSERT_TRUE(ci.has_value());
  EXPECT_DOUBLE_EQ(ci->low, 1);
  EXPECT_DOUBLE_EQ(ci->high, 6);
  EXPECT_NEAR(ci->level, 0.96875, 1e-12);
  // n = 10: j = 1 gives 1 - 2*11/1024 = 0.978515625; j = 2 gives 0.890625 < 0.95.
  std::vector<double> ten;
  for (int i = 1; i <= 10; ++i) ten.push_back(i);
  ci = median_ci_sorted(ten);
  ASSERT_TRUE(ci.has_value());
  EXPECT_DOUBLE_EQ(ci->low, 2);
  EXPECT_DOUBLE_EQ(ci->high, 9);
  EXPECT_NEAR(ci->level, 0.978515625, 1e-12);
  // n = 30: scipy.stats.binom.cdf(9, 30, .5) = 0.021386...; coverage 0.957226...
  std::vector<double> thirty;
  for (int i = 1; i <= 30; ++i) thirty.push_back(i);
  ci = median_ci_sorted(thirty);
  ASSERT_TRUE(ci.has_value());
  EXPECT_DOUBLE_EQ(ci->low, 10);
  EXPECT_DOUBLE_EQ(ci->high, 21);
  EXPECT_NEAR(ci->level, 0.9572260547429323, 1e-9);
}
