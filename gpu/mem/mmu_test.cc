// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/mem/mmu.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "gpu/mem/testing/page_tables.h"

namespace vgpu::gpu {
namespace {

using fmt::PageSize;
using regs::FaultReason;

class MmuTest : public testing::PageTablesTest {
 protected:
  static constexpr uint64_t VRAM_BYTES = 16 * MiB;
  static constexpr uint64_t TABLES = 1 * MiB;  // page tables live in [1, 8) MiB
  static constexpr uint64_t TABLES_END = 8 * MiB;
  static constexpr uint64_t DATA = 8 * MiB;  // data pages from here

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(make_tables(VRAM_BYTES, TABLES, TABLES_END));
    ctx = ce_access();
    ctx.inst = 0x5000;
    ctx.chid = 7;
    mmu = std::make_unique<Mmu>(*vram);
  }

  void map(uint64_t va, uint64_t phys, uint64_t bytes, PageSize size = PageSize::small, fmt::pte::Flags flags = {}) {
    auto ok = builder->map(pd, va, phys, bytes, size, flags);
    ASSERT_TRUE(ok.has_value()) << ok.error().what();
  }

  // A second address space (pd2, ctx2): 0x100000 maps to DATA in the first
  // and to DATA + SMALL in the second, both walked into the TLB.
  void two_spaces_cached() {
    auto p2 = builder->create_pd();
    ASSERT_TRUE(p2.has_value());
    pd2 = *p2;
    ctx2 = ctx;
    ctx2.pdb = pd2;
    map(0x100000, DATA, SMALL);
    ASSERT_TRUE(builder->map(pd2, 0x100000, DATA + SMALL, SMALL, PageSize::small).has_value());
    ASSERT_EQ(mmu->translate(ctx, 0x100000, false)->phys, DATA);
    ASSERT_EQ(mmu->translate(ctx2, 0x100000, false)->phys, DATA + SMALL);
    // Then remapped behind the TLB: DATA + 2 SMALL and DATA + 3 SMALL.
    map(0x100000, DATA + 2 * SMALL, SMALL);
    ASSERT_TRUE(builder->map(pd2, 0x100000, DATA + 3 * SMALL, SMALL, PageSize::small).has_value());
  }

  std::unique_ptr<Mmu> mmu;
  AccessContext ctx;
  uint64_t pd2 = 0;  // two_spaces_cached's
  AccessContext ctx2;
};

// ---------------------------------------------------------------- translation

TEST_F(MmuTest, SmallPageTranslatesWithOffset) {
  map(0x100000, DATA, SMALL);
  auto t = mmu->translate(ctx, 0x100123, false);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->phys, DATA + 0x123);
  EXPECT_EQ(t->page_bytes, SMALL);
  EXPECT_FALSE(t->read_only);
}

TEST_F(MmuTest, BigPageTranslatesWithOffset) {
  map(0x4000000, DATA + BIG, BIG, PageSize::big);
  auto t = mmu->translate(ctx, 0x4000000 + 0x1f005, false);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->phys, DATA + BIG + 0x1f005);
  EXPECT_EQ(t->page_bytes, BIG);
}

TEST_F(MmuTest, PagesInHighPdeTranslate) {
  const uint64_t va = fmt::VA_LIMIT - fmt::PDE_SPAN + 3 * SMALL;
  map(va, DATA + 5 * SMALL, SMALL);
  auto t = mmu->translate(ctx, va + 8, true);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->phys, DATA + 5 * SMALL + 8);
}

TEST_F(MmuTest, ValidBigPteWinsOverSmallTable) {
  map(0x8000000, DATA, SMALL);
  map(0x8000000, DATA + BIG, BIG, PageSize::big);
  auto t = mmu->translate(ctx, 0x8000010, false);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->phys, DATA + BIG + 0x10);
  EXPECT_EQ(t->page_bytes, BIG);
}

