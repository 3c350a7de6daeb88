// SPDX-License-Identifier: GPL-2.0-or-later
#include "shadow/live_entries.h"

#include <cstring>

namespace vgpu::shadow {
namespace {
constexpr uint64_t CHUNK = 8;  // entries ORed at once (one 64-byte line a side)
using Words4 = uint64_t __attribute__((vector_size(4 * sizeof(uint64_t))));
[[gnu::always_inline, gnu::no_sanitize_coverage]] inline bool live(const uint64_t* guest, const uint64_t* shadow,
                                                                   uint64_t j) {
  uint64_t g = 0, s = 0;
  std::memcpy(&g, guest + j, sizeof g);
  std::memcpy(&s, shadow + j, sizeof s);
  return (g | s) != 0;
}
}  // namespace

// A memory scan, like the memcmp it replaces: no coverage callbacks in its
// loop (a fuzz build's trace-pc call a block cost more than the reads), and
// AVX2 where the CPU has it. Entry by entry up to a chunk's edge (a table
// full of entries returns at once), then a chunk at a time.
[[gnu::no_sanitize_coverage, gnu::target_clones("avx2", "default")]] uint64_t next_live(const uint64_t* guest,
                                                                                        const uint64_t* shadow,
                                                                                        uint64_t from, uint64_t count) {
  uint64_t j = from;
  for (; j < count && (j == from || j % CHUNK != 0); ++j)
    if (live(guest, shadow, j)) return j;
  for (; j + CHUNK <= count; j += CHUNK) {
    Words4 g0, g1, s0, s1;
    std::memcpy(&g0, guest + j, sizeof g0);
    std::memcpy(&g1, guest + j + 4, sizeof g1);
    std::memcpy(&s0, shadow + j, sizeof s0);
    std::memcpy(&s1, shadow + j + 4, sizeof s1);
    const Words4 any = g0 | g1 | s0 | s1;
    if ((any[0] | any[1] | any[2] | any[3]) != 0) break;
  }
  for (; j < count; ++j)
    if (live(guest, shadow, j)) return j;
  return count;
}

}  // namespace vgpu::shadow
