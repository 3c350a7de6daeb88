// SPDX-License-Identifier: GPL-2.0-or-later
// The C++ side of the C API: one abstract backend, implemented by the
// software GPU model (model_backend.cc, mode=passthrough) and by the
// mediator over it (mediator_backend.cc, mode=fv). vgpu_capi.cc owns
// the C boundary: validation, counters, and catching exceptions.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "capi/vgpu_capi.h"
#include "common/error.h"
#include <atomic>
#include <memory>

#include "common/log.h"
#include "gpu/gpu.h"
#include "mediator/host.h"
#include "vgpu/options.h"

namespace vgpu::worker {
class WorkerGpuDevice;
}

namespace vgpu::capi {

// backend=cuda in the embedded mediator: the engines' device, one worker
// process for this vGPU (capi/cuda_workers.cc), once the host made it;
// owned by the host.
struct WorkerSlot {
  std::atomic<worker::WorkerGpuDevice*> device{nullptr};
};

// The device's options once checked (vgpu_capi.cc validate): the VM's
// (VgpuConfig) and, for the embedded mediator, the host's (HostConfig),
// as the mediator takes them, so that each backend passes them on rather
// than copying them field by field.
struct BackendConfig {
  VgpuMode mode = VGPU_MODE_PASSTHROUGH;
  mediator::VgpuConfig vgpu;  // vram, channels, weight, remap, lazy shadow, pv, slicing, watchdog
  mediator::HostConfig host;  // scheduler, turns, max-gpu-ms, ring-ahead, engines, log (vram: the backend's)
  std::string socket;         // non-empty: the daemon's vGPU (daemon_backend.cc)
  std::string vm_name;
  bool incoming = false;  // a migration's destination (VgpuBackendConfig::incoming)
  // This VM's turns (VgpuTurnFn); empty: none.
  std::function<void(bool start, VgpuTurnEnd end, uint64_t gpu_ns)> turn;
  // The wait for the daemon's first answer; 0: VGPUD_TIMEOUT or vgpud's default.
  uint32_t daemon_timeout_ms = 0;
  std::shared_ptr<WorkerSlot> workers;  // backend=cuda (fv, embedded); else null
};

// backend=cuda, mode fv, embedded: the engines' device is a worker process
// for this vGPU (as vgpud's --backend cuda), its binary found or given;
// worker-device and worker-binary refused without it.
[[nodiscard]] Status set_cuda_workers(const VgpuBackendConfig& c, BackendConfig& config);
// The vGPU's worker for counters_json: pid, state, restarts, device and
// last failure; an empty object without workers.
nlohmann::ordered_json worker_json(const WorkerSlot* slot, uint32_t vm_id);

using IrqFn = void (*)(void* opaque, bool asserted);
using MsgFn = void (*)(void* opaque, unsigned vector);

// The front end's interrupt callbacks (the line, the messages): replaced
// at any time, called from backend threads, never both at once.
class InterruptSink {
 public:
  void set_line(IrqFn fn, void* opaque) {
    std::lock_guard lock(mutex_);
    line_ = fn;
    line_opaque_ = opaque;
  }
  void set_message(MsgFn fn, void* opaque) {
    std::lock_guard lock(mutex_);
    message_ = fn;
    message_opaque_ = opaque;
  }
  void line(bool asserted) {
    std::lock_guard lock(mutex_);
    if (line_ != nullptr) line_(line_opaque_, asserted);
  }
  void message(unsigned vector) {
    std::lock_guard lock(mutex_);
    if (message_ != nullptr) message_(message_opaque_, vector);
  }

 private:
  std::mutex mutex_;
  IrqFn line_ = nullptr;
  void* line_opaque_ = nullptr;
  MsgFn message_ = nullptr;
  void* message_opaque_ = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* kind() const = 0;

  virtual uint32_t bar0_read32(uint32_t offset) = 0;
  virtual void bar0_write32(uint32_t offset, uint32_t value) = 0;
  virtual uint32_t bar_read32(VgpuBar bar, uint64_t offset) = 0;
  virtual void bar_write32(VgpuBar bar, uint64_t offset, uint32_t value) = 0;
  virtual uint64_t bar_size(VgpuBar bar) const = 0;