TEST_F(MmuTest, SmallTableUsedWhereBigPteInvalid) {
  map(0x8000000, DATA + BIG, BIG, PageSize::big);
  map(0x8000000 + BIG, DATA + 3 * SMALL, SMALL);
  auto t = mmu->translate(ctx, 0x8000000 + BIG + 4, false);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->phys, DATA + 3 * SMALL + 4);
  EXPECT_EQ(t->page_bytes, SMALL);
}

TEST_F(MmuTest, ReadOnlyPageReadsAndReportsReadOnly) {
  map(0x100000, DATA, SMALL, PageSize::small, {.read_only = true});
  auto t = mmu->translate(ctx, 0x100000, false);
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(t->read_only);
}

TEST_F(MmuTest, BlockLinearKindIsSupported) {
  map(0x100000, DATA, SMALL, PageSize::small, {.kind = fmt::pte::KIND_GENERIC_BLOCKLINEAR});
  EXPECT_TRUE(mmu->translate(ctx, 0x100000, true).has_value());
}

TEST_F(MmuTest, PrivPageAllowedForPrivClient) {
  map(0x100000, DATA, SMALL, PageSize::small, {.priv = true});
  ctx.priv = true;
  EXPECT_TRUE(mmu->translate(ctx, 0x100000, true).has_value());
}

// ---------------------------------------------------------------- faults

TEST_F(MmuTest, FaultCarriesAccessDetails) {
  auto t = mmu->translate(ctx, 0x123456, true);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().va, 0x123456u);
  EXPECT_TRUE(t.error().write);
  EXPECT_EQ(t.error().unit, regs::FaultUnit::ce0);
  EXPECT_EQ(t.error().inst, 0x5000u);
  EXPECT_EQ(t.error().chid, 7u);
}

TEST_F(MmuTest, VaAboveLimitFaultsVmLimitExceeded) {
  map(0x100000, DATA, SMALL);
  ctx.limit = 0x100fff;
  EXPECT_TRUE(mmu->translate(ctx, 0x100fff, false).has_value());
  ctx.limit = 0x100ffe;
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100fff, false)), FaultReason::vm_limit_exceeded);
}

TEST_F(MmuTest, LimitIsCheckedBeforeTheTlb) {
  map(0x100000, DATA, SMALL);
  ASSERT_TRUE(mmu->translate(ctx, 0x100800, false).has_value());
  ctx.limit = 0x1007ff;
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100800, false)), FaultReason::vm_limit_exceeded);
}

TEST_F(MmuTest, VaBeyond40BitsFaultsVmLimitExceededEvenWithLargeLimit) {
  ctx.limit = ~uint64_t{0};
  EXPECT_EQ(reason(mmu->translate(ctx, fmt::VA_LIMIT, false)), FaultReason::vm_limit_exceeded);
}

TEST_F(MmuTest, EmptyPdeFaultsPtNotPresent) {
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100000, false)), FaultReason::pt_not_present);
}

TEST_F(MmuTest, InvalidPteFaultsPageNotPresent) {
  map(0x100000, DATA, SMALL);
  EXPECT_EQ(reason(mmu->translate(ctx, 0x101000, false)), FaultReason::page_not_present);
}

TEST_F(MmuTest, InvalidBigAndSmallPteFaultsPageNotPresent) {
  map(0x100000, DATA, SMALL);
  map(0x100000 + 4 * BIG, DATA, BIG, PageSize::big);
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100000 + BIG, false)), FaultReason::page_not_present);
}

TEST_F(MmuTest, WriteToReadOnlyFaultsPageReadOnly) {
  map(0x100000, DATA, SMALL, PageSize::small, {.read_only = true});
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100004, true)), FaultReason::page_read_only);
}

TEST_F(MmuTest, ReadOnlyIsCheckedOnTlbHits) {
  map(0x100000, DATA, SMALL, PageSize::small, {.read_only = true});
  ASSERT_TRUE(mmu->translate(ctx, 0x100000, false).has_value());
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100000, true)), FaultReason::page_read_only);
  EXPECT_EQ(mmu->stats().hits, 1u);
}

