// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's channel address spaces: shared per guest directory, synced with
// a physical TLB invalidate only when a shadow entry changed.
#include "shadow/shadow_spaces.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shadow/testing/fixture.h"

namespace vgpu::mediator {
namespace {

using shadow::testing::Fixture;
constexpr uint64_t PD = 0x100000, PD2 = 0x120000, SPT = 0x200000;
constexpr uint64_t VA = 0x4000'0000;

struct Spaces {
  Fixture f;
  std::vector<uint64_t> invalidated;
  std::vector<std::string> errors;
  ShadowSpaces s{f.guest, f.reserved, f.counters, [this](uint64_t pd) { invalidated.push_back(pd); },
                 [this](const std::string& e) { errors.push_back(e); }};
};

TEST(ShadowSpaces, ChannelsOfOneDirectoryShareItsSpaceWhileOneHoldsIt) {
  Spaces t;
  auto a = t.s.get(PD);
  auto b = t.s.get(PD);
  auto c = t.s.get(PD2);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->get(), b->get());
  EXPECT_NE(a->get(), c->get());
  t.s.sync(**a, true);
  EXPECT_FALSE((*b)->dirty());
  a->reset();
  b->reset();  // no channel holds it: it goes
  auto again = t.s.get(PD);
  ASSERT_TRUE(again);
  EXPECT_TRUE((*again)->dirty()) << "a new space starts unsynced";
}

TEST(ShadowSpaces, ADirectoryOutsideThePartitionIsRefused) {
  Spaces t;
  EXPECT_FALSE(t.s.get(Fixture::PART_BYTES));
}

TEST(ShadowSpaces, ASyncInvalidatesThePhysicalTlbOnlyWhenAnEntryChanged) {
  Spaces t;
  t.f.guest_pde(PD, VA, SPT, 0);
  t.f.guest_pte(SPT, VA, fmt::PageSize::small, fmt::pte::make(0x10000));
  auto s = t.s.get(PD);
  ASSERT_TRUE(s);
  t.s.sync(**s, true);
  ASSERT_EQ(t.invalidated.size(), 1u);
  EXPECT_EQ(t.invalidated[0], (*s)->shadow_pd());
  t.s.sync(**s, true);  // nothing changed
  EXPECT_EQ(t.invalidated.size(), 1u);
  EXPECT_TRUE(t.errors.empty());
}

TEST(ShadowSpaces, ATrappedWriteMarksEverySpaceWhoseTableItHits) {
  Spaces t;
  t.f.guest_pde(PD, VA, SPT, 0);
  t.f.guest_pde(PD2, VA, SPT, 0);  // two directories, one table
  auto a = t.s.get(PD), b = t.s.get(PD2);
  ASSERT_TRUE(a && b);
  t.s.sync_all_full();
  EXPECT_FALSE((*a)->dirty() || (*b)->dirty());
  t.s.note_write(SPT + 8);
  EXPECT_TRUE((*a)->dirty());
  EXPECT_TRUE((*b)->dirty());
  std::vector<uint64_t> pages;
  t.s.append_table_pages(pages);
  EXPECT_NE(std::find(pages.begin(), pages.end(), SPT), pages.end());
}

TEST(ShadowSpaces, SyncFullNamesOneDirectory) {
  Spaces t;
  auto a = t.s.get(PD), b = t.s.get(PD2);
  ASSERT_TRUE(a && b);
  const uint64_t before = t.f.counters.full_syncs.load();
  t.s.sync_full(PD2);
  EXPECT_EQ(t.f.counters.full_syncs.load(), before + 1);
  EXPECT_FALSE((*b)->dirty());
  EXPECT_TRUE((*a)->dirty()) << "never synced";
}

}  // namespace
}  // namespace vgpu::mediator
