// SPDX-License-Identifier: GPL-2.0-or-later
// A VM's RAM as the hypervisor reports it (never as the guest says): its
// guest-physical ranges and where each lies on the host bus that the
// physical GPU reaches by DMA. The one check of a guest system-memory
// address: a sysmem page (or page table) is confined to one of these
// ranges and moved to its host bus address, as a VRAM page is confined to
// the partition (shadow/entry.h). The testbed and QEMU (through the C
// API) set the ranges; the shadows read them on every scan.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <vector>

namespace vgpu::shadow {

struct RamRegion {
  uint64_t gpa = 0;       // guest-physical start
  uint64_t size = 0;      // bytes
  uint64_t host_bus = 0;  // where gpa lies on the host bus
};

class GuestRam {
 public:
  void set(std::vector<RamRegion> regions) {
    std::unique_lock lock(mutex_);
    regions_ = std::move(regions);
  }
  std::vector<RamRegion> regions() const {
    std::shared_lock lock(mutex_);
    return regions_;
  }
  // The host bus address of [gpa, gpa + len) if it lies wholly inside one
  // region (len 0 is never memory).
  std::optional<uint64_t> host(uint64_t gpa, uint64_t len) const {
    std::shared_lock lock(mutex_);
    for (const RamRegion& r : regions_)
      if (len && gpa >= r.gpa && gpa - r.gpa <= r.size && len <= r.size - (gpa - r.gpa))
        return r.host_bus + (gpa - r.gpa);
    return std::nullopt;
  }

 private:
  mutable std::shared_mutex mutex_;
  std::vector<RamRegion> regions_;
};

}  // namespace vgpu::shadow