TEST_F(MmuTest, PrivPageFaultsPageSystemOnlyForUserClient) {
  map(0x100000, DATA, SMALL, PageSize::small, {.priv = true});
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100000, false)), FaultReason::page_system_only);
}

TEST_F(MmuTest, UnsupportedKindFaultsInvalidStorageType) {
  constexpr uint64_t KIND_Z16 = 0x01;  // a Fermi depth kind vgpu does not implement
  map(0x100000, DATA, SMALL, PageSize::small, {.kind = KIND_Z16});
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100000, false)), FaultReason::invalid_storage_type);
}

// With no system memory (the default), every sysmem PTE or table is a DMA error.
TEST_F(MmuTest, SysmemPteWithoutSystemMemoryFaultsDmaError) {
  uint64_t raw = fmt::pte::Aperture::set(fmt::pte::make(DATA), static_cast<uint64_t>(fmt::Target::sysmem_coherent));
  ASSERT_TRUE(builder->set_pte(pd, 0x100000, PageSize::small, raw).has_value());
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100000, false)), FaultReason::dma_error);
}

TEST_F(MmuTest, SysmemPdeTargetWithoutSystemMemoryFaultsDmaError) {
  map(0x100000, DATA, SMALL);
  const uint64_t pde_addr = pd + fmt::PD.index(0x100000) * fmt::PD.entry_bytes;
  uint64_t pde = vram->read64(pde_addr);
  vram->write64(pde_addr, fmt::pde::SptTarget::set(pde, static_cast<uint64_t>(fmt::PdeTarget::sysmem_noncoherent)));
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100000, false)), FaultReason::dma_error);
}

TEST_F(MmuTest, PageBeyondVramFaultsOutOfVram) {
  map(0x100000, VRAM_BYTES, SMALL);
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100000, false)), FaultReason::out_of_vram);
}

TEST_F(MmuTest, BigPageCrossingVramEndFaultsOutOfVram) {
  map(0x4000000, VRAM_BYTES - BIG, BIG, PageSize::big);
  EXPECT_TRUE(mmu->translate(ctx, 0x4000000, false).has_value());
  map(0x4000000 + BIG, VRAM_BYTES, BIG, PageSize::big);
  EXPECT_EQ(reason(mmu->translate(ctx, 0x4000000 + BIG, false)), FaultReason::out_of_vram);
}

TEST_F(MmuTest, TableBeyondVramFaultsOutOfVram) {
  const uint64_t pde_addr = pd + fmt::PD.index(0x100000) * fmt::PD.entry_bytes;
  vram->write64(pde_addr, fmt::pde::make(VRAM_BYTES, 0));
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100000, false)), FaultReason::out_of_vram);
}

TEST_F(MmuTest, PdbBeyondVramFaultsOutOfVram) {
  ctx.pdb = VRAM_BYTES;
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100000, false)), FaultReason::out_of_vram);
  ctx.pdb = ~uint64_t{0} & ~(fmt::TABLE_ALIGN - 1);
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100000, false)), FaultReason::out_of_vram);
}

TEST_F(MmuTest, MisalignedBigPageFaultsPageNotPresent) {
  ASSERT_TRUE(builder->set_pte(pd, 0x4000000, PageSize::big, fmt::pte::make(DATA + SMALL)).has_value());
  EXPECT_EQ(reason(mmu->translate(ctx, 0x4000000, false)), FaultReason::page_not_present);
}

// ---------------------------------------------------------------- TLB

TEST_F(MmuTest, TlbKeepsStaleTranslationUntilInvalidate) {
  map(0x100000, DATA, SMALL);
  ASSERT_EQ(mmu->translate(ctx, 0x100000, false)->phys, DATA);
  map(0x100000, DATA + SMALL, SMALL);
  EXPECT_EQ(mmu->translate(ctx, 0x100000, false)->phys, DATA);  // stale, as hardware
  mmu->invalidate(pd);
  EXPECT_EQ(mmu->translate(ctx, 0x100000, false)->phys, DATA + SMALL);
}

