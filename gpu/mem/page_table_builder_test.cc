// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/mem/page_table_builder.h"

#include <gtest/gtest.h>

#include "gpu/mem/mmu.h"
#include "gpu/mem/testing/page_tables.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {
namespace {

using fmt::PageSize;

class PageTableBuilderTest : public testing::PageTablesTest {
 protected:
  static constexpr uint64_t TABLES = 64 * KiB;
  static constexpr uint64_t TABLES_END = 2 * MiB;
  static constexpr uint64_t DATA = 2 * MiB;

  void SetUp() override { make_tables(4 * MiB, TABLES, TABLES_END); }

  uint64_t pde(uint64_t va) const { return vram->read64(pd + fmt::PD.index(va) * fmt::PD.entry_bytes); }
};

TEST_F(PageTableBuilderTest, CreatePdIsAlignedZeroedAndInRegion) {
  EXPECT_EQ(pd % fmt::TABLE_ALIGN, 0u);
  EXPECT_GE(pd, TABLES);
  EXPECT_EQ(builder->next_free(), pd + fmt::PD.table_bytes());
  EXPECT_EQ(pde(0), 0u);
}

TEST_F(PageTableBuilderTest, AllocationZeroesOldContents) {
  vram->write64(builder->next_free(), 0x1234);
  auto a = builder->allocate(fmt::TABLE_ALIGN);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(vram->read64(*a), 0u);
}

TEST_F(PageTableBuilderTest, RegionExhaustionIsAnError) {
  auto a = builder->allocate(TABLES_END);
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().code, Errc::out_of_memory);
}

TEST_F(PageTableBuilderTest, SmallMapWritesPdeAndPtes) {
  ASSERT_TRUE(
      builder->map(pd, 0x10000000, DATA, 2 * fmt::SMALL_PAGE, PageSize::small, {.read_only = true}).has_value());
  const uint64_t e = pde(0x10000000);
  EXPECT_EQ(fmt::pde::SptTarget::get(e), static_cast<uint64_t>(fmt::PdeTarget::vram));
  EXPECT_EQ(fmt::pde::LptTarget::get(e), static_cast<uint64_t>(fmt::PdeTarget::none));
  const uint64_t spt = fmt::pde::spt_addr(e);
  EXPECT_EQ(spt % fmt::TABLE_ALIGN, 0u);
  const uint64_t pte1 = vram->read64(spt + fmt::SPT.index(0x10001000) * fmt::SPT.entry_bytes);
  EXPECT_EQ(pte1, fmt::pte::make(DATA + fmt::SMALL_PAGE, {.read_only = true}));
}

TEST_F(PageTableBuilderTest, BigMapUsesBigTableAndKeepsSmallTable) {
  ASSERT_TRUE(builder->map(pd, 0, DATA, fmt::SMALL_PAGE, PageSize::small).has_value());
  const uint64_t spt = fmt::pde::spt_addr(pde(0));
  ASSERT_TRUE(builder->map(pd, fmt::BIG_PAGE, DATA, fmt::BIG_PAGE, PageSize::big).has_value());
  const uint64_t e = pde(0);
  EXPECT_EQ(fmt::pde::spt_addr(e), spt);
  EXPECT_EQ(fmt::pde::LptTarget::get(e), static_cast<uint64_t>(fmt::PdeTarget::vram));
  const uint64_t lpt = fmt::pde::lpt_addr(e);
  EXPECT_EQ(vram->read64(lpt + fmt::LPT.index(fmt::BIG_PAGE) * fmt::LPT.entry_bytes), fmt::pte::make(DATA));
}

TEST_F(PageTableBuilderTest, TablesAreAllocatedOncePerPde) {
  ASSERT_TRUE(builder->map(pd, 0, DATA, fmt::SMALL_PAGE, PageSize::small).has_value());
  const uint64_t used = builder->next_free();
  ASSERT_TRUE(builder->map(pd, 0x7000, DATA, fmt::SMALL_PAGE, PageSize::small).has_value());
  EXPECT_EQ(builder->next_free(), used);
}

