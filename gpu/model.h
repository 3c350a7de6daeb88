// SPDX-License-Identifier: GPL-2.0-or-later
// The software GPU model: Gpu implemented by registers in tables (one unit
// per file), BAR windows, PFIFO with its threads, VRAM and the MMU.
//
// Locking: one model lock guards every register and channel slot. MMIO
// handlers run under it; the PFIFO thread and the engine threads take it
// briefly. The MMU and the BAR windows have their own locks, always taken
// after the model lock. The interrupt and event handlers are called with
// no model lock held (notify.h).
#pragma once

#include <memory>
#include <mutex>

#include "common/reg_table.h"
#include "gpu/bar.h"
#include "gpu/device/device.h"
#include "gpu/device/residency.h"
#include "gpu/engines/device_work.h"
#include "gpu/engines/module_cache.h"
#include "gpu/fault_log.h"
#include "gpu/fb.h"
#include "gpu/gpu.h"
#include "gpu/kernels/kernels.h"
#include "gpu/mem/mmu.h"
#include "gpu/notify.h"
#include "gpu/pbus.h"
#include "gpu/pfifo.h"
#include "gpu/pmc.h"
#include "gpu/ptimer.h"

namespace vgpu::gpu {

class GpuModel final : public Gpu {
 public:
  static Result<std::unique_ptr<GpuModel>> create(const GpuConfig& config);
  ~GpuModel() override;

  uint32_t read32(uint32_t offset) override;
  void write32(uint32_t offset, uint32_t value) override;
  uint32_t channel_state(uint32_t chid) override;
  uint32_t bar_read32(Bar bar, uint64_t offset) override;
  void bar_write32(Bar bar, uint64_t offset, uint32_t value) override;
  uint64_t bar_size(Bar bar) const override { return BarWindows::size(bar); }
  std::optional<BarPage> bar_translate(Bar bar, uint64_t offset) override;
  uint64_t bar_generation() const override { return bars_.generation(); }
  void map_directly(uint64_t vram_addr, uint64_t bytes) override;
  Vram& vram() override { return *vram_; }
  Clock& clock() override { return *clock_; }
  // With a device, the memory's host mappings are registered with it
  // (docs/cuda.md, "System memory"): the new memory's before the old's go.
  void set_system_memory(std::shared_ptr<SystemMemory> sysmem) override;
  void set_interrupt_handler(std::function<void(bool asserted)> handler) override;
  void set_message_handler(std::function<void(regs::pci::MsiVector)> handler) override;
  void set_channel_event_handler(std::function<void(const ChannelEvent&)> handler) override;
  bool wait_idle(uint64_t timeout_ns) override;
  Result<ChannelImage> save_channel(uint32_t chid) override { return pfifo_.save_channel(chid); }
  Status restore_channel(uint32_t chid, const ChannelImage& image) override {
    return pfifo_.restore_channel(chid, image);
  }
  bool wait_stopped(uint32_t chid, uint64_t timeout_ns) override { return pfifo_.wait_stopped(chid, timeout_ns); }

  // For tests and statistics.
  Mmu& mmu() { return *mmu_; }
  EngineBackend engine_backend() const { return backend_; }
  Device* device() { return device_.get(); }                           // none: the model's engines
  ResidencyTracker* residency() override { return residency_.get(); }  // none: the model's engines
  // Placement-cache hits of the device path (none: the model's engines).
  std::optional<uint64_t> placement_hits() const;
  // Fences (one-word releases after engine work) the device wrote itself
  // (none: the model's engines).
  std::optional<uint64_t> device_releases() const;
  RegStats register_stats();
  bool interrupt_asserted() const { return irq_.asserted(); }
  uint64_t interrupt_messages() const { return irq_.messages(); }

 private:
  GpuModel(const GpuConfig& config, std::unique_ptr<Vram> vram, EngineBackend backend, std::unique_ptr<Device> device,
           bool device_fences);
  [[nodiscard]] Status build_register_table();
  uint32_t unit_interrupts() const;                      // lock held
  LineState line_state() const;                          // lock held: what the interrupt line is computed from
  bool gate_open(Gate g) const;                          // lock held
  void enable_changed(uint32_t before, uint32_t after);  // lock held
  void invalidate(std::optional<uint64_t> pdb);          // lock held
  void record_bar_fault(const Fault& f);
  void notify();  // no lock held

  // Configuration and memory.
  GpuConfig config_;
  Log log_;
  std::unique_ptr<Vram> vram_;
  // The engines' device (docs/cuda.md): after vram_ (it registers VRAM),
  // before pfifo_ (its threads use it).
  EngineBackend backend_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<ResidencyTracker> residency_;
  std::unique_ptr<DeviceEngines> device_engines_;
  std::unique_ptr<Clock> clock_;
  std::unique_ptr<Mmu> mmu_;
  std::mutex sysmem_mutex_;  // set_system_memory's attach/detach pairs, in order
  kernels::CostModel cost_;
  ModuleCache modules_;  // parsed PTX modules, shared by every channel (§10.6)

  // Units (registers under mutex_).
  mutable std::mutex mutex_;
  RegisterTable regs_;
  Pmc pmc_;
  Pbus pbus_;
  Ptimer ptimer_;
  FbUnits fb_;
  FaultLog faults_;
  BarWindows bars_;

  // Delivery to the host side, then PFIFO and its threads (stopped first).
  InterruptLine irq_;
  EventQueue events_;
  Pfifo pfifo_;
};

}  // namespace vgpu::gpu