TEST_F(MmuTest, TlbKeepsUnmappedPageUntilInvalidate) {
  map(0x100000, DATA, SMALL);
  ASSERT_TRUE(mmu->translate(ctx, 0x100000, false).has_value());
  ASSERT_TRUE(builder->unmap(pd, 0x100000, SMALL, PageSize::small).has_value());
  EXPECT_TRUE(mmu->translate(ctx, 0x100000, false).has_value());
  mmu->invalidate(pd);
  EXPECT_EQ(reason(mmu->translate(ctx, 0x100000, false)), FaultReason::page_not_present);
}

TEST_F(MmuTest, InvalidateOnePdbKeepsOtherAddressSpaces) {
  ASSERT_NO_FATAL_FAILURE(two_spaces_cached());
  mmu->invalidate(pd2);
  EXPECT_EQ(mmu->translate(ctx, 0x100000, false)->phys, DATA);               // still stale
  EXPECT_EQ(mmu->translate(ctx2, 0x100000, false)->phys, DATA + 3 * SMALL);  // refreshed
}

TEST_F(MmuTest, InvalidateAllRefreshesEveryAddressSpace) {
  ASSERT_NO_FATAL_FAILURE(two_spaces_cached());
  mmu->invalidate_all();
  EXPECT_EQ(mmu->translate(ctx, 0x100000, false)->phys, DATA + 2 * SMALL);
  EXPECT_EQ(mmu->translate(ctx2, 0x100000, false)->phys, DATA + 3 * SMALL);
}

TEST_F(MmuTest, StatsCountHitsMissesAndInvalidates) {
  map(0x100000, DATA, 2 * SMALL);
  ASSERT_TRUE(mmu->translate(ctx, 0x100000, false).has_value());
  ASSERT_TRUE(mmu->translate(ctx, 0x100004, false).has_value());
  ASSERT_TRUE(mmu->translate(ctx, 0x101000, false).has_value());
  mmu->invalidate(pd);
  mmu->invalidate_all();
  TlbStats s = mmu->stats();
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.invalidates, 2u);
  EXPECT_EQ(s.evictions, 0u);
}

TEST_F(MmuTest, FaultsAreNotCached) {
  EXPECT_FALSE(mmu->translate(ctx, 0x100000, false).has_value());
  map(0x100000, DATA, SMALL);
  EXPECT_TRUE(mmu->translate(ctx, 0x100000, false).has_value());
}

TEST_F(MmuTest, TlbDropsEverythingWhenFull) {
  // Each distinct page of one big mapping is one TLB entry.
  const uint64_t pages = Mmu::TLB_CAPACITY + 1;
  const uint64_t bytes = align_up(pages * SMALL, BIG);
  map(0x40000000, DATA, BIG, PageSize::big);
  for (uint64_t va = 0x40000000 + BIG; va < 0x40000000 + bytes; va += BIG)
    map(va, DATA, BIG, PageSize::big);  // alias one physical big page
  for (uint64_t p = 0; p < pages; ++p) ASSERT_TRUE(mmu->translate(ctx, 0x40000000 + p * SMALL, false).has_value());
  EXPECT_EQ(mmu->stats().evictions, 1u);
}

// ---------------------------------------------------------------- ranges

TEST_F(MmuTest, WriteAndReadCrossPageBoundary) {
  map(0x100000, DATA + 4 * SMALL, SMALL);
  map(0x101000, DATA + 1 * SMALL, SMALL);  // not contiguous with the first
  std::array<uint8_t, 16> in{}, out{};
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i + 1);
  ASSERT_TRUE(mmu->write(ctx, 0x101000 - 8, in.data(), in.size()).has_value());
  EXPECT_EQ(std::to_integer<uint8_t>(vram->data()[DATA + 5 * SMALL - 8]), 1);
  EXPECT_EQ(std::to_integer<uint8_t>(vram->data()[DATA + 1 * SMALL]), 9);
  ASSERT_TRUE(mmu->read(ctx, 0x101000 - 8, out.data(), out.size()).has_value());
  EXPECT_EQ(in, out);
}

