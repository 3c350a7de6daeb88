// SPDX-License-Identifier: GPL-2.0-or-later
// gpu::SystemMemory over the front end's DMA callback (vgpu_backend_set_dma):
// in QEMU, pci_dma_read/pci_dma_write on the device. Bus addresses are
// the guest's physical addresses.
#pragma once

#include "capi/vgpu_capi.h"
#include "gpu/mem/system_memory.h"

namespace vgpu::capi {

class DmaMemory final : public gpu::SystemMemory {
 public:
  DmaMemory(VgpuDmaFn fn, void* opaque) : fn_(fn), opaque_(opaque) {}
  bool contains(uint64_t bus, uint64_t len) const override {
    return len == 0 || (bus + len >= bus && fn_(opaque_, bus, nullptr, len, VGPU_DMA_CHECK) == 0);
  }
  bool read(uint64_t bus, void* dst, uint64_t len) override {
    return len == 0 || (bus + len >= bus && fn_(opaque_, bus, dst, len, VGPU_DMA_READ) == 0);
  }
  bool write(uint64_t bus, const void* src, uint64_t len) override {
    return len == 0 || (bus + len >= bus && fn_(opaque_, bus, const_cast<void*>(src), len, VGPU_DMA_WRITE) == 0);
  }

 private:
  VgpuDmaFn fn_;
  void* opaque_;
};

}  // namespace vgpu::capi
