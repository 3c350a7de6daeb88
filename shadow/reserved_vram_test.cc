// SPDX-License-Identifier: GPL-2.0-or-later
#include "shadow/reserved_vram.h"

#include <gtest/gtest.h>

#include <optional>

#include "shadow/testing/fixture.h"

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

// ---- quarantine: memory that held translations waits for a shootdown

struct CountingShootdown {
  int runs = 0;
  ReservedVram::Shootdown fn() {
    return [this] { ++runs; };
  }
};

TEST(ReservedVramQuarantine, FreedMemoryIsNotHandedOutBeforeAShootdown) {
  auto vram = gpu::Vram::create(4 * MiB).value();
  CountingShootdown sd;
  ReservedVram r(*vram, 0, 1 * MiB, sd.fn());
  auto a = r.alloc(64 * KiB);
  ASSERT_TRUE(a);
  r.free(*a);
  EXPECT_EQ(r.used(), 0u);
  EXPECT_EQ(r.quarantined(), 64 * KiB);
  auto b = r.alloc(64 * KiB);
  ASSERT_TRUE(b);
  EXPECT_NE(*b, *a) << "a block freed without a shootdown was handed out again";
  EXPECT_EQ(sd.runs, 0) << "clean memory was left: no shootdown needed";
}

TEST(ReservedVramQuarantine, ExhaustionRunsOneShootdownThenReusesTheQuarantine) {
  auto vram = gpu::Vram::create(4 * MiB).value();
  CountingShootdown sd;
  ReservedVram r(*vram, 0, 64 * KiB, sd.fn());
  auto a = r.alloc(32 * KiB);
  auto b = r.alloc(32 * KiB);
  ASSERT_TRUE(a && b);
  vram->write64(*a, 0x1234);
  r.free(*a);
  r.free(*b);
  auto whole = r.alloc(64 * KiB);  // needs both freed blocks, coalesced
  ASSERT_TRUE(whole);
  EXPECT_EQ(sd.runs, 1);
  EXPECT_EQ(r.shootdowns(), 1u);
  EXPECT_EQ(r.quarantined(), 0u);
  EXPECT_EQ(vram->read64(*a), 0u) << "reused memory is zeroed";
}

TEST(ReservedVramQuarantine, NothingQuarantinedMeansNoShootdown) {
  auto vram = gpu::Vram::create(4 * MiB).value();
  CountingShootdown sd;
  ReservedVram r(*vram, 0, 64 * KiB, sd.fn());
  ASSERT_TRUE(r.alloc(64 * KiB));
  EXPECT_FALSE(r.alloc(4 * KiB));
  EXPECT_EQ(sd.runs, 0);
}

// A block freed while a shootdown runs may have been cached after the
// invalidate began: only a later shootdown releases it.
TEST(ReservedVramQuarantine, MemoryFreedDuringAShootdownWaitsForTheNextOne) {
  auto vram = gpu::Vram::create(4 * MiB).value();
  ReservedVram* pool = nullptr;
  std::optional<uint64_t> late;
  int runs = 0;
  ReservedVram r(*vram, 0, 64 * KiB, [&] {
    if (runs++ == 0 && late) pool->free(*late);
  });
  pool = &r;
  auto a = r.alloc(32 * KiB);
  late = r.alloc(32 * KiB);
  ASSERT_TRUE(a && late);
  r.free(*a);
  auto again = r.alloc(32 * KiB);  // one shootdown releases `a`; `late` is freed during it
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *a);
  EXPECT_EQ(r.quarantined(), 32 * KiB);
  auto next = r.alloc(32 * KiB);  // a second shootdown releases `late`
  ASSERT_TRUE(next);
  EXPECT_EQ(*next, *late);
  EXPECT_EQ(runs, 2);
}

TEST(ReservedVramQuarantine, APoolWithoutShootdownReusesAtOnce) {
  auto vram = gpu::Vram::create(4 * MiB).value();
  ReservedVram r(*vram, 0, 1 * MiB);
  auto a = r.alloc(64 * KiB);
  ASSERT_TRUE(a);
  r.free(*a);
  EXPECT_EQ(r.quarantined(), 0u);
  EXPECT_EQ(r.alloc(64 * KiB), a);
}

}  // namespace
}  // namespace vgpu::shadow
