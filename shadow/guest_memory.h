// SPDX-License-Identifier: GPL-2.0-or-later
// A VM's VRAM partition: guest VRAM addresses [0, size) live at host VRAM
// [base, base + size). Everything the mediator reads of a guest (page
// tables, instance blocks, runlists, USERD) goes through this view, so an
// address outside the partition can never reach another VM's memory.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "gpu/mem/vram.h"
#include "shadow/guest_ram.h"

namespace vgpu::shadow {

struct Partition {
  uint64_t base = 0;
  uint64_t size = 0;
  constexpr bool contains(uint64_t gaddr, uint64_t len) const { return gaddr <= size && len <= size - gaddr; }
  constexpr uint64_t host(uint64_t gaddr) const { return base + gaddr; }
};

class GuestMemory {
 public:
  // ram: the VM's RAM as the hypervisor reports it; none: the VM has no
  // RAM the GPU may reach (every guest sysmem entry is rejected).
  GuestMemory(gpu::Vram& vram, Partition partition, std::shared_ptr<const GuestRam> ram = nullptr)
      : vram_(vram), partition_(partition), ram_(std::move(ram)) {}

  const Partition& partition() const { return partition_; }
  const GuestRam* ram() const { return ram_.get(); }
  gpu::Vram& vram() const { return vram_; }

  std::optional<uint32_t> read32(uint64_t gaddr) const {
    if (!partition_.contains(gaddr, sizeof(uint32_t)) || gaddr % sizeof(uint32_t)) return std::nullopt;
    return vram_.read32(partition_.host(gaddr));
  }
  std::optional<uint64_t> read64(uint64_t gaddr) const {
    if (!partition_.contains(gaddr, sizeof(uint64_t)) || gaddr % sizeof(uint64_t)) return std::nullopt;
    return vram_.read64(partition_.host(gaddr));
  }
  // Words relative to `base` for the codecs of vgpu/formats.h; outside the
  // partition a read gives 0.
  auto reader(uint64_t base) const {
    return [this, base](uint32_t off) { return read32(base + off).value_or(0); };
  }
  bool write32(uint64_t gaddr, uint32_t value) const {
    if (!partition_.contains(gaddr, sizeof(uint32_t)) || gaddr % sizeof(uint32_t)) return false;
    return vram_.write32(partition_.host(gaddr), value);
  }

 private:
  gpu::Vram& vram_;
  Partition partition_;
  std::shared_ptr<const GuestRam> ram_;
};

}  // namespace vgpu::shadow
