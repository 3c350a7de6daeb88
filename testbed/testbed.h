// SPDX-License-Identifier: GPL-2.0-or-later
// The in-process testbed: the guest driver, the mediator and the software
// GPU in one process, each VM a thread. Modes:
//   native    one VM straight on the GPU model (the baseline);
//   fv-naive  full virtualization, every BAR access trapped, shadows
//             rescanned in full at every sync point;
//   fv-opt    full virtualization with BAR remap and lazy shadowing;
//   pv        fv-opt with the paravirtual interface (pv=on), the driver
//             using it (DeviceOptions::paravirtual, pv-driver/).
// Above the address-space layer nothing in the driver changes between
// modes: only the Port does (and, in pv, the page tables' back end).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "driver/port.h"
#include "driver/runtime.h"
#include "gpu/gpu.h"
#include "mediator/host.h"

namespace vgpu::testbed {

enum class Mode { native, fv_naive, fv_opt, pv };
const char* mode_name(Mode m);
// The name without its dash ("fvopt"): an identifier, for test names.
std::string mode_identifier(Mode m);
Result<Mode> parse_mode(std::string_view name);

struct TestbedConfig {
  Mode mode = Mode::native;
  uint32_t vms = 1;  // native: exactly 1
  uint64_t vram_per_vm = 512 * MiB;
  // Each VM's guest RAM: a memfd (sparse: untouched pages cost nothing),
  // guest-physical [0, ram_per_vm). Native: the machine's RAM, bus
  // addresses [0, ram_per_vm). The GPU reaches it by DMA; the driver pins
  // from it.
  uint64_t ram_per_vm = 256 * MiB;
  uint32_t channels_per_vm = 8;
  // fv modes: the engines' device (mediator::HostConfig::device_factory).
  gpu::DeviceFactory device_factory;
  std::string scheduler = mediator::HostConfig{}.scheduler;
  uint64_t turn_ns = mediator::HostConfig{}.turn_ns;                    // a turn's time slice (0: up to GP_PUT)
  uint64_t turn_hold_ns = mediator::HostConfig{}.turn_hold_ns;          // a dry turn waits this for its VM (0: ends)
  uint64_t turn_hold_max_ns = mediator::HostConfig{}.turn_hold_max_ns;  // ... or its think time, up to this
  bool ring_ahead = mediator::HostConfig{}.ring_ahead;                  // docs/scheduler.md, "Ringing ahead"
  bool slice_on_demand = mediator::HostConfig{}.slice_on_demand;        // docs/scheduler.md, "Cutting on demand"
  uint32_t max_gpu_ms = mediator::HostConfig{}.max_gpu_ms;              // one GPFIFO entry's GPU time (0: no limit)
  std::vector<uint32_t> weights;                                        // per VM; empty = all 1
  uint32_t watchdog_ms = mediator::VgpuConfig{}.watchdog_ms;            // every VM's operation watchdog (0: none)
  // fv modes: slicing (VGPU_OPT_SLICE_BLOCKS) per VM, or one value for
  // every VM; empty = the default (auto).
  std::vector<uint32_t> slice_blocks;
  ClockKind clock = ClockKind::real;
  driver::DeviceOptions device;
  LogFn log;  // guest and internal errors (common/log.h); default stderr
  // fv modes: told of each turn (mediator::HostConfig::on_turn).
  std::function<void(const mediator::TurnEvent&)> on_turn;
};

// What a VM's thread gets: its port and its opened device.
struct Vm {
  uint32_t index;
  driver::Port& port;
  driver::Device& device;
};

class Testbed {
 public:
  static Result<std::unique_ptr<Testbed>> create(const TestbedConfig& config);
  ~Testbed();

  const TestbedConfig& config() const { return config_; }
  uint32_t vms() const { return static_cast<uint32_t>(ports_.size()); }
  driver::Port& port(uint32_t vm) { return *ports_[vm]; }
  // fv modes only: the vGPU behind a VM and the host.
  mediator::Vgpu* vgpu(uint32_t vm) { return vm < vgpus_.size() ? vgpus_[vm] : nullptr; }
  mediator::Host* host() { return host_.get(); }
  // A VM's guest RAM (native: the machine's RAM).
  gpu::MemfdRam& ram(uint32_t vm) { return *rams_[vm]; }
  gpu::Gpu& gpu();

  // Open the driver on every VM, then run fn(vm) in one thread per VM,
  // all started together. Returns each VM's status (a failed open is that
  // VM's status).
  std::vector<Status> run(const std::function<Status(Vm&)>& fn);

  // Counters of a VM's vGPU (fv modes), none in native mode.
  std::optional<mediator::CounterSnapshot> counters(uint32_t vm) const;

 private:
  explicit Testbed(const TestbedConfig& c) : config_(c) {}
  TestbedConfig config_;
  std::unique_ptr<gpu::Gpu> gpu_;         // native mode
  std::unique_ptr<mediator::Host> host_;  // fv modes
  std::vector<mediator::Vgpu*> vgpus_;
  std::vector<std::shared_ptr<gpu::MemfdRam>> rams_;  // per VM; outlive the vGPUs' bus windows
  std::vector<std::unique_ptr<driver::Port>> ports_;
};

}  // namespace vgpu::testbed
