// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/allocator.h"

#include "driver/msg.h"
#include "vgpu/bits.h"

namespace vgpu::driver {

RangeAllocator::RangeAllocator(std::string name, uint64_t base, uint64_t size)
    : name_(std::move(name)), base_(base), size_(size), free_bytes_(size) {
  if (size) free_.emplace(base, size);
}

void RangeAllocator::take(std::map<uint64_t, uint64_t>::iterator it, uint64_t addr, uint64_t bytes) {
  const uint64_t start = it->first;
  const uint64_t end = start + it->second;
  free_.erase(it);
  if (addr > start) free_.emplace(start, addr - start);
  if (addr + bytes < end) free_.emplace(addr + bytes, end - (addr + bytes));
  used_.emplace(addr, bytes);
  free_bytes_ -= bytes;
}

Result<uint64_t> RangeAllocator::alloc(uint64_t bytes, uint64_t align) {
  if (bytes == 0 || !is_pow2(align))
    return fail(Errc::invalid_argument,
                msg("{}: bad allocation request ({} bytes, alignment {})", name_, bytes, align));
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const uint64_t start = align_up(it->first, align);
    const uint64_t end = it->first + it->second;
    if (start < it->first || start >= end || end - start < bytes) continue;
    take(it, start, bytes);
    return start;
  }
  return fail(Errc::out_of_memory, msg("{}: no free range of {} bytes (alignment {}); {} of {} bytes free, largest {}",
                                       name_, bytes, hex(align), free_bytes_, size_, largest_free()));
}

Status RangeAllocator::reserve(uint64_t addr, uint64_t bytes) {
  auto it = free_.upper_bound(addr);
  if (bytes == 0 || it == free_.begin())
    return fail(Errc::invalid_argument, msg("{}: cannot reserve [{}, +{}): not free", name_, hex(addr), hex(bytes)));
  --it;
  if (addr + bytes < addr || addr + bytes > it->first + it->second)
    return fail(Errc::invalid_argument, msg("{}: cannot reserve [{}, +{}): not free", name_, hex(addr), hex(bytes)));
  take(it, addr, bytes);
  return {};
}

void RangeAllocator::insert_free(uint64_t addr, uint64_t bytes) {
  auto next = free_.lower_bound(addr);
  if (next != free_.end() && addr + bytes == next->first) {
    bytes += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == addr) {
      prev->second += bytes;
      return;
    }
  }
  free_.emplace(addr, bytes);
}

Status RangeAllocator::free(uint64_t addr) {
  auto it = used_.find(addr);
  if (it == used_.end()) return fail(Errc::not_found, msg("{}: no allocation starts at {}", name_, hex(addr)));
  const uint64_t bytes = it->second;
  used_.erase(it);
  free_bytes_ += bytes;
  insert_free(addr, bytes);
  return {};
}

uint64_t RangeAllocator::allocation_size(uint64_t addr) const {
  auto it = used_.find(addr);
  return it == used_.end() ? 0 : it->second;
}

uint64_t RangeAllocator::largest_free() const {
  uint64_t best = 0;
  for (const auto& [addr, bytes] : free_) best = std::max(best, bytes);
  return best;
}

}  // namespace vgpu::driver
