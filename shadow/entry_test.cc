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

TEST(ShadowEntry, SysmemWithoutRamIsRejected) {
  const uint64_t g = fmt::pte::make_sysmem(0x1000, {}, fmt::Target::sysmem_coherent);
  EXPECT_EQ(shadow_pte(g, fmt::PageSize::small, PART).verdict, Verdict::rejected);
}

// RAM: guest-physical [0, 1 GiB) at host bus 16 GiB, [4 GiB, 5 GiB) at 17 GiB.
std::unique_ptr<GuestRam> two_regions() {
  auto ram = std::make_unique<GuestRam>();
  ram->set({{0, GiB, 16 * GiB}, {4 * GiB, GiB, 17 * GiB}});
  return ram;
}

TEST(ShadowEntry, SysmemInsideRamMovesToHostBus) {
  const auto ram = two_regions();
  const ShadowPte s = shadow_pte(fmt::pte::make_sysmem(4 * GiB + 0x3000, {.read_only = true}), fmt::PageSize::small,
                                 PART, ram.get());
  EXPECT_EQ(s.verdict, Verdict::mapped);
  EXPECT_EQ(fmt::pte::addr(s.value), 17 * GiB + 0x3000);
  EXPECT_EQ(fmt::pte::Aperture::get(s.value), uint64_t(fmt::Target::sysmem_noncoherent));
  EXPECT_TRUE(fmt::pte::ReadOnly::get(s.value));
}

TEST(ShadowEntry, SysmemOutsideRamIsRejected) {
  const auto ram = two_regions();
  for (uint64_t gpa : {GiB, 2 * GiB, 5 * GiB, fmt::VA_LIMIT - fmt::SMALL_PAGE})
    EXPECT_EQ(shadow_pte(fmt::pte::make_sysmem(gpa), fmt::PageSize::small, PART, ram.get()).verdict, Verdict::rejected)
        << gpa;
}

TEST(ShadowEntry, SysmemBigPageStraddlingRamEndIsRejected) {
  GuestRam ram;
  ram.set({{0, 64 * KiB + 4 * GiB, 16 * GiB}});
  EXPECT_EQ(shadow_pte(fmt::pte::make_sysmem(4 * GiB), fmt::PageSize::big, PART, &ram).verdict, Verdict::rejected);
  EXPECT_EQ(shadow_pte(fmt::pte::make_sysmem(4 * GiB - fmt::BIG_PAGE), fmt::PageSize::big, PART, &ram).verdict,
            Verdict::mapped);
}

TEST(ShadowEntry, SysmemPageTableIsRejected) {
  const uint64_t pde = fmt::pde::SptTarget::make(uint64_t(fmt::PdeTarget::sysmem_coherent)) |
                       fmt::pde::SptAddr::make(0x10);
  EXPECT_EQ(guest_spt(pde, PART).verdict, Verdict::rejected);
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
