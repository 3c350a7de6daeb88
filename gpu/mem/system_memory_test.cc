// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/mem/system_memory.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "vgpu/bits.h"

namespace vgpu::gpu {
namespace {

TEST(MemfdRam, ReadsBackWhatWasWritten) {
  auto ram = MemfdRam::create(64 * KiB, "ram");
  ASSERT_TRUE(ram.has_value());
  const std::array<uint8_t, 5> in{1, 2, 3, 4, 5};
  ASSERT_TRUE((*ram)->write(0x1000, in.data(), in.size()));
  std::array<uint8_t, 5> out{};
  ASSERT_TRUE((*ram)->read(0x1000, out.data(), out.size()));
  EXPECT_EQ(in, out);
  EXPECT_EQ((*ram)->data()[0x1002], std::byte{3});
}

TEST(MemfdRam, RangeCrossingTheEndFails) {
  auto ram = MemfdRam::create(64 * KiB, "ram");
  ASSERT_TRUE(ram.has_value());
  uint32_t v = 0;
  EXPECT_TRUE((*ram)->read(64 * KiB - 4, &v, 4));
  EXPECT_FALSE((*ram)->read(64 * KiB - 2, &v, 4));
  EXPECT_FALSE((*ram)->write(64 * KiB, &v, 4));
  EXPECT_FALSE((*ram)->contains(~uint64_t{0} - 1, 4));
}

TEST(MemfdRam, SizeMustBePages) {
  EXPECT_FALSE(MemfdRam::create(0, "ram").has_value());
  EXPECT_FALSE(MemfdRam::create(100, "ram").has_value());
}

TEST(NoSystemMemory, EveryAccessFails) {
  NoSystemMemory none;
  uint32_t v = 0;
  EXPECT_FALSE(none.read(0, &v, 4));
  EXPECT_FALSE(none.write(0, &v, 4));
  EXPECT_TRUE(none.read(0, &v, 0));
}

TEST(BusMap, WindowsReachTheirMemoryAtAnOffset) {
  auto a = MemfdRam::create(64 * KiB, "a");
  auto b = MemfdRam::create(64 * KiB, "b");
  ASSERT_TRUE(a && b);
  BusMap bus;
  ASSERT_TRUE(bus.add(1 * GiB, 64 * KiB, *a, 0).has_value());
  ASSERT_TRUE(bus.add(2 * GiB, 32 * KiB, *b, 32 * KiB).has_value());
  const uint32_t x = 0x11223344;
  ASSERT_TRUE(bus.write(2 * GiB + 8, &x, 4));
  uint32_t y = 0;
  std::memcpy(&y, (*b)->data() + 32 * KiB + 8, 4);
  EXPECT_EQ(y, x);
  // Between windows, past a window's end, and across two windows: no memory.
  EXPECT_FALSE(bus.read(1 * GiB + 64 * KiB, &y, 4));
  EXPECT_FALSE(bus.read(2 * GiB + 32 * KiB - 2, &y, 4));
  EXPECT_FALSE(bus.contains(0, 4));
  EXPECT_TRUE(bus.contains(1 * GiB, 64 * KiB));
}

TEST(BusMap, OverlappingOrOversizedWindowsAreRefused) {
  auto a = MemfdRam::create(64 * KiB, "a");
  ASSERT_TRUE(a.has_value());
  BusMap bus;
  ASSERT_TRUE(bus.add(1 * GiB, 64 * KiB, *a, 0).has_value());
  EXPECT_FALSE(bus.add(1 * GiB + 4 * KiB, 4 * KiB, *a, 0).has_value());
  EXPECT_FALSE(bus.add(1 * GiB - 4 * KiB, 8 * KiB, *a, 0).has_value());
  // A window larger than its memory: accepted, DMA past the memory fails.
  ASSERT_TRUE(bus.add(3 * GiB, 128 * KiB, *a, 0).has_value());
  uint32_t v = 0;
  EXPECT_TRUE(bus.read(3 * GiB + 60 * KiB, &v, 4));
  EXPECT_FALSE(bus.read(3 * GiB + 64 * KiB, &v, 4));
}

TEST(BusMap, RemovedWindowFailsLaterDma) {
  auto a = MemfdRam::create(64 * KiB, "a");
  ASSERT_TRUE(a.has_value());
  BusMap bus;
  ASSERT_TRUE(bus.add(1 * GiB, 64 * KiB, *a, 0).has_value());
  bus.remove(1 * GiB);
  uint32_t v = 0;
  EXPECT_FALSE(bus.read(1 * GiB, &v, 4));
}

}  // namespace
}  // namespace vgpu::gpu
