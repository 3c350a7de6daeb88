// SPDX-License-Identifier: GPL-2.0-or-later
#include "shadow/live_entries.h"

#include <gtest/gtest.h>

#include <vector>

namespace vgpu::shadow {
namespace {

// next_live against the entry-by-entry definition, for every start, on
// tables with live entries at chunk edges, inside chunks, on either side
// and in the tail past the last whole chunk.
uint64_t by_entry(const std::vector<uint64_t>& g, const std::vector<uint64_t>& s, uint64_t from) {
  for (uint64_t j = from; j < g.size(); ++j)
    if (g[j] != 0 || s[j] != 0) return j;
  return g.size();
}

TEST(NextLive, FindsTheFirstEntryNotZeroOnEitherSideFromAnyStart) {
  constexpr uint64_t N = 75;  // 9 chunks of 8 and a tail of 3
  const std::vector<std::vector<uint64_t>> guest_at = {{}, {0}, {7, 8}, {13}, {63, 64, 72}, {74}};
  const std::vector<std::vector<uint64_t>> shadow_at = {{}, {5}, {15, 16}, {40}, {73}};
  for (const auto& ga : guest_at)
    for (const auto& sa : shadow_at) {
      std::vector<uint64_t> g(N), s(N);
      for (uint64_t j : ga) g[j] = uint64_t{1} << (j % 64);
      for (uint64_t j : sa) s[j] = 0x8000'0000'0000'0000ull >> (j % 64);
      for (uint64_t from = 0; from <= N; ++from)
        ASSERT_EQ(next_live(g.data(), s.data(), from, N), by_entry(g, s, from)) << "from " << from;
    }
}

TEST(NextLive, AnEmptyRangeOrAllZeroTableHasNone) {
  const std::vector<uint64_t> zero(32768);
  EXPECT_EQ(next_live(zero.data(), zero.data(), 0, zero.size()), zero.size());
  EXPECT_EQ(next_live(zero.data(), zero.data(), 5, 5), 5u);
  std::vector<uint64_t> last(32768);
  last.back() = 1;
  EXPECT_EQ(next_live(zero.data(), last.data(), 0, last.size()), last.size() - 1);
}

}  // namespace
}  // namespace vgpu::shadow
