// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/allocator.h"

#include <gtest/gtest.h>

#include "vgpu/bits.h"

namespace vgpu::driver {
namespace {

TEST(RangeAllocator, FirstFitReturnsLowestAlignedRange) {
  RangeAllocator a("vram", 0x1000, 0x10000);
  auto x = a.alloc(0x100, 0x1000);
  ASSERT_TRUE(x);
  EXPECT_EQ(*x, 0x1000u);
  auto y = a.alloc(0x100, 0x4000);
  ASSERT_TRUE(y);
  EXPECT_EQ(*y, 0x4000u);
  EXPECT_EQ(a.free_bytes(), 0x10000u - 0x200u);
}

TEST(RangeAllocator, AlignmentGapStaysFree) {
  RangeAllocator a("vram", 0, 0x10000);
  ASSERT_TRUE(a.alloc(0x10, 1));
  auto big = a.alloc(0x1000, 0x1000);
  ASSERT_TRUE(big);
  EXPECT_EQ(*big, 0x1000u);
  auto small = a.alloc(0x20, 0x10);  // fits in the gap before 0x1000
  ASSERT_TRUE(small);
  EXPECT_EQ(*small, 0x10u);
}

TEST(RangeAllocator, ExhaustionIsOutOfMemoryNamingSizes) {
  RangeAllocator a("vram", 0, 64 * MiB);
  auto r = a.alloc(128 * MiB, 0x1000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::out_of_memory);
  EXPECT_NE(r.error().message.find("vram"), std::string::npos);
  EXPECT_NE(r.error().message.find("134217728"), std::string::npos);
  EXPECT_NE(r.error().message.find("67108864"), std::string::npos);
}

TEST(RangeAllocator, FreeCoalescesNeighbours) {
  RangeAllocator a("va", 0, 0x3000);
  auto x = a.alloc(0x1000, 0x1000), y = a.alloc(0x1000, 0x1000), z = a.alloc(0x1000, 0x1000);
  ASSERT_TRUE(x && y && z);
  EXPECT_EQ(a.free_ranges(), 0u);
  ASSERT_TRUE(a.free(*x));
  ASSERT_TRUE(a.free(*z));
  EXPECT_EQ(a.free_ranges(), 2u);
  ASSERT_TRUE(a.free(*y));
  EXPECT_EQ(a.free_ranges(), 1u);
  EXPECT_EQ(a.largest_free(), 0x3000u);
  auto all = a.alloc(0x3000, 0x1000);
  ASSERT_TRUE(all);
  EXPECT_EQ(*all, 0u);
}

TEST(RangeAllocator, FreeOfUnknownAddressIsNotFound) {
  RangeAllocator a("va", 0, 0x3000);
  auto x = a.alloc(0x1000, 0x1000);
  ASSERT_TRUE(x);
  auto r = a.free(*x + 0x10);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::not_found);
  ASSERT_TRUE(a.free(*x));
  auto twice = a.free(*x);
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, Errc::not_found);
}

TEST(RangeAllocator, ReserveTakesFixedRangeOnce) {
  RangeAllocator a("vram", 0, 0x10000);
  ASSERT_TRUE(a.reserve(0x2000, 0x1000));
  auto again = a.reserve(0x2800, 0x100);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::invalid_argument);
  auto x = a.alloc(0x3000, 0x1000);
  ASSERT_TRUE(x);
  EXPECT_EQ(*x, 0x3000u);  // [0, 0x2000) is too small, [0x3000, ...) fits
  EXPECT_EQ(a.allocation_size(0x2000), 0x1000u);
}

TEST(RangeAllocator, ZeroBytesOrBadAlignmentIsInvalid) {
  RangeAllocator a("vram", 0, 0x10000);
  EXPECT_EQ(a.alloc(0, 0x1000).error().code, Errc::invalid_argument);
  EXPECT_EQ(a.alloc(0x10, 3).error().code, Errc::invalid_argument);
}

}  // namespace
}  // namespace vgpu::driver
