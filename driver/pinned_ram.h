// SPDX-License-Identifier: GPL-2.0-or-later
// Pinned memory carved from RAM the port already knows the bus addresses
// of: the testbed's ports (native: the machine's RAM; mediated: the VM's
// guest RAM, a memfd whose guest-physical addresses start at bus_base).
// Pages are handed out in physically contiguous runs, first fit.
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
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

}  // namespace vgpu::driver
