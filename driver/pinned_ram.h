// SPDX-License-Identifier: GPL-2.0-or-later
// Pinned memory carved from RAM the port already knows the bus addresses
// of: the testbed's ports (native: the machine's RAM; mediated: the VM's
// guest RAM, a memfd whose guest-physical addresses start at bus_base).
// Pages are handed out in physically contiguous runs, first fit.
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>

#include "driver/allocator.h"
#include "driver/port.h"

namespace vgpu::driver {

class PinnedRam {
 public:
  PinnedRam(std::span<std::byte> ram, uint64_t bus_base)
      : ram_(ram), bus_base_(bus_base), free_("pinned RAM", 0, ram.size()) {}

  [[nodiscard]] Result<PinnedPages> pin(uint64_t bytes);
  void unpin(std::span<std::byte> host);
  uint64_t free_bytes() const;

 private:
  std::span<std::byte> ram_;
  uint64_t bus_base_;
  mutable std::mutex mutex_;
  RangeAllocator free_;
};

// A port whose pinned memory is carved from RAM it knows (the testbed's
// native and mediated ports): once set_pinned_ram has given it the RAM,
// pin/unpin come from a PinnedRam; before that, from Base (no DMA).
template <typename Base>
class WithPinnedRam : public Base {
 public:
  // Pinned memory from RAM whose page at ram[i] has bus address
  // bus_base + i (the testbed's machine RAM, or the VM's guest RAM).
  void set_pinned_ram(std::span<std::byte> ram, uint64_t bus_base) {
    pinned_ = std::make_unique<PinnedRam>(ram, bus_base);
  }
  [[nodiscard]] Result<PinnedPages> pin(uint64_t bytes) override {
    return pinned_ ? pinned_->pin(bytes) : Base::pin(bytes);
  }
  void unpin(std::span<std::byte> host) override {
    if (pinned_)
      pinned_->unpin(host);
    else
      Base::unpin(host);
  }

 private:
  std::unique_ptr<PinnedRam> pinned_;
};

}  // namespace vgpu::driver
