// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/clock.h"

#include <gtest/gtest.h>

namespace vgpu {
namespace {

TEST(VirtualClock, StartsAtZeroAndMovesOnlyWhenCharged) {
  VirtualClock c;
  EXPECT_EQ(c.now_ns(), 0u);
  EXPECT_EQ(c.charge(0, 500), 500u);
  EXPECT_EQ(c.now_ns(), 500u);
}

TEST(VirtualClock, ChargeFromEarlierStartNeverMovesBackwards) {
  VirtualClock c;
  c.charge(0, 1000);
  EXPECT_EQ(c.charge(100, 200), 300u);
  EXPECT_EQ(c.now_ns(), 1000u);
}

TEST(VirtualClock, SleepAdvancesByTheDuration) {
  VirtualClock c;
  c.sleep_ns(10'000'000);
  EXPECT_EQ(c.now_ns(), 10'000'000u);
}

TEST(RealClock, SleepWaitsAtLeastTheDuration) {
  RealClock c;
  const uint64_t t0 = c.now_ns();
  c.sleep_ns(2'000'000);
  EXPECT_GE(c.now_ns() - t0, 2'000'000u);
}

}  // namespace
}  // namespace vgpu
