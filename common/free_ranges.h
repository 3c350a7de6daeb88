// SPDX-License-Identifier: GPL-2.0-or-later
// Free address ranges, start -> bytes, never two adjacent: the free list of
// the guest driver's RangeAllocator (driver/allocator.h) and of the host's
// reserved VRAM (shadow/reserved_vram.h). First fit; a range taken from
// the middle of a free one leaves its two ends free; a range put back
// merges with the free ranges it touches. Not thread-safe: its owner locks.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>

#include "vgpu/bits.h"

namespace vgpu {

class FreeRanges {
 public:
  // [base, base + size) free (nothing when size is 0).
  FreeRanges(uint64_t base, uint64_t size) {
    if (size) ranges_.emplace(base, size);
  }

  // The lowest start that is a multiple of `align` (a power of two) and
  // has `bytes` free after it, taken out of the list; none if no range fits.
  std::optional<uint64_t> take_first_fit(uint64_t bytes, uint64_t align) {
    for (auto it = ranges_.begin(); it != ranges_.end(); ++it) {
      const uint64_t start = align_up(it->first, align);
      const uint64_t end = it->first + it->second;
      if (start < it->first || start >= end || end - start < bytes) continue;
      split(it, start, bytes);
      return start;
    }
    return std::nullopt;
  }

  // Takes [addr, addr + bytes) (bytes > 0) out of the list; false, and
  // nothing taken, when any part of it is not free.
  bool take(uint64_t addr, uint64_t bytes) {
    auto it = ranges_.upper_bound(addr);
    if (bytes == 0 || it == ranges_.begin()) return false;
    --it;
    if (addr + bytes < addr || addr + bytes > it->first + it->second) return false;
    split(it, addr, bytes);
    return true;
  }

  // Gives [start, start + bytes) back.
  void put(uint64_t start, uint64_t bytes) {
    auto next = ranges_.lower_bound(start);
    if (next != ranges_.end() && start + bytes == next->first) {
      bytes += next->second;
      next = ranges_.erase(next);
    }
    if (next != ranges_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == start) {
        prev->second += bytes;
        return;
      }
    }
    ranges_.emplace(start, bytes);
  }

  uint64_t largest() const {
    uint64_t best = 0;
    for (const auto& [start, bytes] : ranges_) best = std::max(best, bytes);
    return best;
  }
  size_t count() const { return ranges_.size(); }

 private:
  // Takes [addr, addr + bytes) out of the free range `it`, which holds it.
  void split(std::map<uint64_t, uint64_t>::iterator it, uint64_t addr, uint64_t bytes) {
    const uint64_t start = it->first;
    const uint64_t end = start + it->second;
    ranges_.erase(it);
    if (addr > start) ranges_.emplace(start, addr - start);
    if (addr + bytes < end) ranges_.emplace(addr + bytes, end - (addr + bytes));
  }

  std::map<uint64_t, uint64_t> ranges_;
};

}  // namespace vgpu
