// SPDX-License-Identifier: GPL-2.0-or-later
#include "shadow/entry.h"

#include <gtest/gtest.h>

namespace vgpu::shadow {
namespace {

constexpr Partition PART{64 * MiB, 32 * MiB};

TEST(ShadowEntry, SmallPageInsidePartitionIsRelocated) {
  const ShadowPte s = shadow_pte(fmt::pte::make(0x5000, {.read_only = true}), fmt::PageSize::small, PART);
  EXPECT_EQ(s.verdict, Verdict::mapped);
  EXPECT_EQ(fmt::pte::addr(s.value), PART.base + 0x5000);
  EXPECT_TRUE(fmt::pte::ReadOnly::get(s.value));
}

TEST(ShadowEntry, SmallPageOutsidePartitionIsRejected) {
  const ShadowPte s = shadow_pte(fmt::pte::make(PART.size), fmt::PageSize::small, PART);
  EXPECT_EQ(s.verdict, Verdict::rejected);
  EXPECT_EQ(s.value, 0u);
}

TEST(ShadowEntry, LastBigPageOfPartitionIsMapped) {
  EXPECT_EQ(shadow_pte(fmt::pte::make(PART.size - fmt::BIG_PAGE), fmt::PageSize::big, PART).verdict, Verdict::mapped);
}

TEST(ShadowEntry, BigPageBeyondPartitionIsRejected) {
  EXPECT_EQ(shadow_pte(fmt::pte::make(PART.size), fmt::PageSize::big, PART).verdict, Verdict::rejected);
}

TEST(ShadowEntry, MisalignedBigPageIsRejected) {
  EXPECT_EQ(shadow_pte(fmt::pte::make(fmt::SMALL_PAGE), fmt::PageSize::big, PART).verdict, Verdict::rejected);
}

TEST(ShadowEntry, SysmemApertureIsRejected) {
  const uint64_t g = fmt::pte::Aperture::set(fmt::pte::make(0x1000), uint64_t(fmt::Target::sysmem_coherent));
  EXPECT_EQ(shadow_pte(g, fmt::PageSize::small, PART).verdict, Verdict::rejected);
}

TEST(ShadowEntry, InvalidEntryStaysAbsent) {
  EXPECT_EQ(shadow_pte(fmt::pte::Addr::make(0x7), fmt::PageSize::small, PART).verdict, Verdict::absent);
}

TEST(ShadowEntry, PageTableOutsidePartitionIsRejected) {
  EXPECT_EQ(guest_spt(fmt::pde::make(PART.size - 0x1000, 0), PART).verdict, Verdict::rejected);
  EXPECT_EQ(guest_lpt(fmt::pde::make(0, 0x2000), PART).verdict, Verdict::mapped);
  EXPECT_EQ(guest_lpt(fmt::pde::make(0, 0), PART).verdict, Verdict::absent);
}

}  // namespace
}  // namespace vgpu::shadow
