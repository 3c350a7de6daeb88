// SPDX-License-Identifier: GPL-2.0-or-later
// The one place where a guest page-table entry is validated and turned
// into a shadow entry. A guest entry that names memory outside its VM's
// partition (or anything but VRAM) becomes a faulting (zero) entry and is
// counted; it never becomes an access.
#pragma once

#include <cstdint>

#include "shadow/guest_memory.h"
#include "vgpu/formats.h"

namespace vgpu::shadow {

enum class Verdict {
  absent,    // the guest entry is not valid: the shadow entry is not either
  mapped,    // translated into the partition
  rejected,  // valid in the guest but outside the partition or not VRAM: faulting
};

struct ShadowPte {
  uint64_t value;
  Verdict verdict;
};

// The target check of every path that turns a guest's page into a shadow
// entry (page-table scans and the PV server): a page of `page` bytes at
// guest address `gaddr` in aperture `target` becomes host VRAM, or is
// rejected. Only VRAM inside the partition passes; system memory is refused
// until the mediator confines DMA (then this is where it is allowed).
struct TargetPage {
  uint64_t host;  // host VRAM address; 0 when rejected
  Verdict verdict;
};
TargetPage check_target(fmt::Target target, uint64_t gaddr, uint64_t page, const Partition& partition);

// A guest PTE of a small or big page table, as the physical MMU must see it.
ShadowPte shadow_pte(uint64_t guest_pte, fmt::PageSize size, const Partition& partition);

// One half of a guest PDE: the guest address of a page table, if it is a
// VRAM table that lies wholly inside the partition.
struct GuestTable {
  uint64_t guest_addr;  // 0 when absent or rejected
  Verdict verdict;
};
GuestTable guest_spt(uint64_t guest_pde, const Partition& partition);
GuestTable guest_lpt(uint64_t guest_pde, const Partition& partition);

// The shadow PDE naming shadow tables (host VRAM addresses; 0 = none).
constexpr uint64_t shadow_pde(uint64_t shadow_spt, uint64_t shadow_lpt) {
  return fmt::pde::make(shadow_spt, shadow_lpt);
}

}  // namespace vgpu::shadow
