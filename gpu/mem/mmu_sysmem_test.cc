// SPDX-License-Identifier: GPL-2.0-or-later
// The MMU with system memory: sysmem PTEs and sysmem page tables reach
// the host's SystemMemory by DMA; addresses that are not memory fault
// dma_error (docs/spec/vgpu.md §5.4).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "gpu/mem/mmu.h"
#include "gpu/mem/testing/page_tables.h"

namespace vgpu::gpu {
namespace {

using fmt::PageSize;
using regs::FaultReason;

class MmuSysmemTest : public testing::PageTablesTest {
 protected:
  static constexpr uint64_t RAM_BYTES = 4 * MiB + 64 * KiB;  // not a whole number of big pages

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(make_tables(16 * MiB, 1 * MiB, 8 * MiB));
    auto r = MemfdRam::create(RAM_BYTES, "ram");
    ASSERT_TRUE(r.has_value());
    ram = *r;
    ctx = ce_access();
    mmu = std::make_unique<Mmu>(*vram);
    mmu->set_system_memory(ram);
  }

  void set_pte(uint64_t va, uint64_t raw, PageSize size = PageSize::small) {
    ASSERT_TRUE(builder->set_pte(ctx.pdb, va, size, raw).has_value());
  }


  std::shared_ptr<MemfdRam> ram;
  std::unique_ptr<Mmu> mmu;
  AccessContext ctx;
};

TEST_F(MmuSysmemTest, SysmemPteTranslatesToBusAddress) {
  set_pte(0x100000, fmt::pte::make_sysmem(0x3000));
  auto t = mmu->translate(ctx, 0x100010, false);
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(t->sysmem);
  EXPECT_EQ(t->phys, 0x3010u);
}

TEST_F(MmuSysmemTest, BothSysmemAperturesWork) {
  set_pte(0x100000, fmt::pte::make_sysmem(0x3000, {}, fmt::Target::sysmem_coherent));
  ASSERT_TRUE(mmu->write32(ctx, 0x100004, 0xabcd).has_value());
  uint32_t v = 0;
  std::memcpy(&v, ram->data() + 0x3004, 4);
  EXPECT_EQ(v, 0xabcdu);
  auto back = mmu->read32(ctx, 0x100004);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, 0xabcdu);
}

TEST_F(MmuSysmemTest, PageJustPastRamFaultsDmaError) {
  set_pte(0x100000, fmt::pte::make_sysmem(RAM_BYTES));
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100000, false)), FaultReason::dma_error);
}

TEST_F(MmuSysmemTest, HighestBusPageFaultsDmaError) {
  set_pte(0x100000, fmt::pte::make_sysmem(fmt::VA_LIMIT - SMALL));
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100fff, true)), FaultReason::dma_error);
}

TEST_F(MmuSysmemTest, BigPageStraddlingRamEndFaultsDmaError) {
  set_pte(0x4000000, fmt::pte::make_sysmem(4 * MiB - BIG), PageSize::big);  // wholly inside
  EXPECT_TRUE(mmu->translate(ctx, 0x4000000, false).has_value());
  // The big page at 4 MiB starts inside RAM and ends 64 KiB past it.
  set_pte(0x8000000, fmt::pte::make_sysmem(4 * MiB), PageSize::big);
  EXPECT_EQ(reason(mmu->translate(ctx, 0x8000000, false)), FaultReason::dma_error);
}

TEST_F(MmuSysmemTest, ReadOnlySysmemPageRefusesWrites) {
  set_pte(0x100000, fmt::pte::make_sysmem(0x3000, {.read_only = true}));
  EXPECT_EQ(reason(mmu->write32(ctx, 0x100000, 1)), FaultReason::page_read_only);
  EXPECT_TRUE(mmu->read32(ctx, 0x100000).has_value());
}

TEST_F(MmuSysmemTest, RangeMixingVramAndSysmemCopiesEachPart) {
  ASSERT_TRUE(builder->map(ctx.pdb, 0x100000, 10 * MiB, SMALL, PageSize::small).has_value());
  set_pte(0x101000, fmt::pte::make_sysmem(0x5000));
  std::vector<uint8_t> in(2 * SMALL);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(mmu->write(ctx, 0x100000, in.data(), in.size()).has_value());
  EXPECT_EQ(std::memcmp(vram->data() + 10 * MiB, in.data(), SMALL), 0);
  EXPECT_EQ(std::memcmp(ram->data() + 0x5000, in.data() + SMALL, SMALL), 0);
  std::vector<uint8_t> out(in.size());
  ASSERT_TRUE(mmu->read(ctx, 0x100000, out.data(), out.size()).has_value());
  EXPECT_EQ(in, out);
  auto view = mmu->map_range(ctx, 0x100000, in.size(), false);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->data(), nullptr);
  EXPECT_FALSE(view->sysmem());
  auto sys_view = mmu->map_range(ctx, 0x101000, SMALL, false);
  ASSERT_TRUE(sys_view.has_value());
  EXPECT_TRUE(sys_view->sysmem());
}

