// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/allocator.h"

#include "driver/msg.h"
#include "vgpu/bits.h"

namespace vgpu::driver {

RangeAllocator::RangeAllocator(std::string name, uint64_t base, uint64_t size)
    : name_(std::move(name)), base_(base), size_(size), free_bytes_(size), free_(base, size) {}

Result<uint64_t> RangeAllocator::alloc(uint64_t bytes, uint64_t align) {
  if (bytes == 0 || !is_pow2(align))
    return fail(Errc::invalid_argument,
                msg("{}: bad allocation request ({} bytes, alignment {})", name_, bytes, align));
  if (const std::optional<uint64_t> start = free_.take_first_fit(bytes, align)) {
    used_.emplace(*start, bytes);
    free_bytes_ -= bytes;
    return *start;
  }
  return fail(Errc::out_of_memory, msg("{}: no free range of {} bytes (alignment {}); {} of {} bytes free, largest {}",
                                       name_, bytes, hex(align), free_bytes_, size_, largest_free()));
}

Status RangeAllocator::reserve(uint64_t addr, uint64_t bytes) {
  if (!free_.take(addr, bytes))
    return fail(Errc::invalid_argument, msg("{}: cannot reserve [{}, +{}): not free", name_, hex(addr), hex(bytes)));
  used_.emplace(addr, bytes);
  free_bytes_ -= bytes;
  return {};
}

Status RangeAllocator::free(uint64_t addr) {
  auto it = used_.find(addr);
  if (it == used_.end()) return fail(Errc::not_found, msg("{}: no allocation starts at {}", name_, hex(addr)));
  const uint64_t bytes = it->second;
  used_.erase(it);
  free_bytes_ += bytes;
  free_.put(addr, bytes);
  return {};
}

uint64_t RangeAllocator::allocation_size(uint64_t addr) const {
  auto it = used_.find(addr);
  return it == used_.end() ? 0 : it->second;
}

uint64_t RangeAllocator::largest_free() const { return free_.largest(); }

}  // namespace vgpu::driver