TEST_F(MmuTest, Word32CrossesPageBoundary) {
  map(0x100000, DATA + 4 * SMALL, SMALL);
  map(0x101000, DATA + 1 * SMALL, SMALL);
  ASSERT_TRUE(mmu->write32(ctx, 0x101000 - 2, 0xa1b2c3d4).has_value());
  EXPECT_EQ(vram->read32(DATA + 5 * SMALL - 4) >> 16, 0xc3d4u);
  EXPECT_EQ(vram->read32(DATA + 1 * SMALL) & 0xffff, 0xa1b2u);
  auto v = mmu->read32(ctx, 0x101000 - 2);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(*v, 0xa1b2c3d4u);
}

TEST_F(MmuTest, AlignedWord32UsesVram) {
  map(0x100000, DATA, SMALL);
  ASSERT_TRUE(mmu->write32(ctx, 0x100010, 0x12345678).has_value());
  EXPECT_EQ(vram->read32(DATA + 0x10), 0x12345678u);
  EXPECT_EQ(*mmu->read32(ctx, 0x100010), 0x12345678u);
}

TEST_F(MmuTest, WriteFaultingMidwayWritesNothing) {
  map(0x100000, DATA, SMALL);
  map(0x101000, DATA + SMALL, SMALL, PageSize::small, {.read_only = true});
  std::vector<uint8_t> in(2 * SMALL, 0xee);
  auto r = mmu->write(ctx, 0x100000, in.data(), in.size());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, FaultReason::page_read_only);
  EXPECT_EQ(r.error().va, 0x101000u);
  EXPECT_EQ(vram->read32(DATA), 0u);
}

TEST_F(MmuTest, RangeEndingPastLimitFaultsAtFirstByteBeyond) {
  map(0x100000, DATA, SMALL);
  ctx.limit = 0x1007ff;
  std::array<uint8_t, 0x100> buf{};
  auto r = mmu->read(ctx, 0x100780, buf.data(), buf.size());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, FaultReason::vm_limit_exceeded);
  EXPECT_EQ(r.error().va, 0x100800u);
}

TEST_F(MmuTest, ForEachRunCoalescesContiguousPages) {
  map(0x100000, DATA + 0 * SMALL, 2 * SMALL);  // pages 0,1 -> frames 0,1
  map(0x102000, DATA + 8 * SMALL, 2 * SMALL);  // pages 2,3 -> frames 8,9
  std::vector<PhysRun> runs;
  auto r = mmu->for_each_run(ctx, 0x100010, 4 * SMALL - 0x20, false, [&](uint64_t va, uint64_t phys, uint64_t bytes) {
    runs.push_back({va, phys, bytes});
  });
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].va, 0x100010u);
  EXPECT_EQ(runs[0].phys, DATA + 0x10);
  EXPECT_EQ(runs[0].bytes, 2 * SMALL - 0x10);
  EXPECT_EQ(runs[1].va, 0x102000u);
  EXPECT_EQ(runs[1].phys, DATA + 8 * SMALL);
  EXPECT_EQ(runs[1].bytes, 2 * SMALL - 0x10);
}

TEST_F(MmuTest, ForEachRunCoalescesAcrossPageSizes) {
  map(0x4000000, DATA, BIG, PageSize::big);
  map(0x4000000 + BIG, DATA + BIG, SMALL);  // small page right after the big one, physically too
  int calls = 0;
  auto r = mmu->for_each_run(ctx, 0x4000000, BIG + SMALL, false, [&](uint64_t, uint64_t phys, uint64_t bytes) {
    ++calls;
    EXPECT_EQ(phys, DATA);
    EXPECT_EQ(bytes, BIG + SMALL);
  });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(calls, 1);
}

