// SPDX-License-Identifier: GPL-2.0-or-later
#include "shadow/reserved_vram.h"

#include <cstring>

#include "vgpu/bits.h"

namespace vgpu::shadow {

ReservedVram::ReservedVram(gpu::Vram& vram, uint64_t base, uint64_t size) : vram_(vram), base_(base), size_(size) {
  if (size_) free_.emplace(base_, size_);
}

std::optional<uint64_t> ReservedVram::alloc(uint64_t bytes, uint64_t align) {
  if (bytes == 0 || !is_pow2(align)) return std::nullopt;
  if (align < GRANULE) align = GRANULE;
  bytes = align_up(bytes, GRANULE);
  std::lock_guard lock(mutex_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const uint64_t start = align_up(it->first, align);
    const uint64_t end = it->first + it->second;
    if (start >= end || end - start < bytes) continue;
    const uint64_t block = it->first;
    free_.erase(it);
    if (start > block) free_.emplace(block, start - block);
    if (start + bytes < end) free_.emplace(start + bytes, end - start - bytes);
    used_.emplace(start, bytes);
    used_bytes_ += bytes;
    if (used_bytes_ > peak_bytes_) peak_bytes_ = used_bytes_;
    std::memset(vram_.data() + start, 0, bytes);
    return start;
  }
  return std::nullopt;
}

void ReservedVram::free(uint64_t addr) {
  std::lock_guard lock(mutex_);
  auto u = used_.find(addr);
  if (u == used_.end()) return;
  uint64_t start = u->first;
  uint64_t bytes = u->second;
  used_.erase(u);
  used_bytes_ -= bytes;
  auto next = free_.lower_bound(start);
  if (next != free_.end() && start + bytes == next->first) {
    bytes += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      bytes += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(start, bytes);
}

uint64_t ReservedVram::used() const {
  std::lock_guard lock(mutex_);
  return used_bytes_;
}

uint64_t ReservedVram::peak() const {
  std::lock_guard lock(mutex_);
  return peak_bytes_;
}

}  // namespace vgpu::shadow
