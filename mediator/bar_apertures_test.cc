// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's BAR1/BAR3 shadows and BAR remap layout, on a guest partition
// with no host or GPU.
#include "mediator/bar_apertures.h"

#include <gtest/gtest.h>

#include "shadow/testing/fixture.h"
#include "vgpu/formats.h"
#include "vgpu/regs.h"

namespace vgpu::mediator {
namespace {

using shadow::testing::Fixture;
namespace pbus = regs::pbus;

constexpr uint64_t INST = 0x10000, PD = 0x100000, SPT = 0x200000;
constexpr uint64_t LIMIT = 1 * MiB - 1;
constexpr uint64_t PAGE = BarApertures::PAGE;
constexpr uint64_t BAR1_SIZE = 256 * MiB, BAR3_SIZE = 16 * MiB;

uint32_t inst_reg(uint64_t inst) {
  return pbus::BarInstMode::mask | pbus::BarInstAddr::make(static_cast<uint32_t>(inst >> pbus::BAR_INST_SHIFT));
}

struct Bars {
  Fixture f;
  BarApertures b{f.guest, f.reserved, f.counters, BAR1_SIZE, BAR3_SIZE};
  // BAR1 pages 0 and 1 on contiguous guest pages, page 8 elsewhere, read-only page 9.
  Bars() {
    fmt::encode_address_space(fmt::AddressSpace{.pdb = PD, .limit = LIMIT},
                              [&](uint32_t off, uint32_t v) { f.vram->write32(Fixture::PART_BASE + INST + off, v); });
    f.guest_pde(PD, 0, SPT, 0);
    f.guest_pte(SPT, 0, fmt::PageSize::small, fmt::pte::make(0x30000));
    f.guest_pte(SPT, PAGE, fmt::PageSize::small, fmt::pte::make(0x31000));
    f.guest_pte(SPT, 8 * PAGE, fmt::PageSize::small, fmt::pte::make(0x50000));
    f.guest_pte(SPT, 9 * PAGE, fmt::PageSize::small, fmt::pte::make(0x51000, {.read_only = true}));
  }
  void bind_bar1() {
    ASSERT_TRUE(b.set_inst(gpu::Bar::bar1, inst_reg(INST)));
    ASSERT_TRUE(b.sync(gpu::Bar::bar1, true));
  }
};

TEST(BarApertures, ATranslatedBarMapsItsPagesIntoThePartition) {
  Bars t;
  t.bind_bar1();
  auto p = t.b.translate(gpu::Bar::bar1, PAGE + 12);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->host, Fixture::PART_BASE + 0x31000 + 12);
  EXPECT_FALSE(p->read_only);
  EXPECT_TRUE(t.b.translate(gpu::Bar::bar1, 9 * PAGE)->read_only);
  EXPECT_FALSE(t.b.translate(gpu::Bar::bar1, 2 * PAGE));
  EXPECT_FALSE(t.b.translate(gpu::Bar::bar3, 0)) << "BAR3 has no space";
  EXPECT_EQ(t.b.guest_pd(gpu::Bar::bar1), PD);
}

TEST(BarApertures, AccessesBeyondTheLimitOrTheBarAreTold) {
  Bars t;
  t.bind_bar1();
  EXPECT_FALSE(t.b.beyond_limit(gpu::Bar::bar1, LIMIT));
  EXPECT_TRUE(t.b.beyond_limit(gpu::Bar::bar1, LIMIT + 1));
  EXPECT_TRUE(t.b.beyond_limit(gpu::Bar::bar3, BAR3_SIZE));
  EXPECT_FALSE(t.b.beyond_limit(gpu::Bar::bar3, 0));
}

TEST(BarApertures, AnInstanceBlockOutsideThePartitionMapsNothing) {
  Bars t;
  auto s = t.b.set_inst(gpu::Bar::bar1, inst_reg(Fixture::PART_BYTES));
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("outside the VM's VRAM"), std::string::npos);
  EXPECT_FALSE(t.b.has_space(gpu::Bar::bar1));
  EXPECT_FALSE(t.b.translate(gpu::Bar::bar1, 0));
}

