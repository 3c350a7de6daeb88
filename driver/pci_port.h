// SPDX-License-Identifier: GPL-2.0-or-later
// The PCI port: the driver inside a Linux guest, on the vgpu PCI device
// (1af4:10f0) found with libpciaccess. When the device is bound to
// vfio-pci, its BARs are mapped through VFIO and its MSI vectors arrive
// as eventfds (VfioDevice): fence waits sleep on them. Otherwise the BARs
// are mapped with libpciaccess and the driver polls (the fallback:
// docs/runtime.md). Register accesses are volatile 32-bit loads and
// stores on the mapped BARs; map() hands out the mapped BAR range itself.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "common/error.h"
#include "driver/port.h"
#include "driver/vfio_device.h"
#include "vgpu/formats.h"

struct pci_device;

namespace vgpu::driver {

class PciPort final : public Port {
 public:
  // The first vgpu device (or the one at domain:bus:dev.func if given as
  // "0000:00:04.0"). not_found when there is none.
  [[nodiscard]] static Result<std::unique_ptr<PciPort>> open(const std::string& slot = "");
  ~PciPort() override;

  uint32_t read32(Bar bar, uint64_t offset) override;
  void write32(Bar bar, uint64_t offset, uint32_t value) override;
  std::span<std::byte> map(Bar bar, uint64_t offset, uint64_t len) override;
  uint64_t bar_size(Bar bar) const override;
  std::string name() const override { return name_; }
  // Pinned memory from 2 MiB hugepages, addresses from /proc/self/pagemap
  // (driver/hugepage_pin.h).
  [[nodiscard]] Result<PinnedPages> pin(uint64_t bytes) override;
  void unpin(std::span<std::byte> host) override;
  bool has_interrupts() const override { return vfio_ != nullptr; }
  IrqCounts interrupt_counts() override { return vfio_ ? vfio_->counts() : IrqCounts{}; }
  bool wait_interrupt(const IrqCounts& seen, uint64_t timeout_ns) override {
    return vfio_ && vfio_->wait(seen, timeout_ns);
  }

 private:
  struct Region {
    std::byte* base = nullptr;
    uint64_t size = 0;
  };
  PciPort() = default;
  Region& region(Bar bar) { return regions_[static_cast<unsigned>(bar)]; }
  const Region& region(Bar bar) const { return regions_[static_cast<unsigned>(bar)]; }

  [[nodiscard]] Status map_with_pciaccess();
  pci_device* dev_ = nullptr;
  std::unique_ptr<VfioDevice> vfio_;  // null: libpciaccess mappings, no interrupts
  // VFIO's DMA mappings of each pinned buffer (by its host address).
  struct DmaRun {
    std::byte* host;
    uint64_t iova;
    uint64_t bytes;
  };
  static constexpr uint64_t PIN_PAGE = fmt::SMALL_PAGE;  // PinnedPages::bus lists 4 KiB pages
  std::map<std::byte*, std::vector<DmaRun>> dma_runs_;
  Region regions_[4];
  bool owned_[4] = {};  // mapped with libpciaccess
  std::string name_;
};

}  // namespace vgpu::driver