TEST_F(MmuSysmemTest, WriteCrossingIntoBadPageWritesNothing) {
  set_pte(0x100000, fmt::pte::make_sysmem(RAM_BYTES - SMALL));
  set_pte(0x101000, fmt::pte::make_sysmem(RAM_BYTES));
  std::vector<uint8_t> in(2 * SMALL, 0x5a);
  auto w = mmu->write(ctx, 0x100000, in.data(), in.size());
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().reason, FaultReason::dma_error);
  EXPECT_EQ(w.error().va, 0x101000u);
  EXPECT_EQ(ram->data()[RAM_BYTES - SMALL], std::byte{0});
}

TEST_F(MmuSysmemTest, PageTableInSysmemIsWalked) {
  // A small-page table at bus 0x10000 mapping VA 0x100000 to VRAM 10 MiB.
  const uint64_t table = 0x10000;
  const uint64_t pte = fmt::pte::make(10 * MiB);
  std::memcpy(ram->data() + table + fmt::SPT.index(0x100000) * 8, &pte, 8);
  const uint64_t pde = fmt::pde::SptTarget::make(uint64_t(fmt::PdeTarget::sysmem_noncoherent)) |
                       fmt::pde::SptAddr::make(table >> fmt::TABLE_ALIGN_SHIFT);
  vram->write64(ctx.pdb + fmt::PD.index(0x100000) * 8, pde);
  auto t = mmu->translate(ctx, 0x100000, false);
  ASSERT_TRUE(t.has_value());
  EXPECT_FALSE(t->sysmem);
  EXPECT_EQ(t->phys, 10 * MiB);
}

TEST_F(MmuSysmemTest, PageTableOutsideRamFaultsDmaError) {
  const uint64_t pde = fmt::pde::SptTarget::make(uint64_t(fmt::PdeTarget::sysmem_coherent)) |
                       fmt::pde::SptAddr::make(RAM_BYTES >> fmt::TABLE_ALIGN_SHIFT);
  vram->write64(ctx.pdb + fmt::PD.index(0x100000) * 8, pde);
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100000, false)), FaultReason::dma_error);
}

TEST_F(MmuSysmemTest, DmaAfterMemoryIsRemovedFaults) {
  auto bus = std::make_shared<BusMap>();
  ASSERT_TRUE(bus->add(1 * GiB, RAM_BYTES, ram, 0).has_value());
  mmu->set_system_memory(bus);
  set_pte(0x100000, fmt::pte::make_sysmem(1 * GiB));
  uint32_t v = 0;
  ASSERT_TRUE(mmu->read(ctx, 0x100000, &v, 4).has_value());  // cached in the TLB now
  bus->remove(1 * GiB);
  auto r = mmu->read(ctx, 0x100000, &v, 4);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, FaultReason::dma_error);
}

TEST_F(MmuSysmemTest, PhysRunsCarryTheirAperture) {
  // VA 0x100000 -> VRAM 0x5000, VA 0x101000 -> bus 0x5000: the same number.
  set_pte(0x100000, fmt::pte::make(0x5000));
  set_pte(0x101000, fmt::pte::make_sysmem(0x5000));
  std::vector<PhysRun> runs;
  ASSERT_TRUE(mmu->for_each_phys_run(ctx, 0x100000, 2 * SMALL, false, [&](const PhysRun& r) { runs.push_back(r); })
                  .has_value());
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_FALSE(runs[0].sysmem);
  EXPECT_TRUE(runs[1].sysmem);
  EXPECT_EQ(runs[0].phys, runs[1].phys);
  EXPECT_FALSE(runs_overlap({runs[0]}, {runs[1]})) << "VRAM 0x5000 and bus 0x5000 are different bytes";
}

// runs_overlap compares like with like, in any order.
TEST(RunsOverlap, VramAndBusRangesOfTheSameNumbersAreApart) {
  const PhysRun vram{0, 0x10000, 0x2000, false};
  const PhysRun bus{0, 0x11000, 0x2000, true};
  EXPECT_FALSE(runs_overlap({vram}, {bus}));
  EXPECT_FALSE(runs_overlap({bus}, {vram}));
}

TEST(RunsOverlap, SameApertureOverlapIsFoundUnsorted) {
  const PhysRun v1{0, 0x40000, 0x1000, false}, v2{0, 0x10000, 0x1000, false};
  const PhysRun b1{0, 0x20000, 0x1000, true}, b2{0, 0x8000, 0x1000, true};
  EXPECT_TRUE(runs_overlap({v1, v2}, {PhysRun{0, 0x10fff, 1, false}}));
  EXPECT_TRUE(runs_overlap({b1, v1, b2}, {PhysRun{0, 0x8800, 0x100, true}, PhysRun{0, 0x0, 0x100, false}}));
  // The bus range 0x40000 lies where VRAM run v1 does: no overlap.
  EXPECT_FALSE(runs_overlap({v1, b2}, {PhysRun{0, 0x40000, 0x1000, true}, PhysRun{0, 0x9000, 0x1000, true}}));
}

TEST(RunsOverlap, AdjacentAndEmptyListsDoNotOverlap) {
  const PhysRun a{0, 0x1000, 0x1000, false}, b{0, 0x2000, 0x1000, false};
  EXPECT_FALSE(runs_overlap({a}, {b}));
  EXPECT_FALSE(runs_overlap({b}, {a}));
  EXPECT_FALSE(runs_overlap({}, {a}));
  EXPECT_FALSE(runs_overlap({a}, {}));
}

}  // namespace
}  // namespace vgpu::gpu
