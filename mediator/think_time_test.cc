// SPDX-License-Identifier: GPL-2.0-or-later
#include "mediator/think_time.h"

#include <gtest/gtest.h>

namespace vgpu::mediator {
namespace {

constexpr uint64_t US = 1'000, FLOOR = 200 * US, MAX = 2'000 * US, CAP = 2 * MAX;

// One gap of `gap` after a dry end at `t`; returns the time it came back.
uint64_t gap(ThinkTime& t, uint64_t at, uint64_t g) {
  t.ran_dry(at);
  t.came_back(at + g, CAP);
  return at + g;
}

TEST(ThinkTime, AVmWithNoGapMeasuredIsHeldForTheFloor) {
  ThinkTime t;
  EXPECT_EQ(t.hold_ns(FLOOR, MAX), FLOOR);
  // A launch with no dry end before it is no gap.
  t.came_back(1'000 * US, CAP);
  EXPECT_EQ(t.samples(), 0u);
  EXPECT_EQ(t.hold_ns(FLOOR, MAX), FLOOR);
}

TEST(ThinkTime, ASteadyGapIsHeldForTwiceTheMeanPlusFourDeviations) {
  ThinkTime t;
  uint64_t now = 0;
  for (int i = 0; i < 64; ++i) now = gap(t, now + 10'000 * US, 600 * US);
  EXPECT_EQ(t.samples(), 64u);
  EXPECT_EQ(t.mean_ns(), 600 * US);
  // The first gap's deviation (half of it) decays by 3/4 a gap.
  EXPECT_LT(t.deviation_ns(), 1 * US);
  EXPECT_EQ(t.hold_ns(FLOOR, MAX), 2 * t.mean_ns() + 4 * t.deviation_ns());
}

TEST(ThinkTime, TheHoldStaysWithinTheFloorAndTheMaximum) {
  ThinkTime quick, slowish;
  uint64_t now = 0;
  for (int i = 0; i < 32; ++i) now = gap(quick, now + 1'000 * US, 20 * US);
  EXPECT_EQ(quick.hold_ns(FLOOR, MAX), FLOOR);
  for (int i = 0; i < 32; ++i) now = gap(slowish, now + 1'000 * US, 1'500 * US);
  EXPECT_EQ(slowish.hold_ns(FLOOR, MAX), MAX);  // 3 ms and more, held to 2
  EXPECT_EQ(slowish.hold_ns(0, MAX), 0u);       // holds off
}

TEST(ThinkTime, AVmSlowerThanTheMaximumGetsTheFloorAndRecovers) {
  ThinkTime t;
  uint64_t now = 0;
  for (int i = 0; i < 32; ++i) now = gap(t, now + 1'000 * US, 600 * US);
  // A minute away counts as the cap, not a minute: the mean jumps by an
  // eighth of the difference.
  now = gap(t, now, 60'000'000 * US);
  EXPECT_EQ(t.mean_ns(), 600 * US + (CAP - 600 * US) / 8);
  // Steadily slower than the maximum: holding is not worth it.
  for (int i = 0; i < 32; ++i) now = gap(t, now + 1'000 * US, 3'000 * US);
  EXPECT_GT(t.mean_ns(), MAX);
  EXPECT_EQ(t.hold_ns(FLOOR, MAX), FLOOR);
  // Quick again: within a few dozen launches the hold follows.
  for (int i = 0; i < 48; ++i) now = gap(t, now + 1'000 * US, 500 * US);
  EXPECT_GT(t.hold_ns(FLOOR, MAX), FLOOR);
  EXPECT_LE(t.hold_ns(FLOOR, MAX), MAX);
}

TEST(ThinkTime, AGapIsCountedOncePerDryEnd) {
  ThinkTime t;
  t.ran_dry(0);
  t.came_back(700 * US, CAP);
  t.came_back(900 * US, CAP);  // the VM's second launch in a row
  EXPECT_EQ(t.samples(), 1u);
  EXPECT_EQ(t.mean_ns(), 700 * US);
}

}  // namespace
}  // namespace vgpu::mediator
