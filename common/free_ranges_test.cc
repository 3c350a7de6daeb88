// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/free_ranges.h"

#include <gtest/gtest.h>

namespace vgpu {
namespace {

TEST(FreeRanges, FirstFitAlignsAndLeavesTheGapFree) {
  FreeRanges f(0x100, 0x10000);
  EXPECT_EQ(f.take_first_fit(0x100, 0x1000), 0x1000u);
  EXPECT_EQ(f.count(), 2u) << "[0x100, 0x1000) and the rest after the taken range";
  EXPECT_EQ(f.take_first_fit(0x80, 0x80), 0x100u) << "the gap before the aligned range is used first";
  EXPECT_EQ(f.take_first_fit(0x20000, 1), std::nullopt);
}

TEST(FreeRanges, PutMergesWithBothNeighbours) {
  FreeRanges f(0, 0x3000);
  ASSERT_TRUE(f.take(0, 0x3000));
  EXPECT_EQ(f.count(), 0u);
  f.put(0, 0x1000);
  f.put(0x2000, 0x1000);
  EXPECT_EQ(f.count(), 2u);
  f.put(0x1000, 0x1000);
  EXPECT_EQ(f.count(), 1u);
  EXPECT_EQ(f.largest(), 0x3000u);
}

TEST(FreeRanges, TakeRefusesWhatIsNotAllFreeAndTakesNothing) {
  FreeRanges f(0x1000, 0x1000);
  EXPECT_FALSE(f.take(0x800, 0x1000)) << "starts before the free range";
  EXPECT_FALSE(f.take(0x1800, 0x1000)) << "ends after it";
  EXPECT_FALSE(f.take(0x1000, 0)) << "nothing to take";
  EXPECT_FALSE(f.take(0x1800, UINT64_MAX)) << "wraps";
  EXPECT_EQ(f.largest(), 0x1000u);
  EXPECT_TRUE(f.take(0x1400, 0x400));
  EXPECT_EQ(f.count(), 2u);
}

TEST(FreeRanges, AnAlignmentThatWrapsPastTheEndSkipsTheRange) {
  const uint64_t top = UINT64_MAX - 0x1fff;  // [top, top + 0x1000): a page near the top of the address space
  FreeRanges f(top, 0x1000);
  EXPECT_EQ(f.take_first_fit(0x10, uint64_t{1} << 63), std::nullopt);
  EXPECT_EQ(f.take_first_fit(0x10, 0x10), top);
}

}  // namespace
}  // namespace vgpu
