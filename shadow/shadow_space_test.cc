// SPDX-License-Identifier: GPL-2.0-or-later
#include "shadow/shadow_space.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "shadow/testing/fixture.h"

namespace vgpu::shadow {
namespace {

using fmt::PageSize;
using testing::Fixture;

// Guest layout inside the partition.
constexpr uint64_t PD = 0x100000;
constexpr uint64_t SPT = 0x200000;
constexpr uint64_t LPT = 0x300000;
constexpr uint64_t VA = 0x4000'0000;  // inside PDE 8

struct Mapping {
  uint64_t va, phys, bytes;
  bool ro;
};

std::vector<Mapping> mappings(const ShadowSpace& s, uint64_t begin, uint64_t end) {
  std::vector<Mapping> out;
  s.for_each_mapping(begin, end, [&](uint64_t va, uint64_t phys, uint64_t bytes, bool ro) {
    out.push_back({va, phys, bytes, ro});
  });
  return out;
}

class ShadowSpaceTest : public ::testing::Test {
 protected:
  Fixture f;
  std::unique_ptr<ShadowSpace> space;

  void SetUp() override {
    f.guest_pde(PD, VA, SPT, LPT);
    f.guest_pte(SPT, VA, PageSize::small, fmt::pte::make(0x10000));
    f.guest_pte(LPT, VA + fmt::BIG_PAGE, PageSize::big, fmt::pte::make(0x400000));
    space = ShadowSpace::create(f.guest, f.reserved, f.counters, PD).value();
  }
  uint64_t shadow_spt_entry(uint64_t va) {
    const uint64_t pde = f.host_read64(space->shadow_pd() + fmt::PD.index(va) * 8);
    return f.host_read64(fmt::pde::spt_addr(pde) + fmt::SPT.index(va) * 8);
  }
};

// Issue 37 item 5: a sync bounded by a deadline stops and resumes; every
// piece makes progress, and the pieces together shadow what one sync does.
TEST_F(ShadowSpaceTest, ASyncInPiecesResumesWhereItStoppedAndEndsAsOneSyncWould) {
  uint32_t pieces = 0;
  for (bool done = false; !done; ++pieces) {
    ASSERT_TRUE(space->sync_dirty_until(0, done));  // a deadline already past: one step a piece
    ASSERT_LE(pieces, fmt::PD.entries()) << "a piece made no progress";
    if (!done) {
      EXPECT_TRUE(space->dirty());
    }
  }
  EXPECT_GT(pieces, 1u);
  EXPECT_FALSE(space->dirty());
  EXPECT_EQ(f.counters.full_syncs.load(), 1u);
  // As many entries as one full rescan reads.
  const uint64_t scanned = f.counters.entries_scanned.load();
  ASSERT_TRUE(space->sync_full());
  EXPECT_EQ(f.counters.entries_scanned.load() - scanned, scanned);
  auto m = mappings(*space, VA, VA + 2 * fmt::BIG_PAGE);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].phys, Fixture::PART_BASE + 0x10000);
  EXPECT_EQ(m[1].phys, Fixture::PART_BASE + 0x400000);
}

TEST_F(ShadowSpaceTest, FullSyncRelocatesSmallAndBigPages) {
  ASSERT_TRUE(space->sync_full());
  auto m = mappings(*space, VA, VA + 2 * fmt::BIG_PAGE);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].va, VA);
  EXPECT_EQ(m[0].phys, Fixture::PART_BASE + 0x10000);
  EXPECT_EQ(m[0].bytes, fmt::SMALL_PAGE);
  EXPECT_EQ(m[1].va, VA + fmt::BIG_PAGE);
  EXPECT_EQ(m[1].phys, Fixture::PART_BASE + 0x400000);
  EXPECT_EQ(m[1].bytes, fmt::BIG_PAGE);
}

TEST_F(ShadowSpaceTest, EntryOutsidePartitionBecomesFaultingAndIsCounted) {
  f.guest_pte(SPT, VA + fmt::SMALL_PAGE, PageSize::small, fmt::pte::make(Fixture::PART_BYTES + 0x1000));
  ASSERT_TRUE(space->sync_full());
  EXPECT_EQ(shadow_spt_entry(VA + fmt::SMALL_PAGE), 0u);
  EXPECT_EQ(f.counters.bad_entries.load(), 1u);
  EXPECT_EQ(mappings(*space, VA, VA + fmt::BIG_PAGE).size(), 1u);
}

TEST_F(ShadowSpaceTest, BigPageOutsidePartitionBecomesFaulting) {
  f.guest_pte(LPT, VA + 2 * fmt::BIG_PAGE, PageSize::big, fmt::pte::make(Fixture::PART_BYTES));
  ASSERT_TRUE(space->sync_full());
  EXPECT_EQ(mappings(*space, VA + 2 * fmt::BIG_PAGE, VA + 3 * fmt::BIG_PAGE).size(), 0u);
  EXPECT_EQ(f.counters.bad_entries.load(), 1u);
}