  virtual uint64_t bar_generation() const = 0;
  // The BAR's layout when remapping is on (sorted, covering the BAR).
  virtual std::vector<VgpuBarRange> bar_layout(VgpuBar bar) = 0;

  virtual int vram_fd() const = 0;
  virtual uint64_t vram_size() const = 0;

  // A device reset: PMC.ENABLE cleared, as a guest's reset.
  virtual void reset() = 0;

  // Where the interrupt line and messages go.
  InterruptSink& interrupts() { return interrupts_; }

  // Backend-specific counters as a JSON object whose members follow the C
  // API's own (vgpu_backend_counters_json); an empty object when none.
  virtual nlohmann::ordered_json counters_json() const = 0;

  // What the front end traces (vgpu_backend_event_counts); zeros by default.
  virtual VgpuEventCounts event_counts() const { return {}; }
  // With a socket: the daemon's scheduler ("" when it did not say) and the
  // VM's name there. Embedded: empty.
  virtual std::string daemon_scheduler() const { return {}; }
  virtual std::string daemon_vm_name() const { return {}; }

  // How the device reaches guest memory (vgpu_backend_set_dma), and the
  // VM's RAM (vgpu_backend_set_guest_ram). The daemon backend has neither
  // yet (unsupported).
  virtual Status set_dma(VgpuDmaFn fn, void* opaque) = 0;
  virtual Status set_guest_ram(const std::vector<VgpuRamRange>& ranges) = 0;

  // Live migration (docs/migration.md; vgpu_backend_freeze and the rest).
  // A backend that cannot migrate says why here, and every call below
  // fails with that reason.
  virtual std::string migration_refusal() const = 0;
  virtual Status freeze(uint64_t /*timeout_ms*/) { return refused(); }
  virtual void thaw() {}
  // The source's migration completed (vgpu_backend_migrated): free what it held.
  virtual void migrated() {}
  // Pages of guest VRAM written by the device: logging on or off, and the
  // marks since the last take OR-ed into bitmap (bit i = guest VRAM page i).
  virtual Status dirty_log(bool on) { return on ? refused() : Status{}; }
  virtual Result<uint64_t> dirty_log_take(std::span<uint64_t> /*bitmap*/) { return std::unexpected(refused().error()); }
  virtual Result<std::vector<uint8_t>> save_state() { return std::unexpected(refused().error()); }
  // Device-only VRAM (vgpu_backend_device_only_bytes, _write_back): the
  // bytes downloaded and the device-only bytes left.
  struct WriteBack {
    uint64_t bytes = 0, left = 0;
  };
  virtual Result<uint64_t> device_only_bytes() { return std::unexpected(no_write_back().error()); }
  virtual Result<WriteBack> write_back(uint64_t /*budget*/) { return std::unexpected(no_write_back().error()); }
  virtual Status load_state(std::span<const uint8_t> /*image*/) { return refused(); }

 protected:
  InterruptSink interrupts_;

 private:
  Status refused() const { return fail(Errc::unsupported, migration_refusal()); }
  Status no_write_back() const {
    if (!migration_refusal().empty()) return refused();
    return fail(Errc::unsupported,
                "vgpu: this backend does not write device-only VRAM back during pre-copy (the freeze downloads it)");
  }
};

// Picks the backend for config.mode.
[[nodiscard]] Result<std::unique_ptr<Backend>> make_backend(const BackendConfig& config);
[[nodiscard]] Result<std::unique_ptr<Backend>> make_mediator_backend(const BackendConfig& config);
[[nodiscard]] Result<std::unique_ptr<Backend>> make_daemon_backend(const BackendConfig& config);

// One trapped range over a whole BAR: the layout with remapping off.
std::vector<VgpuBarRange> all_trapped(uint64_t bar_size);

}  // namespace vgpu::capi
