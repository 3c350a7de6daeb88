// SPDX-License-Identifier: GPL-2.0-or-later
#include "shadow/reserved_vram.h"

#include <cstring>
#include <utility>

#include "vgpu/bits.h"

namespace vgpu::shadow {

ReservedVram::ReservedVram(gpu::Vram& vram, uint64_t base, uint64_t size, Shootdown shootdown)
    : vram_(vram), base_(base), size_(size), shootdown_(std::move(shootdown)) {
  if (size_) free_.emplace(base_, size_);
}

std::optional<uint64_t> ReservedVram::alloc(uint64_t bytes, uint64_t align) {
  if (bytes == 0 || !is_pow2(align)) return std::nullopt;
  if (align < GRANULE) align = GRANULE;
  bytes = align_up(bytes, GRANULE);
  std::unique_lock lock(mutex_);
  std::optional<uint64_t> got = take_locked(bytes, align);
  if (!got && shootdown_ && !quarantine_.empty()) {
    // Only what was freed before the shootdown starts is released by it.
    std::map<uint64_t, uint64_t> released;
    released.swap(quarantine_);
    quarantined_bytes_ = 0;
    lock.unlock();
    shootdown_();
    lock.lock();
    ++shootdowns_;
    for (const auto& [addr, n] : released) insert_free_locked(addr, n);
    got = take_locked(bytes, align);
  }
  if (!got) return std::nullopt;
  lock.unlock();
  (void)vram_.zero(*got, bytes);
  return got;
}

std::optional<uint64_t> ReservedVram::take_locked(uint64_t bytes, uint64_t align) {
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
    return start;
  }
  return std::nullopt;
}

void ReservedVram::free(uint64_t addr) {
  std::lock_guard lock(mutex_);
  auto u = used_.find(addr);
  if (u == used_.end()) return;
  const uint64_t bytes = u->second;
  used_.erase(u);
  used_bytes_ -= bytes;
  if (shootdown_) {
    quarantine_.emplace(addr, bytes);
    quarantined_bytes_ += bytes;
  } else {
    insert_free_locked(addr, bytes);
  }
}

void ReservedVram::insert_free_locked(uint64_t start, uint64_t bytes) {
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

uint64_t ReservedVram::read(const uint64_t& field) const {
  std::lock_guard lock(mutex_);
  return field;
}

uint64_t ReservedVram::used() const { return read(used_bytes_); }
uint64_t ReservedVram::peak() const { return read(peak_bytes_); }
uint64_t ReservedVram::quarantined() const { return read(quarantined_bytes_); }
uint64_t ReservedVram::shootdowns() const { return read(shootdowns_); }

}  // namespace vgpu::shadow