TEST_F(ShadowSpaceTest, PageTableOutsidePartitionIsNotShadowed) {
  f.guest_pde(PD, VA + fmt::PDE_SPAN, Fixture::PART_BYTES + 0x1000, 0);
  ASSERT_TRUE(space->sync_full());
  EXPECT_EQ(f.host_read64(space->shadow_pd() + fmt::PD.index(VA + fmt::PDE_SPAN) * 8), 0u);
  EXPECT_EQ(f.counters.bad_entries.load(), 1u);
}

TEST_F(ShadowSpaceTest, PageDirectoryOutsidePartitionIsRefused) {
  auto s = ShadowSpace::create(f.guest, f.reserved, f.counters, Fixture::PART_BYTES - 0x1000);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, Errc::invalid_argument);
}

TEST_F(ShadowSpaceTest, LazySyncRescansOnlyTheWrittenPage) {
  ASSERT_TRUE(space->sync_full());
  const uint64_t scanned = f.counters.entries_scanned.load();
  const uint64_t slot = SPT + fmt::SPT.index(VA + fmt::SMALL_PAGE) * 8;
  f.guest_write64(slot, fmt::pte::make(0x20000));
  EXPECT_TRUE(space->note_write(slot));
  ASSERT_TRUE(space->sync_dirty());
  EXPECT_EQ(f.counters.pages_rescanned.load(), 1u);
  EXPECT_EQ(f.counters.entries_scanned.load() - scanned, fmt::SMALL_PAGE / 8);
  EXPECT_EQ(fmt::pte::addr(shadow_spt_entry(VA + fmt::SMALL_PAGE)), Fixture::PART_BASE + 0x20000);
}

TEST_F(ShadowSpaceTest, UnreportedWriteStaysStaleUntilFullSync) {
  ASSERT_TRUE(space->sync_full());
  f.guest_pte(SPT, VA + fmt::SMALL_PAGE, PageSize::small, fmt::pte::make(0x20000));
  ASSERT_TRUE(space->sync_dirty());
  EXPECT_EQ(shadow_spt_entry(VA + fmt::SMALL_PAGE), 0u);
  ASSERT_TRUE(space->sync_full());
  EXPECT_NE(shadow_spt_entry(VA + fmt::SMALL_PAGE), 0u);
}

TEST_F(ShadowSpaceTest, WriteOutsideTablesIsNotNoted) {
  EXPECT_FALSE(space->note_write(0x10000));
  EXPECT_TRUE(space->note_write(PD + 8));
}

TEST_F(ShadowSpaceTest, DirectoryWriteAttachesANewTable) {
  ASSERT_TRUE(space->sync_full());
  constexpr uint64_t SPT2 = 0x600000;
  const uint64_t va2 = VA + fmt::PDE_SPAN;
  f.guest_pte(SPT2, va2, PageSize::small, fmt::pte::make(0x30000));
  const uint64_t pde_addr = PD + fmt::PD.index(va2) * 8;
  f.guest_write64(pde_addr, fmt::pde::make(SPT2, 0));
  ASSERT_TRUE(space->note_write(pde_addr));
  ASSERT_TRUE(space->sync_dirty());
  auto m = mappings(*space, va2, va2 + fmt::SMALL_PAGE);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].phys, Fixture::PART_BASE + 0x30000);
  auto pages = space->table_pages();
  EXPECT_TRUE(std::find(pages.begin(), pages.end(), SPT2) != pages.end());
}

TEST_F(ShadowSpaceTest, DetachedTableIsFreedAndUntracked) {
  ASSERT_TRUE(space->sync_full());
  const uint64_t used = f.reserved.used();
  const uint64_t pde_addr = PD + fmt::PD.index(VA) * 8;
  f.guest_write64(pde_addr, 0);
  ASSERT_TRUE(space->note_write(pde_addr));
  ASSERT_TRUE(space->sync_dirty());
  EXPECT_EQ(used - f.reserved.used(), fmt::SPT.table_bytes() + fmt::LPT.table_bytes());
  EXPECT_FALSE(space->note_write(SPT));
}

TEST_F(ShadowSpaceTest, ShadowTablesLiveInReservedVram) {
  ASSERT_TRUE(space->sync_full());
  EXPECT_TRUE(f.reserved.contains(space->shadow_pd()));
  const uint64_t pde = f.host_read64(space->shadow_pd() + fmt::PD.index(VA) * 8);
  EXPECT_TRUE(f.reserved.contains(fmt::pde::spt_addr(pde)));
  EXPECT_TRUE(f.reserved.contains(fmt::pde::lpt_addr(pde)));
}

