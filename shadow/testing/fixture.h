// SPDX-License-Identifier: GPL-2.0-or-later
// Test support: a VRAM with one guest partition, and guest table writers.
#pragma once

#include <memory>

#include "gpu/mem/vram.h"
#include "shadow/counters.h"
#include "shadow/guest_memory.h"
#include "shadow/reserved_vram.h"
#include "vgpu/formats.h"

namespace vgpu::shadow::testing {

// Host VRAM: [0, 16 MiB) reserved, [16 MiB, 48 MiB) the guest partition,
// [48 MiB, 64 MiB) someone else's.
struct Fixture {
  static constexpr uint64_t RESERVED_BYTES = 16 * MiB;
  static constexpr uint64_t PART_BASE = 16 * MiB;
  static constexpr uint64_t PART_BYTES = 32 * MiB;
  static constexpr uint64_t VRAM_BYTES = 64 * MiB;

  std::unique_ptr<gpu::Vram> vram = gpu::Vram::create(VRAM_BYTES).value();
  ReservedVram reserved{*vram, 0, RESERVED_BYTES};
  GuestMemory guest{*vram, Partition{PART_BASE, PART_BYTES}};
  ShadowCounters counters;

  void guest_write64(uint64_t gaddr, uint64_t v) { vram->write64(PART_BASE + gaddr, v); }
  uint64_t host_read64(uint64_t haddr) { return vram->read64(haddr); }
  void guest_pde(uint64_t pd, uint64_t va, uint64_t spt, uint64_t lpt) {
    guest_write64(pd + fmt::PD.index(va) * 8, fmt::pde::make(spt, lpt));
  }
  void guest_pte(uint64_t table, uint64_t va, fmt::PageSize size, uint64_t value) {
    guest_write64(table + fmt::table_level(size).index(va) * 8, value);
  }
};

}  // namespace vgpu::shadow::testing