TEST(BarApertures, DirectRangesMergeRunsAndKeepDoorbellsAndTablesTrapped) {
  Bars t;
  t.bind_bar1();
  ASSERT_TRUE(t.b.rebuild({}, true));
  auto all = t.b.direct_ranges(gpu::Bar::bar1, 0, 0);
  ASSERT_EQ(all.size(), 3u);  // [0, 2 pages) merged; page 8; page 9 (read-only)
  EXPECT_EQ(all[0].bar_offset, 0u);
  EXPECT_EQ(all[0].bytes, 2 * PAGE);
  EXPECT_EQ(all[0].vram_addr, Fixture::PART_BASE + 0x30000);
  EXPECT_TRUE(all[2].read_only);
  // The USERD array at BAR1 page 1 stays trapped.
  auto with_userd = t.b.direct_ranges(gpu::Bar::bar1, PAGE, 2 * PAGE);
  ASSERT_EQ(with_userd.size(), 3u);
  EXPECT_EQ(with_userd[0].bytes, PAGE);
  // A page holding a page table of the VM stays trapped too.
  auto added = t.b.rebuild({0x50000}, false);
  ASSERT_TRUE(added);
  EXPECT_EQ(*added, (std::vector<uint64_t>{0x50000}));
  EXPECT_TRUE(t.b.trapped_table_page(0x50000));
  EXPECT_EQ(t.b.direct_ranges(gpu::Bar::bar1, 0, 0).size(), 2u);
}

// Runs of 512 unmapped pages are skipped a block at a time: a page just
// after such a run, at the last page of one and at the BAR's last page
// (through a second table) is still a direct range.
TEST(BarApertures, DirectRangesFindPagesPastLongUnmappedRuns) {
  Bars t;
  const uint64_t last = BAR1_SIZE - PAGE;
  const uint64_t spt2 = SPT + fmt::SPT.table_bytes();
  fmt::encode_address_space(fmt::AddressSpace{.pdb = PD, .limit = BAR1_SIZE - 1},  // the whole BAR
                            [&](uint32_t off, uint32_t v) { t.f.vram->write32(Fixture::PART_BASE + INST + off, v); });
  t.f.guest_pte(SPT, 1023 * PAGE, fmt::PageSize::small, fmt::pte::make(0x60000));
  t.f.guest_pte(SPT, 1024 * PAGE, fmt::PageSize::small, fmt::pte::make(0x62000));
  t.f.guest_pde(PD, last, spt2, 0);
  t.f.guest_pte(spt2, last, fmt::PageSize::small, fmt::pte::make(0x64000));
  t.bind_bar1();
  ASSERT_TRUE(t.b.rebuild({}, true));
  std::vector<uint64_t> offsets;
  for (const DirectRange& r : t.b.direct_ranges(gpu::Bar::bar1, 0, 0)) offsets.push_back(r.bar_offset);
  EXPECT_EQ(offsets, (std::vector<uint64_t>{0, 8 * PAGE, 9 * PAGE, 1023 * PAGE, 1024 * PAGE, last}));
}

TEST(BarApertures, TheGenerationMovesOnlyWhenTheLayoutMayHaveChanged) {
  Bars t;
  t.bind_bar1();
  const uint64_t g0 = t.b.generation();
  ASSERT_TRUE(t.b.rebuild({}, true));
  const uint64_t g1 = t.b.generation();
  EXPECT_GT(g1, g0);
  EXPECT_FALSE(t.b.rebuild({}, false)) << "same table pages, no BAR change";
  EXPECT_EQ(t.b.generation(), g1);
  EXPECT_TRUE(t.b.rebuild({0x60000}, false));
  EXPECT_GT(t.b.generation(), g1);
}

TEST(BarApertures, ResetForgetsBothBars) {
  Bars t;
  t.bind_bar1();
  t.b.reset();
  EXPECT_FALSE(t.b.has_space(gpu::Bar::bar1));
  EXPECT_EQ(t.b.inst_reg(gpu::Bar::bar1), 0u);
  EXPECT_FALSE(t.b.translate(gpu::Bar::bar1, 0));
  EXPECT_EQ(t.b.size(gpu::Bar::bar1), BAR1_SIZE);
}

}  // namespace
}  // namespace vgpu::mediator
