// SPDX-License-Identifier: GPL-2.0-or-later
// BAR1 and BAR3: apertures translated through the address space of the
// instance block that PBUS BAR1_INST/BAR3_INST names. The page directory
// and limit are read from the instance block when the register is written
// and again at every TLB invalidate (as hardware caches its binding).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>

#include "gpu/gpu.h"
#include "gpu/mem/mmu.h"
#include "gpu/mem/vram.h"

namespace vgpu::gpu {

class BarWindows {
 public:
  BarWindows(Vram& vram, Mmu& mmu) : vram_(vram), mmu_(mmu) {}

  static uint64_t size(Bar bar);
  // BAR*_INST was written, or a TLB invalidate happened: reload the binding.
  void bind(Bar bar, uint32_t inst_reg);
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  void bump_generation() { generation_.fetch_add(1, std::memory_order_acq_rel); }

  // Accesses from the CPU. A failed access returns the fault to record.
  Walk<uint32_t> read32(Bar bar, uint64_t offset);
  Walk<void> write32(Bar bar, uint64_t offset, uint32_t value);
  std::optional<BarPage> translate(Bar bar, uint64_t offset);

 private:
  struct Binding {
    bool translated = false;  // mode bit: through page tables; else VRAM directly
    AccessContext as;
  };
  Binding binding(Bar bar) const;
  Walk<Translation> lookup(Bar bar, uint64_t offset, bool write);

  Vram& vram_;
  Mmu& mmu_;
  mutable std::mutex mutex_;  // guards bar1_ and bar3_; taken after the model lock
  Binding bar1_;
  Binding bar3_;
  std::atomic<uint64_t> generation_{1};
};

}  // namespace vgpu::gpu