TEST_F(MmuTest, ForEachRunFaultCallsNothing) {
  map(0x100000, DATA, SMALL);
  int calls = 0;
  auto r = mmu->for_each_run(ctx, 0x100000, 2 * SMALL, false, [&](uint64_t, uint64_t, uint64_t) { ++calls; });
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().va, 0x101000u);
  EXPECT_EQ(calls, 0);
}

TEST_F(MmuTest, MapRangeOfContiguousPagesPointsIntoVram) {
  map(0x100000, DATA, 3 * SMALL);
  auto v = mmu->map_range(ctx, 0x100100, 2 * SMALL, true);
  ASSERT_TRUE(v.has_value());
  EXPECT_FALSE(v->windowed());
  EXPECT_EQ(v->data(), vram->data() + DATA + 0x100);
  EXPECT_EQ(v->size(), 2 * SMALL);
}

TEST_F(MmuTest, MapRangeWindowMakesScatteredPagesContiguous) {
  map(0x100000, DATA + 6 * SMALL, SMALL);
  map(0x101000, DATA + 2 * SMALL, SMALL);
  map(0x102000, DATA + 9 * SMALL, SMALL);
  vram->write32(DATA + 2 * SMALL + 0x40, 0x5eed);
  auto v = mmu->map_range(ctx, 0x100ff0, 2 * SMALL, true);  // not page aligned; touches 3 pages
  ASSERT_TRUE(v.has_value());
  ASSERT_TRUE(v->windowed());
  ASSERT_NE(v->data(), nullptr);
  EXPECT_EQ(v->size(), 2 * SMALL);

  uint32_t word = 0;
  std::memcpy(&word, v->data() + 0x10 + 0x40, sizeof word);
  EXPECT_EQ(word, 0x5eedu);                 // VRAM visible through the view
  std::memset(v->data(), 0x7a, v->size());  // view writes reach VRAM
  EXPECT_EQ(vram->read32(DATA + 7 * SMALL - 0x10), 0x7a7a7a7au);
  EXPECT_EQ(vram->read32(DATA + 6 * SMALL - 4), 0u);
  EXPECT_EQ(vram->read32(DATA + 3 * SMALL - 4), 0x7a7a7a7au);
  EXPECT_EQ(vram->read32(DATA + 9 * SMALL + 0xfec), 0x7a7a7a7au);
  EXPECT_EQ(vram->read32(DATA + 9 * SMALL + 0xff0), 0u);
}

TEST_F(MmuTest, HostViewUnmapsWindowOnDestruction) {
  map(0x100000, DATA + 6 * SMALL, SMALL);
  map(0x101000, DATA + 2 * SMALL, SMALL);
  void* page = nullptr;
  {
    auto v = mmu->map_range(ctx, 0x100000, 2 * SMALL, false);
    ASSERT_TRUE(v.has_value() && v->windowed());
    HostView moved = std::move(*v);
    EXPECT_EQ(v->data(), nullptr);
    page = moved.data();
    EXPECT_EQ(msync(page, SMALL, MS_ASYNC), 0);
  }
  EXPECT_EQ(msync(page, SMALL, MS_ASYNC), -1);
  EXPECT_EQ(errno, ENOMEM);
}

TEST_F(MmuTest, MapRangeFaultsLikeAccess) {
  map(0x100000, DATA, SMALL, PageSize::small, {.read_only = true});
  EXPECT_EQ(reason(mmu->map_range(ctx, 0x100000, SMALL, true)), FaultReason::page_read_only);
  EXPECT_TRUE(mmu->map_range(ctx, 0x100000, SMALL, false).has_value());
}

// ---------------------------------------------------------------- threads