// A scan skips runs of entries that are 0 on both sides, and a walk skips
// 2 MiB spans whose shadow entries are all 0: entries at the edges of
// those runs and spans, and a big page alone in a span, are still found.
TEST_F(ShadowSpaceTest, EntriesAtTheEdgesOfSkippedRunsAreShadowedAndWalked) {
  const std::vector<uint64_t> small_vas = {VA + 127 * fmt::SMALL_PAGE, VA + 128 * fmt::SMALL_PAGE,
                                           VA + 511 * fmt::SMALL_PAGE, VA + fmt::PDE_SPAN - fmt::SMALL_PAGE};
  for (size_t i = 0; i < small_vas.size(); ++i)
    f.guest_pte(SPT, small_vas[i], PageSize::small, fmt::pte::make(0x20000 + i * fmt::SMALL_PAGE));
  const uint64_t lone_big = VA + 64 * fmt::BIG_PAGE;  // a 2 MiB span with no small page
  f.guest_pte(LPT, lone_big, PageSize::big, fmt::pte::make(0x600000));
  ASSERT_TRUE(space->sync_full());
  for (size_t i = 0; i < small_vas.size(); ++i)
    EXPECT_EQ(fmt::pte::addr(shadow_spt_entry(small_vas[i])), Fixture::PART_BASE + 0x20000 + i * fmt::SMALL_PAGE) << i;
  auto m = mappings(*space, VA, VA + fmt::PDE_SPAN);
  std::vector<uint64_t> got;
  for (const Mapping& x : m) got.push_back(x.va);
  const std::vector<uint64_t> want = {VA,           VA + fmt::BIG_PAGE, small_vas[0], small_vas[1],
                                      small_vas[2], lone_big,           small_vas[3]};
  std::vector<uint64_t> sorted = want;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(got, sorted);
}

// A naive full sync reads only the entries with work (guest or shadow not
// 0, or a table attached): a PDE cleared in place beside a new neighbour
// in the same block is detached and its shadow cleared, a PTE cleared in
// place is cleared in the shadow, and a second sync writes nothing and
// counts as many entries as the first.
TEST_F(ShadowSpaceTest, AFullSyncDetachesClearedEntriesBesideNewOnes) {
  ASSERT_TRUE(space->sync_full());
  const uint64_t used = f.reserved.used();
  constexpr uint64_t SPT2 = 0x600000;
  const uint64_t va2 = VA + fmt::PDE_SPAN, va3 = VA + 2 * fmt::PDE_SPAN;
  f.guest_pte(SPT2, va2, PageSize::small, fmt::pte::make(0x30000));
  f.guest_pte(SPT2, va2 + fmt::SMALL_PAGE, PageSize::small, fmt::pte::make(0x31000));
  f.guest_pde(PD, va2, SPT2, 0);
  f.guest_pde(PD, va3, SPT2, 0);  // two PDEs may share a table
  f.guest_write64(PD + fmt::PD.index(VA) * 8, 0);
  ASSERT_TRUE(space->sync_full());
  EXPECT_EQ(f.host_read64(space->shadow_pd() + fmt::PD.index(VA) * 8), 0u);
  EXPECT_TRUE(mappings(*space, VA, VA + fmt::PDE_SPAN).empty());
  EXPECT_EQ(mappings(*space, va2, va2 + fmt::PDE_SPAN).size(), 2u);
  EXPECT_EQ(mappings(*space, va3, va3 + fmt::PDE_SPAN).size(), 2u);
  // The cleared PDE's two tables went back, the two new small ones came.
  EXPECT_EQ(f.reserved.used() + fmt::SPT.table_bytes() + fmt::LPT.table_bytes(), used + 2 * fmt::SPT.table_bytes());

  f.guest_pte(SPT2, va2 + fmt::SMALL_PAGE, PageSize::small, 0);
  ASSERT_TRUE(space->sync_full());
  EXPECT_EQ(mappings(*space, va2, va2 + fmt::PDE_SPAN).size(), 1u);
  const uint64_t writes = f.counters.shadow_writes.load(), scanned = f.counters.entries_scanned.load();
  ASSERT_TRUE(space->sync_full());
  EXPECT_EQ(f.counters.shadow_writes.load(), writes);
  const uint64_t per_sync = fmt::PD.entries() + 2 * fmt::SPT.entries();
  EXPECT_EQ(f.counters.entries_scanned.load() - scanned, per_sync);
}

// table_pages is kept between calls: a table attached or detached since
// the last call is in or out of the next one, which stays sorted.
TEST_F(ShadowSpaceTest, TablePagesFollowTablesThatComeAndGo) {
  ASSERT_TRUE(space->sync_full());
  const std::vector<uint64_t> before = space->table_pages();
  ASSERT_TRUE(std::is_sorted(before.begin(), before.end()));
  EXPECT_EQ(space->table_pages(), before);
  constexpr uint64_t SPT2 = 0x80000;  // below the others: sorts first
  const uint64_t va2 = VA + fmt::PDE_SPAN;
  f.guest_pde(PD, va2, SPT2, 0);
  ASSERT_TRUE(space->sync_full());
  const std::vector<uint64_t> with = space->table_pages();
  EXPECT_TRUE(std::is_sorted(with.begin(), with.end()));
  EXPECT_EQ(with.size(), before.size() + fmt::SPT.table_bytes() / fmt::SMALL_PAGE);
  EXPECT_EQ(with.front(), SPT2);
  f.guest_write64(PD + fmt::PD.index(va2) * 8, 0);
  ASSERT_TRUE(space->sync_full());
  EXPECT_EQ(space->table_pages(), before);
}

}  // namespace
}  // namespace vgpu::shadow
