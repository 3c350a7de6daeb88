// SPDX-License-Identifier: GPL-2.0-or-later
// Instance memory: how the driver writes the VRAM it owns (instance blocks,
// page directories and tables, runlists). Like nouveau's nv50 instmem it
// starts on the "slow path", the 1 MiB PRAMIN window in BAR0, and moves to
// BAR3 once BAR3 maps the instance heap; VRAM outside the heap stays on
// PRAMIN.
#pragma once

#include <cstdint>
#include <span>

#include "driver/port.h"

namespace vgpu::driver {

struct InstMemStats {
  uint64_t pramin_accesses = 0;
  uint64_t bar3_accesses = 0;
  uint64_t window_moves = 0;
};

class InstMem {
 public:
  explicit InstMem(Port& port) : port_(port) {}

  uint32_t read32(uint64_t addr);
  void write32(uint64_t addr, uint32_t value);
  // Words relative to `base`, for the codecs of vgpu/formats.h.
  auto writer(uint64_t base) {
    return [this, base](uint32_t off, uint32_t value) { write32(base + off, value); };
  }
  uint64_t read64(uint64_t addr);
  void write64(uint64_t addr, uint64_t value);  // low word first
  // Sets [addr, addr + bytes) (4-byte aligned) to `value` words.
  void fill(uint64_t addr, uint64_t bytes, uint32_t value = 0);

  // BAR3 now maps VRAM [heap_base, heap_base + bytes) at BAR3 offset 0.
  void use_bar3(uint64_t heap_base, uint64_t bytes);
  bool bar3_active() const { return bar3_bytes_ != 0; }
  const InstMemStats& stats() const { return stats_; }

 private:
  bool in_bar3(uint64_t addr, uint64_t bytes) const {
    return bar3_bytes_ && addr >= bar3_base_ && addr - bar3_base_ + bytes <= bar3_bytes_;
  }
  uint64_t pramin_offset(uint64_t addr);  // moves the window if needed

  Port& port_;
  uint64_t window_ = ~uint64_t{0};
  uint64_t bar3_base_ = 0;
  uint64_t bar3_bytes_ = 0;
  std::span<std::byte> bar3_map_;  // direct mapping of the heap, when the port gives one
  InstMemStats stats_;
};

}  // namespace vgpu::driver
