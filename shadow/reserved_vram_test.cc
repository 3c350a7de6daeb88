// SPDX-License-Identifier: GPL-2.0-or-later
#include "shadow/reserved_vram.h"

#include <gtest/gtest.h>

#include "shadow/testing.h"

namespace vgpu::shadow {
namespace {

TEST(ReservedVram, AllocationsAreAlignedZeroedAndDisjoint) {
  auto vram = gpu::Vram::create(4 * MiB).value();
  vram->write64(0x10000, 0xdeadbeef);
  ReservedVram r(*vram, 0, 1 * MiB);
  auto a = r.alloc(0x3000);
  auto b = r.alloc(0x10000, 0x10000);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*b % 0x10000, 0u);
  EXPECT_TRUE(*a + 0x3000 <= *b || *b + 0x10000 <= *a);
  EXPECT_EQ(vram->read64(*b), 0u);
  EXPECT_EQ(r.used(), 0x13000u);
}

TEST(ReservedVram, ExhaustionGivesNothing) {
  auto vram = gpu::Vram::create(4 * MiB).value();
  ReservedVram r(*vram, 1 * MiB, 64 * KiB);
  EXPECT_TRUE(r.alloc(64 * KiB));
  EXPECT_FALSE(r.alloc(4 * KiB));
}

TEST(ReservedVram, FreedNeighboursCoalesce) {
  auto vram = gpu::Vram::create(4 * MiB).value();
  ReservedVram r(*vram, 0, 64 * KiB);
  auto a = r.alloc(32 * KiB);
  auto b = r.alloc(32 * KiB);
  ASSERT_TRUE(a && b);
  r.free(*a);
  r.free(*b);
  EXPECT_TRUE(r.alloc(64 * KiB));
  EXPECT_EQ(r.peak(), 64 * KiB);
}

}  // namespace
}  // namespace vgpu::shadow
