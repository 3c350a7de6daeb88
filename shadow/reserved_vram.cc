// SPDX-License-Identifier: GPL-2.0-or-later
#include "shadow/reserved_vram.h"

#include <cstring>
#include <utility>

#include "vgpu/bits.h"

namespace vgpu::shadow {

ReservedVram::ReservedVram(gpu::Vram& vram, uint64_t base, uint64_t size, Shootdown shootdown)
    : vram_(vram), base_(base), size_(size), shootdown_(std::move(shootdown)), free_(base, size) {}

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
    for (const auto& [addr, n] : released) free_.put(addr, n);
    got = take_locked(bytes, align);
  }
  if (!got) return std::nullopt;
  lock.unlock();
  (void)vram_.zero(*got, bytes);
  return got;
}

std::optional<uint64_t> ReservedVram::take_locked(uint64_t bytes, uint64_t align) {
  const std::optional<uint64_t> start = free_.take_first_fit(bytes, align);
  if (!start) return std::nullopt;
  used_.emplace(*start, bytes);
  used_bytes_ += bytes;
  if (used_bytes_ > peak_bytes_) peak_bytes_ = used_bytes_;
  return start;
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
    free_.put(addr, bytes);
  }
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
