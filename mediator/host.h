// SPDX-License-Identifier: GPL-2.0-or-later
// The host: owns the physical GPU, the hypervisor-reserved VRAM, the
// scheduler and every vGPU. It is the physical GPU's only driver: it brings
// the GPU up, keeps the physical runlist, rings physical doorbells, and
// routes what the GPU reports (channel idle, errors, faults, non-stall
// interrupts) to the vGPU that owns the channel.
//
// Threads: the GPU's channel events are handled on the thread that raised
// them (a model thread, or an MMIO caller) once it holds no model lock and
// no mediator lock (mediator/lock.h); a scheduling step, and so
// Engine::start, runs on the thread that submitted or completed work, or
// on the dispatcher's thread after a timed retry. Lock order: a vGPU's
// mutex, then the host's; the host never calls into a vGPU while holding
// its own. Every mediator mutex is taken through MediatorLock.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <atomic>
#include <optional>
#include <string>
#include <condition_variable>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "common/change_teller.h"
#include "common/error.h"
#include "common/log.h"
#include "gpu/gpu.h"
#include "mediator/lock.h"
#include "mediator/turn.h"
#include "mediator/vgpu.h"
#include "scheduler/dispatcher.h"
#include "scheduler/policy.h"
#include "shadow/reserved_vram.h"

namespace vgpu::mediator {

struct HostConfig {
  uint64_t vram_bytes = 4 * GiB;        // physical VRAM (a sparse memfd: untouched pages cost nothing)
  uint64_t reserved_bytes = 256 * MiB;  // hypervisor-reserved: shadows, instance blocks, USERD, runlists
  ClockKind clock = ClockKind::real;
  std::string scheduler = VGPU_OPT_SCHEDULER_DEFAULT;  // fifo | credit | band
  // Who runs the engines' work (docs/cuda.md); model: unless VGPU_ENGINE_BACKEND says otherwise.
  gpu::EngineBackend engine_backend = gpu::EngineBackend::model;
  // Set: the engines' device comes from here (the per-VM workers,
  // worker/gpu_device.h); each vGPU's partition and channels are given to
  // it as the vGPU is created and taken back as it is destroyed.
  gpu::DeviceFactory device_factory;
  sched::PolicyParams sched_params;
  // A turn's time slice (VGPU_OPT_TURN_MS; mediator/turn_slice.h): 0 runs
  // a turn up to GP_PUT.
  uint64_t turn_ns = uint64_t{VGPU_OPT_TURN_MS_DEFAULT} * 1'000'000;
  // Turn hold (docs/scheduler.md): when a turn's channel runs dry with
  // time left in its slice, the GPU waits this long for the same VM's next
  // launch before it goes to another VM (real clocks and bounded turns
  // only; 0: end the turn at once). A VM that launches again at once keeps
  // its data in the caches and costs no switch.
  uint64_t turn_hold_ns = 200'000;
  // The hold follows each VM's think time (mediator/think_time.h): the
  // time from its channel's dry end to its next launch; a dry turn is held
  // twice its mean plus four deviations, at least turn_hold_ns and at most
  // this. A TCG guest through vgpud comes back after 0.6-1.1 ms on the
  // 2-core build machine: with the 200 us floor alone, BAND gave a 10:30
  // pair 0.33 / 0.67 (docs/scheduler.md, "Turn hold").
  uint64_t turn_hold_max_ns = 2'000'000;
  // Ringing ahead (docs/scheduler.md): a doorbell that brings a VM more
  // work while its turn's piece is still on the GPU rings the next entry
  // behind it, when the turn has time and no other VM waits (bounded turns
  // only). Off: the next entry waits for the host to see the piece end
  // (VGPU_OPT_RING_AHEAD); on the H100 and H200 that put PFIFO's fetch of
  // an fv-opt fill 5.0-5.2 us after the guest's doorbell, against 1.2-1.9
  // us with it on.
  bool ring_ahead = VGPU_OPT_RING_AHEAD_DEFAULT != 0;
  // Cutting on demand (docs/scheduler.md): a VM's timed pieces (slice-blocks
  // auto) end at their time only while another VM waits for the GPU (the
  // host sets the GPU's SLICE_YIELD then); a VM alone runs its launches and
  // copies on, as if whole. Off: every timed piece ends at its time.
  bool slice_on_demand = true;
  // The longest one GPFIFO entry of a VM may hold the GPU
  // (VGPU_OPT_MAX_GPU_MS; the GPU's ENGINE_TIMEOUT): 0, no limit.
  uint32_t max_gpu_ms = VGPU_OPT_MAX_GPU_MS_DEFAULT;
  // Guest errors (bad registers, bad values) and internal errors (the
  // host's own failures) go here, rate-limited (common/log.h); default:
  // stderr. Guest errors are also counted and the last ones kept in each
  // vGPU's recent-error list.
  LogFn log;
  // Told when a turn starts and ends (QEMU's trace events), each turn's
  // start before its end. Called on the thread that starts or ends it (a
  // VM's MMIO thread, the GPU's event thread, the watchdog) with no
  // mediator lock held; a start before its work reaches the GPU, an end
  // with the scheduler's lock held, before the next turn is dispatched. It
  // must be quick, must not block and must not call into the host.
  std::function<void(const TurnEvent&)> on_turn;
};

class Host final : private DeferredSink {
 public:
  static Result<std::unique_ptr<Host>> create(const HostConfig& config);
  ~Host();
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  // A new vGPU with its own VRAM partition (zeroed) and channel range.
  Result<Vgpu*> create_vgpu(const VgpuConfig& config);

