// SPDX-License-Identifier: GPL-2.0-or-later
// A VMM plus the allocator of its virtual addresses: maps whole VRAM
// ranges at a fresh VA, with big pages where the range allows, and flushes
// the TLB after each map or unmap. Used for BAR1 and for each context.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>

#include "driver/allocator.h"
#include "driver/vmm.h"

namespace vgpu::driver {

class AddressSpace {
 public:
  AddressSpace(Port& port, std::unique_ptr<PageTables> vmm, uint64_t va_base, uint64_t va_bytes);
  ~AddressSpace();
  AddressSpace(const AddressSpace&) = delete;
  AddressSpace& operator=(const AddressSpace&) = delete;

  // Maps VRAM [phys, phys + bytes) at a new VA; bytes is rounded up to the
  // page size used (big when phys and bytes are big-page multiples).
  [[nodiscard]] Result<uint64_t> map(uint64_t phys, uint64_t bytes, fmt::pte::Flags flags = {});
  // Maps a list of 4 KiB pages (pinned system memory: bus addresses, with
  // flags.aperture a sysmem target) at a new VA, in order, one small PTE
  // each; physically contiguous pages share one Vmm::map.
  [[nodiscard]] Result<uint64_t> map_pages(std::span<const uint64_t> pages, fmt::pte::Flags flags);
  // Maps VRAM at a VA the caller chose from a range it reserved (big pages
  // where phys, va and bytes allow). unmap() undoes it; the VA stays the caller's.
  [[nodiscard]] Status map_fixed(uint64_t va, uint64_t phys, uint64_t bytes);
  // Takes [va, va + bytes) out of this space's own VA allocator, for map_fixed.
  [[nodiscard]] Status reserve(uint64_t va, uint64_t bytes) { return va_.reserve(va, bytes); }
  [[nodiscard]] Status unmap(uint64_t va);

  PageTables& vmm() { return *vmm_; }
  const RangeAllocator& va() const { return va_; }

 private:
  struct Mapping {
    uint64_t bytes;
    fmt::PageSize ps;
    bool fixed = false;  // map_fixed: the VA is not this space's allocator's
  };
  Port& port_;
  std::unique_ptr<PageTables> vmm_;
  RangeAllocator va_;
  std::map<uint64_t, Mapping> maps_;
};

}  // namespace vgpu::driver
