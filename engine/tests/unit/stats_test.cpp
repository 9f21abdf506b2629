// Statistics against values computed by hand (and by numpy's defaults).
#include "stats.hpp"

#include <gtest/gtest.h>

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