  // A VM's RAM as the hypervisor reports it (never as the guest says):
  // guest-physical ranges, each backed by `memory` from `offset` (whether
  // the memory holds the range is seen at DMA time). The host
  // gives the VM a slot of the GPU's bus (BUS_SLOT bytes at slot index x
  // BUS_SLOT, slot 0 unused) and places the ranges in it in order; the
  // shadows confine the VM's sysmem PTEs to them (shadow/entry.h). Replaces
  // the VM's earlier RAM: DMA to ranges that went away faults at once.
  struct GuestRamRange {
    uint64_t gpa;
    uint64_t size;
    std::shared_ptr<gpu::SystemMemory> memory;
    uint64_t offset = 0;
  };
  static constexpr uint64_t BUS_SLOT = 16 * GiB;
  static constexpr uint32_t BUS_SLOTS = static_cast<uint32_t>(fmt::VA_LIMIT / BUS_SLOT);
  [[nodiscard]] Status set_guest_ram(Vgpu& vgpu, std::vector<GuestRamRange> ranges);
  void destroy_vgpu(Vgpu* vgpu);

  gpu::Gpu& gpu() { return *gpu_; }
  shadow::ReservedVram& reserved() { return *reserved_; }
  uint64_t reserved_used() const { return reserved_->used(); }
  uint64_t partitions_used() const { return partitions_->used(); }  // VRAM handed to vGPUs
  std::string_view scheduler_name() const { return dispatcher_->policy_name(); }
  const HostConfig& config() const { return config_; }  // as created
  uint64_t gpu_ns(uint32_t vgpu_id) const { return dispatcher_->gpu_ns(vgpu_id); }
  size_t queued_submissions(uint32_t vgpu_id) const { return dispatcher_->queued(vgpu_id); }
  // A vGPU's scheduler weight, changed at run time (1..VGPU_OPT_WEIGHT_MAX).
  [[nodiscard]] Status set_weight(uint32_t vgpu_id, uint32_t weight);
  uint32_t weight(uint32_t vgpu_id) const { return dispatcher_->weight(vgpu_id); }

  // ---- for vGPUs
  void submit(uint32_t vgpu_id, uint32_t gchid);
  // A channel the VM unbound: submission `seq` of it, if it is the one on
  // the GPU, has had its turn.
  void channel_stopped(uint32_t vgpu_id, uint32_t gchid, uint64_t seq);
  void bind_physical(uint32_t pchid, uint64_t shadow_inst, uint32_t slice_blocks, uint32_t watchdog_ms);
  // The time of a piece of a VM's work with timed slicing (the default):
  // 1/VGPU_OPT_SLICE_TURN_FRACTION of the turn (of the default turn when
  // turns are unbounded), and at most half of max-gpu-ms.
  uint64_t slice_ns() const;
  // Cutting on demand (docs/scheduler.md): the host asks for the engines
  // (the GPU's SLICE_YIELD) while another VM waits or while a hold is
  // taken; a freeze takes one until its VM's work is at a slice boundary.
  void hold_slice_yield(bool take);
  void unbind_physical(uint32_t pchid);
  void set_runnable(uint32_t pchid, bool runnable);
  uint32_t physical_state(uint32_t pchid);
  void set_runlist(uint32_t vgpu_id, std::vector<uint32_t> pchids);  // and commit the physical runlist
  void invalidate_physical(uint64_t shadow_pd);
  // Drops every translation the physical TLB caches: the shootdown that
  // lets quarantined shadow memory be reused (shadow/reserved_vram.h).
  void invalidate_all_physical();
  uint64_t host_userd(uint32_t pchid) const { return userd_base_ + uint64_t{pchid} * regs::userd::SIZE; }
  void ring_physical(uint32_t pchid, uint32_t put);
  uint64_t now_ns() { return gpu_->clock().now_ns(); }
  bool turns_bounded() const { return turn_->bounded(); }  // mediator/turn.h
  void log_guest_error(const std::string& line) { log_.guest_error(line); }
  void log_internal_error(const std::string& line) { log_.internal_error(line); }
  // The turns of every VM on this GPU (mediator/turn.h).
  Turn& turn() { return *turn_; }
  TurnCounts turn_counts() const { return turn_->counts(); }

