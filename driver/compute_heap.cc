// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/compute_heap.h"

#include "driver/msg.h"

namespace vgpu::driver {

ComputeHeap::ComputeHeap(AddressSpace& as, RangeAllocator& vram)
    : as_(as),
      vram_(vram),
      va_("compute aperture", COMPUTE_APERTURE_BASE, COMPUTE_APERTURE_END - COMPUTE_APERTURE_BASE) {}

ComputeHeap::~ComputeHeap() {
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    auto next = std::next(it);
    (void)release(it);
    it = next;
  }
}

Result<std::map<uint64_t, ComputeHeap::Block>::iterator> ComputeHeap::new_block(uint64_t bytes, bool shared) {
  auto mem = vram_.alloc(bytes, COMPUTE_BLOCK);
  if (!mem) return std::unexpected(mem.error());
  auto va = va_.alloc(bytes, COMPUTE_BLOCK);
  if (!va) {
    (void)vram_.free(*mem);
    return std::unexpected(va.error());
  }
  if (auto ok = as_.map_fixed(*va, *mem, bytes); !ok) {
    (void)va_.free(*va);
    (void)vram_.free(*mem);
    return std::unexpected(ok.error());
  }
  Block b{*mem, bytes, shared ? std::make_unique<RangeAllocator>("compute block", 0, bytes) : nullptr};
  return blocks_.emplace(*va, std::move(b)).first;
}

Status ComputeHeap::release(std::map<uint64_t, Block>::iterator it) {
  Status unmapped = as_.unmap(it->first);
  (void)va_.free(it->first);
  (void)vram_.free(it->second.vram);
  blocks_.erase(it);
  return unmapped;
}

Result<ComputeRange> ComputeHeap::alloc(uint64_t bytes) {
  if (bytes == 0) return fail(Errc::invalid_argument, "compute buffer of 0 bytes");
  if (bytes > COMPUTE_APERTURE_END - COMPUTE_APERTURE_BASE)
    return fail(Errc::out_of_memory, msg("compute buffer of {} bytes is larger than the aperture", bytes));
  const auto what = [&] { return msg("compute buffer of {} bytes", bytes); };
  if (bytes >= COMPUTE_BLOCK) {
    auto it = new_block(align_up(bytes, COMPUTE_BLOCK), false);
    if (!it) return std::unexpected(it.error().context(what()));
    return ComputeRange{(*it)->second.vram, (*it)->first};
  }
  const uint64_t rounded = align_up(bytes, COMPUTE_PAGE);
  for (auto& [va, b] : blocks_) {
    if (!b.pages) continue;
    if (auto off = b.pages->alloc(rounded, COMPUTE_PAGE)) return ComputeRange{b.vram + *off, va + *off};
  }
  auto it = new_block(COMPUTE_BLOCK, true);
  if (!it) return std::unexpected(it.error().context(what()));
  auto off = (*it)->second.pages->alloc(rounded, COMPUTE_PAGE);
  if (!off) return std::unexpected(off.error());
  return ComputeRange{(*it)->second.vram + *off, (*it)->first + *off};
}

Status ComputeHeap::free(uint64_t va) {
  auto it = blocks_.upper_bound(va);
  if (it == blocks_.begin()) return fail(Errc::not_found, msg("no compute buffer at {}", hex(va)));
  --it;
  Block& b = it->second;
  if (va - it->first >= b.bytes) return fail(Errc::not_found, msg("no compute buffer at {}", hex(va)));
  if (!b.pages) {
    if (va != it->first) return fail(Errc::not_found, msg("no compute buffer at {}", hex(va)));
    return release(it);
  }
  if (auto ok = b.pages->free(va - it->first); !ok) return ok;
  if (b.pages->free_bytes() == b.bytes) return release(it);
  return {};
}

}  // namespace vgpu::driver
