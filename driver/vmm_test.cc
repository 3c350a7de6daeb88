// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/vmm.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "driver/testing/fake_port.h"
#include "vgpu/regs.h"

namespace vgpu::driver {
namespace {

using testing::FakePort;

struct VmmTest : ::testing::Test {
  FakePort port{32 * MiB};
  InstMem mem{port};
  RangeAllocator heap{"instance heap", 1 * MiB, 8 * MiB};
  TableMemory tables{heap, nullptr};
};

TEST_F(VmmTest, SmallPageMapWritesPdeAndPte) {
  auto vmm = Vmm::create("ctx", mem, tables, fmt::VA_LIMIT, false);
  ASSERT_TRUE(vmm);
  const uint64_t va = 3 * fmt::PDE_SPAN + 5 * fmt::SMALL_PAGE;
  ASSERT_TRUE((*vmm)->map(va, 20 * MiB, 2 * fmt::SMALL_PAGE, fmt::PageSize::small));
  const uint64_t pde = port.vram64((*vmm)->pd_addr() + 3 * 8);
  ASSERT_NE(fmt::pde::spt_addr(pde), 0u);
  EXPECT_EQ(fmt::pde::lpt_addr(pde), 0u);
  EXPECT_EQ(fmt::pde::SptTarget::get(pde), uint64_t(fmt::PdeTarget::vram));
  const uint64_t pte = port.vram64(fmt::pde::spt_addr(pde) + 6 * 8);
  EXPECT_EQ(fmt::pte::Valid::get(pte), 1u);
  EXPECT_EQ(fmt::pte::addr(pte), 20 * MiB + fmt::SMALL_PAGE);
  EXPECT_EQ(fmt::pte::Aperture::get(pte), uint64_t(fmt::Target::vram));
}

TEST_F(VmmTest, BigPageMapUsesBigTable) {
  auto vmm = Vmm::create("ctx", mem, tables, fmt::VA_LIMIT, false);
  ASSERT_TRUE(vmm);
  ASSERT_TRUE((*vmm)->map(fmt::BIG_PAGE * 3, 4 * MiB, fmt::BIG_PAGE, fmt::PageSize::big));
  const uint64_t pde = port.vram64((*vmm)->pd_addr());
  ASSERT_NE(fmt::pde::lpt_addr(pde), 0u);
  EXPECT_EQ(fmt::pde::spt_addr(pde), 0u);
  EXPECT_EQ(fmt::pte::addr(port.vram64(fmt::pde::lpt_addr(pde) + 3 * 8)), 4 * MiB);
  auto pte = (*vmm)->pte(fmt::BIG_PAGE * 3, fmt::PageSize::big);
  ASSERT_TRUE(pte);
  EXPECT_EQ(fmt::pte::addr(*pte), 4 * MiB);
}

TEST_F(VmmTest, ReadOnlyFlagReachesPte) {
  auto vmm = Vmm::create("ctx", mem, tables, fmt::VA_LIMIT, false);
  ASSERT_TRUE(vmm);
  ASSERT_TRUE((*vmm)->map(0, 2 * MiB, fmt::SMALL_PAGE, fmt::PageSize::small, {.read_only = true}));
  EXPECT_EQ(fmt::pte::ReadOnly::get(*(*vmm)->pte(0, fmt::PageSize::small)), 1u);
}

TEST_F(VmmTest, UnmapClearsPte) {
  auto vmm = Vmm::create("ctx", mem, tables, fmt::VA_LIMIT, false);
  ASSERT_TRUE(vmm);
  ASSERT_TRUE((*vmm)->map(0, 2 * MiB, 4 * fmt::SMALL_PAGE, fmt::PageSize::small));
  ASSERT_TRUE((*vmm)->unmap(fmt::SMALL_PAGE, fmt::SMALL_PAGE, fmt::PageSize::small));
  EXPECT_EQ(*(*vmm)->pte(fmt::SMALL_PAGE, fmt::PageSize::small), 0u);
  EXPECT_EQ(fmt::pte::Valid::get(*(*vmm)->pte(2 * fmt::SMALL_PAGE, fmt::PageSize::small)), 1u);
}

TEST_F(VmmTest, MisalignedOrOutOfRangeMapIsInvalid) {
  auto vmm = Vmm::create("bar3", mem, tables, 16 * MiB, true);
  ASSERT_TRUE(vmm);
  EXPECT_EQ((*vmm)->map(0x800, 0, fmt::SMALL_PAGE, fmt::PageSize::small).error().code, Errc::invalid_argument);
  EXPECT_EQ((*vmm)->map(0, 0x800, fmt::SMALL_PAGE, fmt::PageSize::small).error().code, Errc::invalid_argument);
  auto beyond = (*vmm)->map(16 * MiB, 0, fmt::SMALL_PAGE, fmt::PageSize::small);
  ASSERT_FALSE(beyond);
  EXPECT_NE(beyond.error().message.find("bar3"), std::string::npos);
}

TEST_F(VmmTest, JoinWritesPdbAndLimit) {
  auto vmm = Vmm::create("bar1", mem, tables, 256 * MiB, true);
  ASSERT_TRUE(vmm);
  const uint64_t inst = 2 * MiB;
  (*vmm)->join(inst);
  EXPECT_EQ(port.vram32(inst + regs::inst::PDB_LO) & regs::inst::PdbAddrLo::mask, lo32((*vmm)->pd_addr()));
  EXPECT_EQ(port.vram32(inst + regs::inst::PDB_HI), 0u);
  EXPECT_EQ(port.vram64(inst + regs::inst::LIMIT_LO), 256 * MiB - 1);
}

TEST_F(VmmTest, TablesExhaustedIsOutOfMemory) {
  RangeAllocator tiny("instance heap", 1 * MiB, 64 * KiB);
  TableMemory small_tables(tiny, nullptr);
  auto vmm = Vmm::create("ctx", mem, small_tables, fmt::VA_LIMIT, false);
  ASSERT_TRUE(vmm);  // the page directory fits
  auto r = (*vmm)->map(0, 0, fmt::SMALL_PAGE, fmt::PageSize::small);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::out_of_memory);
  EXPECT_NE(r.error().message.find("spt"), std::string::npos);
}

TEST_F(VmmTest, DestroyReturnsTables) {
  const uint64_t before = heap.free_bytes();
  {
    auto vmm = Vmm::create("ctx", mem, tables, fmt::VA_LIMIT, false);
    ASSERT_TRUE(vmm);
    ASSERT_TRUE((*vmm)->map(0, 0, fmt::BIG_PAGE, fmt::PageSize::big));
    ASSERT_TRUE((*vmm)->map(0, 0, fmt::SMALL_PAGE, fmt::PageSize::small));
    EXPECT_LT(heap.free_bytes(), before);
  }
  EXPECT_EQ(heap.free_bytes(), before);
}

TEST_F(VmmTest, FlushIssuesBarFlushThenInvalidateSequence) {
  auto vmm = Vmm::create("bar1", mem, tables, 256 * MiB, true);
  ASSERT_TRUE(vmm);
  port.writes.clear();
  ASSERT_TRUE((*vmm)->flush(port));
  ASSERT_EQ(port.writes.size(), 3u);
  EXPECT_EQ(port.writes[0].first, regs::pflush::FLUSH.offset);
  EXPECT_EQ(port.writes[1].first, regs::mmu::INVALIDATE_PDB.offset);
  EXPECT_EQ(uint64_t{regs::mmu::InvalidatePdbAddr::get(port.writes[1].second)} << 12, (*vmm)->pd_addr());
  EXPECT_EQ(port.writes[2].first, regs::mmu::INVALIDATE.offset);
  const uint32_t trig = port.writes[2].second;
  EXPECT_TRUE(trig & regs::mmu::InvalidateTrigger::mask);
  EXPECT_TRUE(trig & regs::mmu::InvalidatePageAll::mask);
  EXPECT_TRUE(trig & regs::mmu::InvalidateHubOnly::mask);  // a BAR address space
}

TEST_F(VmmTest, FlushTimesOutWhenNoInvalidateSlot) {
  auto vmm = Vmm::create("ctx", mem, tables, fmt::VA_LIMIT, false);
  ASSERT_TRUE(vmm);
  port.regs[regs::mmu::CTRL.offset] = 0;  // no free slot, never done
  auto r = (*vmm)->flush(port, 1'000'000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::timeout);
}

TEST(InstMem, PraminWindowMovesOnlyAcrossMegabytes) {
  FakePort port(8 * MiB);
  InstMem mem(port);
  mem.write32(3 * MiB + 0x10, 0x1234);
  mem.write32(3 * MiB + 0x20, 0x5678);
  mem.write32(5 * MiB, 0x9abc);
  EXPECT_EQ(port.vram32(3 * MiB + 0x10), 0x1234u);
  EXPECT_EQ(port.vram32(5 * MiB), 0x9abcu);
  EXPECT_EQ(mem.stats().window_moves, 2u);
  EXPECT_EQ(mem.read32(3 * MiB + 0x20), 0x5678u);
  EXPECT_EQ(mem.stats().window_moves, 3u);
}

}  // namespace
}  // namespace vgpu::driver