 private:
  explicit Host(const HostConfig& config);
  Status bring_up();
  void internal_failure(const char* doing, const char* what) noexcept;
  void post(const gpu::ChannelEvent& e);  // the GPU's event handler
  void run_deferred_events() override;    // DeferredSink: handle queued events, in order
  void handle(const gpu::ChannelEvent& e);
  void watchdog_main();
  void check_parked_channel();
  bool wait_engines_idle(const Vgpu& v);  // false: still running after the longest launch
  std::shared_ptr<Vgpu> owner(uint32_t pchid);
  std::shared_ptr<Vgpu> find(uint32_t vgpu_id);
  void commit_runlist_locked();
  // Writes SLICE_YIELD when what the host asks for changed: one thread at
  // a time, in a loop until nothing changed since it looked (the write
  // delivers GPU events on this thread, and their handlers may call in).
  void write_slice_yield();
  // The watchdog times a held turn's end (Turn::hold_deadline_ns).
  void wake_watchdog();

  HostConfig config_;
  Log log_;
  // The engines' device where it keeps VMs apart (the per-VM workers).
  gpu::VmDevices* vm_devices();
  std::unique_ptr<gpu::Gpu> gpu_;
  // The GPU's system memory: one window per VM RAM range, in that VM's slot.
  std::shared_ptr<gpu::BusMap> bus_ = std::make_shared<gpu::BusMap>();
  struct BusSlot {
    uint32_t vgpu_id = 0;  // 0: free
    std::vector<uint64_t> windows;
  };
  std::array<BusSlot, BUS_SLOTS> bus_slots_{};  // under mutex_
  void release_bus_slot(uint32_t vgpu_id);      // mutex_ held
  std::unique_ptr<shadow::ReservedVram> reserved_;
  std::unique_ptr<shadow::ReservedVram> partitions_;
  // The turn is the dispatcher's engine: declared first, destroyed last.
  std::unique_ptr<Turn> turn_;
  std::unique_ptr<sched::Dispatcher> dispatcher_;
  std::atomic<bool> others_waiting_{false};  // the dispatcher's queue observer's
  std::atomic<uint32_t> yield_holds_{0};     // hold_slice_yield's
  ChangeTeller yield_teller_;                // write_slice_yield's

  uint64_t userd_base_ = 0;                // host VRAM: USERD pages of all physical channels
  std::array<uint64_t, 2> runlist_buf_{};  // double-buffered physical runlist
  unsigned runlist_next_ = 0;

  std::mutex mutex_;  // vGPU registry, runlists, physical register sequences
  // The MMU's two-register invalidate sequence. Taken last, on its own,
  // so that a pool may run a shootdown under any other mediator lock.
  std::mutex mmu_mutex_;
  std::vector<std::shared_ptr<Vgpu>> vgpus_;
  std::array<std::shared_ptr<Vgpu>, regs::NUM_CHANNELS> by_pchid_{};
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> runlists_;  // per vGPU id
  uint32_t next_id_ = 1;

  // Submissions are not preemptive, and a turn ends when its channel goes
  // idle. A channel parked in a semaphore acquire that nothing queued
  // ahead of it will satisfy would hold the GPU for every VM: the watchdog
  // ends such a turn (the channel stays runnable on the GPU).
  std::thread watchdog_;
  std::mutex watchdog_mutex_;
  std::condition_variable watchdog_cv_;
  bool watchdog_stop_ = false;

  // Channel events waiting to be handled, and whether a thread is at it.
  // Closing the gate (destructor) waits for handling in progress and turns
  // later events away.
  std::shared_mutex events_gate_;
  std::mutex events_mutex_;
  std::deque<gpu::ChannelEvent> events_;
  bool handling_events_ = false;
  bool events_closed_ = false;
};

}  // namespace vgpu::mediator
