// SPDX-License-Identifier: GPL-2.0-or-later
// A VM's view of its vGPU in the testbed, playing the hypervisor's part
// exactly as QEMU's memory map does: every BAR access goes either to the
// mediator's trap handlers or, for pages the mediator lists as direct (BAR
// remap), straight to VRAM through a window of shared mappings. The window
// follows the vGPU's layout generation. The port takes the vGPU's
// message handler: each message the vGPU sends counts (WithCountedIrqs),
// as the hypervisor would inject it.
#pragma once

#include <memory>
#include <mutex>

#include "driver/pinned_ram.h"
#include "driver/counted_irqs.h"
#include "driver/port.h"
#include "gpu/mem/bar_window.h"
#include "mediator/vgpu.h"

namespace vgpu::testbed {

class MediatedPort final : public driver::WithPinnedRam<driver::WithCountedIrqs<driver::Port>> {
 public:
  static Result<std::unique_ptr<MediatedPort>> create(mediator::Vgpu& vgpu, gpu::Vram& vram);

  uint32_t read32(driver::Bar bar, uint64_t offset) override;
  void write32(driver::Bar bar, uint64_t offset, uint32_t value) override;
  void fill32(driver::Bar bar, uint64_t offset, uint64_t bytes, uint32_t value) override;
  std::span<std::byte> map(driver::Bar bar, uint64_t offset, uint64_t len) override;
  uint64_t bar_size(driver::Bar bar) const override;
  void relax() override;
  std::string name() const override { return "mediated"; }
  ~MediatedPort() override;

  mediator::Vgpu& vgpu() { return vgpu_; }

 private:
  MediatedPort(mediator::Vgpu& vgpu) : vgpu_(vgpu) {}
  gpu::BarWindow* window(driver::Bar bar);
  void rebuild();
  void refresh();  // rebuild the windows if the vGPU's layout changed
  uint32_t* direct_word(driver::Bar bar, uint64_t offset, bool write);

  mediator::Vgpu& vgpu_;
  std::unique_ptr<gpu::BarWindow> bar1_, bar3_;
  uint64_t generation_ = 0;
};

}  // namespace vgpu::testbed
