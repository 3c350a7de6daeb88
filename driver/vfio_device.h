// SPDX-License-Identifier: GPL-2.0-or-later
// A PCI device through Linux VFIO, from user space: its BARs mapped from
// the device file, Bus Master Enable set (MSIs are memory writes), and one
// eventfd per MSI vector (VFIO_DEVICE_SET_IRQS). The group is /dev/vfio/N
// behind an IOMMU (the test guest's virtual intel-iommu) or
// /dev/vfio/noiommu-N on a kernel with VFIO's no-IOMMU mode
// (docs/runtime.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/irq_counter.h"

namespace vgpu::driver {

class VfioDevice {
 public:
  // The device at slot ("0000:00:04.0") if it is bound to vfio-pci;
  // not_found if it is not (the caller falls back), io_error if VFIO
  // refuses it.
  [[nodiscard]] static Result<std::unique_ptr<VfioDevice>> open(const std::string& slot);
  ~VfioDevice();
  VfioDevice(const VfioDevice&) = delete;
  VfioDevice& operator=(const VfioDevice&) = delete;

  struct Mapping {
    std::byte* base = nullptr;
    uint64_t size = 0;
  };
  // mmap of BAR `index` (PCI numbering).
  [[nodiscard]] Result<Mapping> map_bar(unsigned index);

  // Lets the device reach `host` by DMA at bus address `iova` (whole 4 KiB
  // pages, read and write): VFIO_IOMMU_MAP_DMA behind an IOMMU; nothing to
  // do in no-IOMMU mode, where the bus address is the physical one.
  [[nodiscard]] Status map_dma(std::span<std::byte> host, uint64_t iova);
  void unmap_dma(uint64_t iova, uint64_t bytes);

  // Messages per vector so far (eventfds drained without blocking). With
  // one MSI vector granted, every message counts on every vector.
  IrqCounts counts();
  // Until counts() != seen (true) or timeout_ns passes (false); any
  // number of threads may wait at once.
  bool wait(const IrqCounts& seen, uint64_t timeout_ns);
  unsigned vectors() const { return static_cast<unsigned>(eventfds_.size()); }

 private:
  VfioDevice() = default;
  [[nodiscard]] Status enable_bus_master();
  [[nodiscard]] Status enable_msi();
  [[nodiscard]] Status set_msi(unsigned vectors);
  void drain();  // mutex_ held

  int container_ = -1, group_ = -1, device_ = -1;
  bool iommu_ = false;         // type1: DMA needs mappings; no-IOMMU: it does not
  std::vector<int> eventfds_;  // one per granted MSI vector
  std::vector<Mapping> maps_;
  std::mutex mutex_;
  std::condition_variable cv_;  // the poller's drains, for the other waiters
  bool polling_ = false;        // a thread is in poll() on eventfds_
  IrqCounts counts_{};
  std::string name_;
};

}  // namespace vgpu::driver
