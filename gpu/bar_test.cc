// SPDX-License-Identifier: GPL-2.0-or-later
// BAR1/BAR3 translation through their instance blocks, faults and pages.
#include <gtest/gtest.h>

#include "gpu/testing/harness.h"

namespace vgpu::gpu {
namespace {

using namespace regs;
using testing::Harness;

constexpr uint64_t BAR3_PAGE = 0x4000;
constexpr uint64_t BAR3_PHYS = 0x1800000;

void setup_bar3(Harness& h, fmt::pte::Flags flags = {}) {
  auto pd = h.tables().create_pd();
  ASSERT_TRUE(pd.has_value());
  ASSERT_TRUE(h.tables().map(*pd, BAR3_PAGE, BAR3_PHYS, fmt::SMALL_PAGE, fmt::PageSize::small, flags).has_value());
  ASSERT_TRUE(h.tables().write_instance(testing::BAR3_INST, *pd, pci::BAR3_SIZE - 1).has_value());
  h.wr(pbus::BAR3_INST, pbus::BarInstMode::mask | pbus::BarInstAddr::make(testing::BAR3_INST >> pbus::BAR_INST_SHIFT));
}

TEST(Bars, Bar1ReadsAndWritesThroughItsPageTables) {
  Harness h;
  h.gpu().bar_write32(Bar::bar1, testing::USERD_BAR1 + 0x1040, 0x1234);
  EXPECT_EQ(h.vram().read32(testing::USERD_PHYS + 0x1040), 0x1234u);
  (void)h.vram().write32(testing::USERD_PHYS + 0x2000, 77);
  EXPECT_EQ(h.gpu().bar_read32(Bar::bar1, testing::USERD_BAR1 + 0x2000), 77u);
}

TEST(Bars, UnmappedBar1ReadFaultsAndReadsAllOnes) {
  Harness h;
  EXPECT_EQ(h.gpu().bar_read32(Bar::bar1, 0x8000), ~0u);
  const uint32_t unit = uint32_t(FaultUnit::bar1);
  EXPECT_TRUE(h.rd(pfifo::FAULT_UNIT_PENDING) & (1u << unit));
  EXPECT_EQ(h.rd(pfifo::FAULT_VA_LO[unit]), 0x8000u);
  EXPECT_EQ(pfifo::FaultReason::get(h.rd(pfifo::FAULT_TYPE[unit])),
            uint32_t(FaultReason::page_not_present));  // same PDE as the USERD pages
  EXPECT_EQ(pfifo::FaultInstAddr::get(h.rd(pfifo::FAULT_INST[unit])), testing::BAR1_INST >> 12);
  EXPECT_TRUE(h.rd(pfifo::INTR) & pfifo::IntrMmuFault::mask);
  EXPECT_TRUE(h.rd(pbus::INTR) & pbus::IntrMmioFault::mask);
  EXPECT_TRUE(testing::line_becomes(h.gpu(), true));
  h.wr(pfifo::FAULT_UNIT_PENDING, 1u << unit);
  EXPECT_EQ(h.rd(pfifo::INTR) & pfifo::IntrMmuFault::mask, 0u);
}

TEST(Bars, UnmappedWriteIsDroppedAndRecordedAsWrite) {
  Harness h;
  h.gpu().bar_write32(Bar::bar1, 0x8000, 5);
  EXPECT_TRUE(pfifo::FaultWrite::get(h.rd(pfifo::FAULT_TYPE[uint32_t(FaultUnit::bar1)])));
}

TEST(Bars, Bar3TranslatesThroughItsOwnInstance) {
  Harness h;
  setup_bar3(h);
  h.gpu().bar_write32(Bar::bar3, BAR3_PAGE + 8, 0xabcd);
  EXPECT_EQ(h.vram().read32(BAR3_PHYS + 8), 0xabcdu);
}

TEST(Bars, ReadOnlyPageWriteFaultsUnitBar3) {
  Harness h;
  setup_bar3(h, fmt::pte::Flags{.read_only = true});
  h.gpu().bar_write32(Bar::bar3, BAR3_PAGE, 1);
  EXPECT_EQ(h.vram().read32(BAR3_PHYS), 0u);
  const uint32_t unit = uint32_t(FaultUnit::bar3);
  EXPECT_EQ(pfifo::FaultReason::get(h.rd(pfifo::FAULT_TYPE[unit])), uint32_t(FaultReason::page_read_only));
}

TEST(Bars, TranslateReturnsThePage) {
  Harness h;
  setup_bar3(h, fmt::pte::Flags{.read_only = true});
  auto page = h.gpu().bar_translate(Bar::bar3, BAR3_PAGE + 0x10);
  ASSERT_TRUE(page.has_value());
  EXPECT_EQ(page->bar_offset, BAR3_PAGE);
  EXPECT_EQ(page->vram_addr, BAR3_PHYS);
  EXPECT_EQ(page->bytes, fmt::SMALL_PAGE);
  EXPECT_TRUE(page->read_only);
  EXPECT_FALSE(h.gpu().bar_translate(Bar::bar3, 0x100000).has_value());
}

TEST(Bars, UntranslatedModeMapsVramDirectly) {
  Harness h;
  h.wr(pbus::BAR3_INST, 0);
  (void)h.vram().write32(0x5000, 99);
  EXPECT_EQ(h.gpu().bar_read32(Bar::bar3, 0x5000), 99u);
}

TEST(Bars, GenerationChangesWhenBarInstanceIsWritten) {
  Harness h;
  const uint64_t gen = h.gpu().bar_generation();
  setup_bar3(h);
  EXPECT_NE(h.gpu().bar_generation(), gen);
}

TEST(Bars, StaleTranslationStaysUntilInvalidate) {
  Harness h;
  setup_bar3(h);
  EXPECT_EQ(h.gpu().bar_read32(Bar::bar3, BAR3_PAGE), 0u);  // cached
  auto pd = h.tables().create_pd();                         // remap the BAR3 page elsewhere in a new PD
  ASSERT_TRUE(pd.has_value());
  ASSERT_TRUE(
      h.tables().map(*pd, BAR3_PAGE, BAR3_PHYS + fmt::SMALL_PAGE, fmt::SMALL_PAGE, fmt::PageSize::small).has_value());
  ASSERT_TRUE(h.tables().write_instance(testing::BAR3_INST, *pd, pci::BAR3_SIZE - 1).has_value());
  (void)h.vram().write32(BAR3_PHYS + fmt::SMALL_PAGE, 42);
  EXPECT_EQ(h.gpu().bar_read32(Bar::bar3, BAR3_PAGE), 0u);  // binding kept until invalidate
  h.wr(mmu::INVALIDATE, mmu::InvalidateTrigger::mask | mmu::InvalidateAllPdb::mask);
  EXPECT_EQ(h.gpu().bar_read32(Bar::bar3, BAR3_PAGE), 42u);
}

TEST(Bars, SizesMatchThePciBars) {
  Harness h;
  EXPECT_EQ(h.gpu().bar_size(Bar::bar1), pci::BAR1_SIZE);
  EXPECT_EQ(h.gpu().bar_size(Bar::bar3), pci::BAR3_SIZE);
}

}  // namespace
}  // namespace vgpu::gpu
