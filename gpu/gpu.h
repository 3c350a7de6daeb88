// SPDX-License-Identifier: GPL-2.0-or-later
// The software GPU model: the physical GPU backend. It implements the
// device contract of docs/spec/vgpu.md as hardware would. The mediator,
// the native driver port and the QEMU device all talk to it through this
// interface; a backend for a real GPU will implement the same one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "gpu/mem/system_memory.h"
#include "gpu/mem/vram.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {

struct ChannelImage;  // gpu/channel_image.h

enum class Bar : uint8_t { bar0 = 0, bar1 = 1, bar3 = 3 };

// Who runs the copy and compute engines' work (docs/cuda.md).
enum class EngineBackend : uint8_t {
  model,        // the CPU, on host views of VRAM (the default)
  cuda,         // an NVIDIA GPU through CUDA (built with -Dcuda)
  fake_device,  // the device path on host memory (tests: no GPU needed)
  worker,       // one worker process per VM (worker/gpu_device.h), made by GpuConfig::device_factory
};

class Device;
class VmDevices;
class ResidencyTracker;  // gpu/device/residency.h
// Makes a device back end built outside gpu/ (the per-VM workers).
using DeviceFactory = std::function<Result<std::unique_ptr<Device>>(Vram&)>;

struct GpuConfig {
  uint64_t vram_bytes = 256 * 1024 * 1024;
  ClockKind clock = ClockKind::real;
  LogFn log;  // guest errors and internal errors; default: stderr (common/log.h)
  // model: unless the environment variable VGPU_ENGINE_BACKEND names
  // another (how the test and benchmark suites run on a GPU machine).
  EngineBackend backend = EngineBackend::model;
  // The system memory the GPU reaches by DMA through sysmem PTEs and
  // tables (docs/spec/vgpu.md §4.5); none: every sysmem access faults.
  std::shared_ptr<SystemMemory> sysmem;
  // Set: the engines' device comes from here instead of `backend`'s, and
  // the back end is worker.
  DeviceFactory device_factory;
};

// One BAR1/BAR3 page as the BAR's page tables map it right now.
struct BarPage {
  uint64_t bar_offset;  // start of the page in the BAR
  uint64_t vram_addr;   // VRAM address it maps to
  uint64_t bytes;       // page size (4 KiB or 128 KiB)
  bool read_only;
};

// Something a channel did that the host side (mediator, scheduler) needs
// to know about. Delivered on a model thread; handlers must not block.
struct ChannelEvent {
  enum class Kind {
    idle,      // GP_GET caught up with GP_PUT and all engine work retired
    error,     // the channel stopped with an error (CHAN_ERROR holds the code)
    nonstall,  // NON_STALL_INTERRUPT or an awaken semaphore
    slice,     // stopped at a slice boundary of a divided launch (CHAN_SLICE hold): GP_PUT resumes it
  };
  Kind kind;
  uint32_t chid;
  uint64_t start_ns;  // idle, slice: when this busy period (or the run since the last resume) began
  uint64_t end_ns;    // idle, slice: when the last work retired; others: event time
};

class Gpu {
 public:
  static Result<std::unique_ptr<Gpu>> create(const GpuConfig& config);
  virtual ~Gpu() = default;

  // BAR0: 32-bit registers. Unimplemented offsets read regs::BAD_REGISTER.
  virtual uint32_t read32(uint32_t offset) = 0;
  virtual void write32(uint32_t offset, uint32_t value) = 0;
  // PFIFO.CHAN_STATE[chid] as read32 gives it, for every mediator read of
  // it (Host::physical_state: each dispatch's check for a channel held at a
  // slice boundary, the watchdog's parked-channel check, the engine-idle
  // wait at a VM's destruction): a model reads it without the clock poll
  // and the interrupt and event delivery a register read makes (reading it
  // changes nothing that would need them).
  virtual uint32_t channel_state(uint32_t chid);

  // BAR1 and BAR3 as a CPU access sees them: translated through the BAR's
  // page tables. A fault is recorded (unit bar1/bar3), the read gives all
  // ones and the write is dropped. BAR1 writes to a USERD GP_PUT are the
  // doorbell that wakes PFIFO.
  virtual uint32_t bar_read32(Bar bar, uint64_t offset) = 0;
  virtual void bar_write32(Bar bar, uint64_t offset, uint32_t value) = 0;
  virtual uint64_t bar_size(Bar bar) const = 0;
  // The page behind a BAR offset, for direct mappings; none if unmapped.
  virtual std::optional<BarPage> bar_translate(Bar bar, uint64_t offset) = 0;
  // Changes whenever a BAR's translation may have changed (BAR instance
  // register written, BAR TLB invalidated). Direct mappings compare it.
  virtual uint64_t bar_generation() const = 0;
  // Someone other than bar_translate's caller (the mediator's BAR remap)
  // is about to map these VRAM bytes for CPU accesses the GPU will not
  // see. A device back end keeps them valid on the host (docs/cuda.md).
  virtual void map_directly(uint64_t /*vram_addr*/, uint64_t /*bytes*/) {}

  virtual Vram& vram() = 0;
  virtual Clock& clock() = 0;
  // Where a device back end mirrors VRAM, which pages are valid where
  // (migration writes device-only pages back, docs/migration.md §8).
  // None: the model's engines, whose VRAM is always the host's.
  virtual ResidencyTracker* residency() { return nullptr; }
  // Replaces the system memory (nullptr: none). DMA in flight finishes on
  // the old one; flush the TLB if translations may name what went away.
  virtual void set_system_memory(std::shared_ptr<SystemMemory> sysmem) = 0;

  // The interrupt line (PMC INTR_0 & mask, if INTR_EN_0) changed level.
  virtual void set_interrupt_handler(std::function<void(bool asserted)> handler) = 0;
  // An interrupt message: a non-stall interrupt or a channel error was
  // raised while enabled (spec §11.6), whatever the line's level. Same
  // delivery rules as the line.
  virtual void set_message_handler(std::function<void(regs::pci::MsiVector)> handler) = 0;
  virtual void set_channel_event_handler(std::function<void(const ChannelEvent&)> handler) = 0;

  // Wait until no channel has work and every engine is idle (tests, teardown).
  virtual bool wait_idle(uint64_t timeout_ns) = 0;

  // Migration (docs/migration.md M4, gpu/channel_image.h): a stopped
  // channel's run state (the host-class methods' state and its subchannel
  // objects), and the same put back into a channel bound and not run since.
  [[nodiscard]] virtual Result<ChannelImage> save_channel(uint32_t chid) = 0;
  [[nodiscard]] virtual Status restore_channel(uint32_t chid, const ChannelImage& image) = 0;
  // An unrunnable channel out of PFIFO's hands: none of its methods (a
  // semaphore release writes memory) runs any more. False if it is
  // runnable or timeout_ns passed first.
  [[nodiscard]] virtual bool wait_stopped(uint32_t chid, uint64_t timeout_ns) = 0;
};

}  // namespace vgpu::gpu
