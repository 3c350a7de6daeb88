// SPDX-License-Identifier: GPL-2.0-or-later
#include "bench/workloads/paired.h"

#include <gtest/gtest.h>

namespace vgpu::bench {
namespace {

TEST(BootstrapSpeedRatio, RatioOfMediansInsideItsInterval) {
  const RatioCi r = bootstrap_speed_ratio({10, 11, 12, 13, 14}, {5, 5.5, 6, 6.5, 7});
  EXPECT_DOUBLE_EQ(r.ratio, 2.0);
  EXPECT_LE(r.low, r.ratio);
  EXPECT_GE(r.high, r.ratio);
  EXPECT_GT(r.low, 1.5) << "clearly faster: the interval stays away from 1";
}

TEST(BootstrapSpeedRatio, OverlappingSamplesGiveAnIntervalAroundOne) {
  const RatioCi r = bootstrap_speed_ratio({10, 12, 9, 11, 10.5, 9.5}, {10.2, 9.1, 11.8, 10.4, 9.8, 11});
  EXPECT_LT(r.low, 1.0);
  EXPECT_GT(r.high, 1.0);
}

TEST(BootstrapSpeedRatio, ASmallerAlphaWidensTheInterval) {
  const std::vector<double> a{10, 12, 9, 11, 10.5, 9.5, 10.8, 11.2}, b{9.6, 9.1, 10.8, 10.4, 9.8, 10, 9.4, 10.1};
  const RatioCi r95 = bootstrap_speed_ratio(a, b);
  const RatioCi bonferroni = bootstrap_speed_ratio(a, b, 0.05 / 24);
  EXPECT_LE(bonferroni.low, r95.low);
  EXPECT_GE(bonferroni.high, r95.high);
  EXPECT_LT(bonferroni.high - bonferroni.low, 1.0);
}

TEST(BootstrapSpeedRatio, OneSampleEachIsAPointAndNoneIsZero) {
  const RatioCi one = bootstrap_speed_ratio({4}, {2});
  EXPECT_DOUBLE_EQ(one.low, 2.0);
  EXPECT_DOUBLE_EQ(one.high, 2.0);
  EXPECT_EQ(bootstrap_speed_ratio({}, {1}).ratio, 0.0);
}

// The host's speed drifts by 2x over the rounds and falls on both members
// of each round alike: pairing sees the 10% between them.
TEST(BootstrapPairedRatio, ADriftSharedByEachRoundCancels) {
  const std::vector<double> a{10, 14, 20, 12, 18, 16, 11}, b{9.1, 12.6, 18.3, 10.9, 16.3, 14.6, 10.1};
  const RatioCi paired = bootstrap_paired_ratio(a, b);
  EXPECT_NEAR(paired.ratio, 1.1, 0.01);
  EXPECT_GT(paired.low, 1.05);
  EXPECT_LT(paired.high, 1.15);
  const RatioCi unpaired = bootstrap_speed_ratio(a, b);
  EXPECT_LT(unpaired.low, 1.0) << "without the pairing the drift hides the difference";
}

TEST(BootstrapPairedRatio, MedianOfPerRoundRatios) {
  const RatioCi r = bootstrap_paired_ratio({2, 3, 8}, {1, 2, 2});  // ratios 2, 1.5, 4
  EXPECT_DOUBLE_EQ(r.ratio, 2.0);
  EXPECT_LE(r.low, 1.5 + 1e-12);
  EXPECT_GE(r.high, 2.0);
}

TEST(BootstrapPairedRatio, UnpairedOrZeroInputsGiveNoRatio) {
  EXPECT_EQ(bootstrap_paired_ratio({1, 2}, {1}).ratio, 0.0);
  EXPECT_EQ(bootstrap_paired_ratio({}, {}).ratio, 0.0);
  EXPECT_EQ(bootstrap_paired_ratio({1, 0}, {1, 1}).ratio, 0.0);
}

}  // namespace
}  // namespace vgpu::bench