TEST_F(MmuTest, ConcurrentTranslateFromSeveralThreads) {
  constexpr uint64_t PAGES = 256;
  for (uint64_t p = 0; p < PAGES; ++p) map(0x200000 + p * SMALL, DATA + ((p * 37) % PAGES) * SMALL, SMALL);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (uint64_t p = 0; p < PAGES; ++p) {
          auto tr = mmu->translate(ctx, 0x200000 + p * SMALL + 4, false);
          if (!tr || tr->phys != DATA + ((p * 37) % PAGES) * SMALL + 4) wrong.fetch_add(1);
        }
        if (t == 0) mmu->invalidate_all();
        if (t == 1) mmu->invalidate(pd);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  TlbStats s = mmu->stats();
  EXPECT_EQ(s.hits + s.misses, 4 * 20 * PAGES);
  EXPECT_EQ(s.invalidates, 40u);
}

// ---------------------------------------------------------------- bounded host views

// A guest can map one page over and over across a huge VA range with a
// few legal entries: one table named by many PDEs. A view of such a range
// must cost the host neither a mapping per run nor a walk of the whole
// range.
TEST_F(MmuTest, MapRangeOverMoreRunsThanAWindowHoldsGivesNoViewAndStopsWalking) {
  auto spt = builder->allocate(fmt::SPT.table_bytes());
  ASSERT_TRUE(spt.has_value());
  for (uint64_t i = 0; i < fmt::SPT.entries(); ++i) vram->write64(*spt + i * 8, fmt::pte::make(DATA));
  constexpr uint64_t VA = 4 * fmt::PDE_SPAN;
  constexpr uint64_t PDES = 2;  // 65,536 runs of one page each, four times what a window holds
  for (uint64_t p = 0; p < PDES; ++p)
    vram->write64(pd + fmt::PD.index(VA + p * fmt::PDE_SPAN) * 8, fmt::pde::make(*spt, 0));
  const TlbStats before = mmu->stats();
  auto v = mmu->map_range(ctx, VA, PDES * fmt::PDE_SPAN, false);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->data(), nullptr);
  const TlbStats after = mmu->stats();
  // A run ends where the next translation breaks it: one more than the runs.
  EXPECT_LE(after.hits + after.misses - before.hits - before.misses, Mmu::MAX_WINDOW_RUNS + 2);
  // Within the limit, the same aliasing gives a window that shows the page everywhere.
  vram->write32(DATA + 8, 0xabcd);
  auto small = mmu->map_range(ctx, VA, 64 * SMALL, false);
  ASSERT_TRUE(small.has_value());
  ASSERT_NE(small->data(), nullptr);
  uint32_t word = 0;
  std::memcpy(&word, small->data() + 63 * SMALL + 8, sizeof word);
  EXPECT_EQ(word, 0xabcdu);
}

TEST_F(MmuTest, MapRangeSpanningMoreThanAWindowMayGivesNoView) {
  // Big pages in contiguous groups of four (512 KiB runs), so the run
  // count stays under the limit while the span passes MAX_WINDOW_BYTES.
  auto lpt = builder->allocate(fmt::LPT.table_bytes());
  ASSERT_TRUE(lpt.has_value());
  for (uint64_t i = 0; i < fmt::LPT.entries(); ++i) vram->write64(*lpt + i * 8, fmt::pte::make(DATA + (i % 4) * BIG));
  constexpr uint64_t VA = 64 * fmt::PDE_SPAN;
  const uint64_t pdes = Mmu::MAX_WINDOW_BYTES / fmt::PDE_SPAN + 1;
  for (uint64_t p = 0; p < pdes; ++p)
    vram->write64(pd + fmt::PD.index(VA + p * fmt::PDE_SPAN) * 8, fmt::pde::make(0, *lpt));
  ASSERT_LE(pdes * fmt::PDE_SPAN / (4 * BIG), Mmu::MAX_WINDOW_RUNS);
  auto v = mmu->map_range(ctx, VA, pdes * fmt::PDE_SPAN, false);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->data(), nullptr);
}

}  // namespace
}  // namespace vgpu::gpu
