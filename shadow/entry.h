// SPDX-License-Identifier: GPL-2.0-or-later
// The one place where a guest page-table entry is validated and turned
// into a shadow entry. A guest entry that names memory outside its VM's
// partition (VRAM) or outside its VM's RAM (system memory, as the
// hypervisor reports it: shadow/guest_ram.h) becomes a faulting (zero)
// entry and is counted; it never becomes an access. Every shadowing path
// (full and lazy scans, the paravirtual server) validates through here.
#pragma once

#include <cstdint>

#include <optional>

#include "shadow/guest_memory.h"
#include "vgpu/formats.h"

namespace vgpu::shadow {

enum class Verdict {
  absent,    // the guest entry is not valid: the shadow entry is not either
  mapped,    // translated into the partition
  rejected,  // valid in the guest but outside the partition or the VM's RAM: faulting
};

struct ShadowPte {
  uint64_t value;
  Verdict verdict;
};

// The target check of every path that turns a guest's page into a shadow
// entry (page-table scans and the PV server): a page of `page` bytes at
// guest address `gaddr` in aperture `target` becomes host VRAM (VRAM inside
// the partition) or a host bus address (system memory wholly inside one
// region of the VM's `ram`), or is rejected. Without `ram` (the PV server,
// for now) system memory is rejected.
struct TargetPage {
  uint64_t host;  // host VRAM or host bus address; 0 when rejected
  Verdict verdict;
};
TargetPage check_target(fmt::Target target, uint64_t gaddr, uint64_t page, const Partition& partition,
                        const GuestRam* ram = nullptr);

// A guest PTE of a small or big page table, as the physical MMU must see it.
// A sysmem PTE whose page lies wholly in one region of `ram` keeps its
// aperture and gets the host bus address; with no ram, or outside it, it
// is rejected.
ShadowPte shadow_pte(uint64_t guest_pte, fmt::PageSize size, const Partition& partition, const GuestRam* ram = nullptr);
// The sysmem half of shadow_pte: the host bus address of the guest page
// [gpa, gpa + bytes), if the hypervisor's view of the VM's RAM holds it.
std::optional<uint64_t> confine_sysmem_page(uint64_t gpa, uint64_t bytes, const GuestRam* ram);

// One half of a guest PDE: the guest address of a page table, if it is a
// VRAM table that lies wholly inside the partition. Tables in system
// memory are rejected: the mediator does not shadow them (docs/spec/vgpu.md
// §15, D4b), whether or not they lie in the VM's RAM.
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