TEST_F(PageTableBuilderTest, MapRejectsMisalignedArguments) {
  EXPECT_FALSE(builder->map(pd, 0x800, DATA, fmt::SMALL_PAGE, PageSize::small).has_value());
  EXPECT_FALSE(builder->map(pd, 0, DATA + 0x800, fmt::SMALL_PAGE, PageSize::small).has_value());
  EXPECT_FALSE(builder->map(pd, 0, DATA, fmt::SMALL_PAGE, PageSize::big).has_value());
  EXPECT_FALSE(
      builder->map(pd, fmt::VA_LIMIT - fmt::SMALL_PAGE, DATA, 2 * fmt::SMALL_PAGE, PageSize::small).has_value());
  EXPECT_FALSE(builder->map(pd + 8, 0, DATA, fmt::SMALL_PAGE, PageSize::small).has_value());
}

TEST_F(PageTableBuilderTest, UnmapClearsPtesOnly) {
  ASSERT_TRUE(builder->map(pd, 0, DATA, 2 * fmt::SMALL_PAGE, PageSize::small).has_value());
  ASSERT_TRUE(builder->unmap(pd, 0, fmt::SMALL_PAGE, PageSize::small).has_value());
  const uint64_t spt = fmt::pde::spt_addr(pde(0));
  EXPECT_EQ(vram->read64(spt), 0u);
  EXPECT_NE(vram->read64(spt + fmt::SPT.entry_bytes), 0u);
  EXPECT_TRUE(builder->unmap(pd, 0x40000000, fmt::SMALL_PAGE, PageSize::small).has_value());  // nothing there
}

TEST_F(PageTableBuilderTest, WriteInstanceEncodesPdbAndLimit) {
  auto inst = builder->allocate(regs::inst::SIZE, regs::inst::ALIGN);
  ASSERT_TRUE(inst.has_value());
  ASSERT_TRUE(builder->write_instance(*inst, pd, fmt::VA_LIMIT - 1).has_value());
  using namespace regs::inst;
  const uint32_t lo = vram->read32(*inst + PDB_LO);
  const uint32_t hi = vram->read32(*inst + PDB_HI);
  EXPECT_EQ(PdbTarget::get(lo), static_cast<uint32_t>(fmt::Target::vram));
  EXPECT_EQ(join64(PdbAddrHi::get(hi), PdbAddrLo::get(lo) << PdbAddrLo::lo), pd);
  EXPECT_EQ(join64(vram->read32(*inst + LIMIT_HI), vram->read32(*inst + LIMIT_LO)), fmt::VA_LIMIT - 1);
}

TEST_F(PageTableBuilderTest, WriteInstanceRejectsMisalignedBlock) {
  EXPECT_FALSE(builder->write_instance(0x100, pd, 0).has_value());
  EXPECT_FALSE(builder->write_instance(vram->size(), pd, 0).has_value());
}

TEST_F(PageTableBuilderTest, MmuWalksWhatTheBuilderWrote) {
  ASSERT_TRUE(builder->map(pd, 0x20000000, DATA, fmt::BIG_PAGE, PageSize::big).has_value());
  ASSERT_TRUE(
      builder->map(pd, 0x20000000 + fmt::BIG_PAGE, DATA + fmt::BIG_PAGE, fmt::SMALL_PAGE, PageSize::small).has_value());
  Mmu mmu(*vram);
  AccessContext ctx{.pdb = pd, .limit = fmt::VA_LIMIT - 1};
  EXPECT_EQ(mmu.translate(ctx, 0x20000000 + 0x10, false)->phys, DATA + 0x10);
  EXPECT_EQ(mmu.translate(ctx, 0x20000000 + fmt::BIG_PAGE + 0x10, false)->phys, DATA + fmt::BIG_PAGE + 0x10);
}

}  // namespace
}  // namespace vgpu::gpu
