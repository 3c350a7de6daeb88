// SPDX-License-Identifier: GPL-2.0-or-later
// vgpud: the host daemon. One mediator::Host (the physical GPU, the
// mediator, the scheduler) serves one vGPU to each client connected to
// the VM socket (a Session each, on its own thread); the control socket
// answers vgpuctl. The main thread accepts connections, samples GPU time
// for the shares, reaps ended sessions and stops on SIGTERM/SIGINT (a
// signalfd) or stop(). docs/vgpud.md.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "common/clock.h"
#include "mediator/host.h"
#include "vgpud/session.h"
#include "vgpud/share_history.h"
#include "vgpud/wire.h"

#ifndef VGPU_WORKER_DEFAULT
#error "VGPU_WORKER_DEFAULT (the installed vgpu-worker) comes from meson"
#endif

namespace vgpu::worker {
class WorkerGpuDevice;
}

namespace vgpu::vgpud {

struct DaemonConfig {
  std::string socket;             // VMs connect here
  std::string control_socket;     // vgpuctl connects here (default: socket + ".ctl")
  uint64_t vram_bytes = 4 * GiB;  // the physical GPU's VRAM (reserved part included)
  std::string scheduler = VGPU_OPT_SCHEDULER_DEFAULT;
  gpu::EngineBackend engine_backend = gpu::EngineBackend::model;  // --backend (docs/cuda.md)
  // --backend cuda (engine_backend worker): one worker process per VM
  // (docs/cuda-worker.md), each on this device (cuda or fake), started
  // from this executable; empty: find_worker_binary's at create().
  std::string worker_device = VGPU_OPT_WORKER_DEVICE_DEFAULT;
  std::string worker_binary;
  sched::PolicyParams sched_params;
  uint32_t max_vms = 8;
  std::optional<gid_t> group;                             // the sockets' group (mode 0660)
  uint32_t turn_ms = VGPU_OPT_TURN_MS_DEFAULT;            // a scheduler turn's slice (0: up to GP_PUT)
  uint32_t max_gpu_ms = VGPU_OPT_MAX_GPU_MS_DEFAULT;      // one GPFIFO entry's GPU time (0: no limit)
  uint32_t slice_blocks = VGPU_OPT_SLICE_BLOCKS_DEFAULT;  // every VM's slicing (auto: by time; 0: whole)
  bool ring_ahead = VGPU_OPT_RING_AHEAD_DEFAULT != 0;     // docs/scheduler.md, "Ringing ahead"
  uint32_t watchdog_ms = VGPU_OPT_WATCHDOG_MS_DEFAULT;    // every VM's operation watchdog (0: none)
};

// One line of the daemon's log on stderr: "TIME vgpud: LINE", TIME in UTC
// with milliseconds (none when stderr is systemd's journal, which has its own).
void log_line(const std::string& line);

// Reserved VRAM for `max_vms` VMs: the host's own structures and each
// VM's default shadow budget.
uint64_t reserved_for(uint32_t max_vms);

// The guest driver's default fence wait (driver::DeviceOptions::timeout_ns)
// and the part of it other VMs' work may take (the rest is a margin for
// the VM's own work and the host).
inline constexpr uint32_t DRIVER_WAIT_MS = 10'000;
inline constexpr uint32_t OTHERS_WAIT_BUDGET_MS = DRIVER_WAIT_MS * 9 / 10;
// max-gpu-ms when the command line does not give it: the embedded
// device's default, lowered so that `max_vms` VMs' legal work can never
// push a fence wait past the driver's default timeout, by the bound of
// docs/scheduler.md: (VMs - 1) * (turn + max-gpu-ms) <= OTHERS_WAIT_BUDGET_MS.
uint32_t default_max_gpu_ms(uint32_t max_vms, uint32_t turn_ms);

class Daemon final : public SessionHost {
 public:
  static Result<std::unique_ptr<Daemon>> create(const DaemonConfig& config);
  ~Daemon() override;

  // Serves until stop() or, when signal_fd >= 0, a byte (a signal
  // number) read from it.
  // Returns the name of what stopped it.
  std::string run(int signal_fd = -1);
  void stop();  // any thread

  // The control commands (control.cc), also for tests: the answer
  // without the control socket's first line.
  std::string control(const std::string& line);
  std::vector<VmStats> stats();
  // The daemon-wide figures of `list` and `stats` (control.cc).
  struct Totals {
    uint64_t vram_bytes = 0, reserved_bytes = 0, reserved_used_bytes = 0, assigned_bytes = 0, free_bytes = 0;
    double utilization_1s = 0, utilization_10s = 0;
  };
  Totals totals();
  uint64_t reserved_used() { return host_->reserved_used(); }
  uint64_t partitions_used() { return host_->partitions_used(); }

 private:
  explicit Daemon(const DaemonConfig& config) : config_(config) {}
  // SessionHost
  mediator::Host& host() override { return *host_; }
  uint32_t slice_blocks() const override { return config_.slice_blocks; }
  uint32_t watchdog_ms() const override { return config_.watchdog_ms; }
  std::expected<void, std::pair<proto::Refusal, std::string>> admit(const std::string& name, bool incoming) override;
  void release(const std::string& name) override;
  void log(const std::string& line) override;
  void session_ended() override;

  gpu::DeviceFactory worker_factory();
  void accept_vm();
  size_t max_connections() const { return size_t{config_.max_vms} * 4 + 16; }
  void serve_control();
  std::string list();
  std::string stats_json();
  std::string set_weight(const std::string& name, const std::string& weight);
  // The per-VM workers (control.cc `workers`); an error without --backend cuda.
  std::string workers();
  std::map<uint32_t, std::string> attached_names();  // vGPU id -> VM name
  // Workers that ended between commands (killed, crashed): their VMs'
  // channels fail once and the next worker starts (the main loop's sample).
  void respawn_ended_workers();
  void reap();
  void sample();

  DaemonConfig config_;
  std::unique_ptr<mediator::Host> host_;
  worker::WorkerGpuDevice* workers_ = nullptr;  // --backend cuda: the engines' device, owned by host_
  UniqueFd listen_fd_, control_fd_, wake_fd_;

  std::mutex mutex_;  // sessions_, names_, history_
  std::list<std::unique_ptr<Session>> sessions_;
  std::multiset<std::string> names_;  // admitted VMs (a name twice: a source and its incoming destination)
  ShareHistory history_;
  RealClock clock_;
  uint64_t next_sample_ns_ = 0;
};

}  // namespace vgpu::vgpud
