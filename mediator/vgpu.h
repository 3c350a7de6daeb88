// SPDX-License-Identifier: GPL-2.0-or-later
// One VM's virtual GPU: a VRAM partition, a range of physical channels,
// and its parts, each with its own state:
//   VirtualRegisters   per-VM BAR0 state and records, the interrupt line
//   ShadowSpaces       the channels' shadow page tables
//   BarApertures       BAR1/BAR3 shadows and the BAR remap layout
//   ShadowChannels     bind, runlist, doorbells, dispatch
// and one register table (common/reg_table.h) whose rows are those parts'
// registers. Every BAR access a VM makes that is not directly mapped
// lands in one of the trap entry points below.
//
// Threads: the VM's own thread calls the trap entry points; the host
// delivers channel events on whichever thread raised them; a scheduling
// step calls dispatch(). One mutex guards everything; scheduler
// submissions, ended turns and interrupt delivery happen after it is
// released.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/reg_table.h"
#include "gpu/device/residency.h"
#include "gpu/gpu.h"
#include "mediator/bar_apertures.h"
#include "mediator/counters.h"
#include "mediator/lock.h"
#include "mediator/pv_server.h"
#include "mediator/turn.h"
#include "channels/shadow_channels.h"
#include "shadow/shadow_spaces.h"
#include "mediator/vgpu_config.h"
#include "mediator/virtual_registers.h"
#include "shadow/guest_memory.h"
#include "shadow/reserved_vram.h"
#include "vgpu/regs.h"

namespace vgpu::mediator {

class Host;

class Vgpu final : public TurnChannels {
 public:
  Vgpu(Host& host, uint32_t id, VgpuConfig config, shadow::Partition partition, uint32_t pchid_base,
       uint64_t shadow_base);
  ~Vgpu();
  Vgpu(const Vgpu&) = delete;
  Vgpu& operator=(const Vgpu&) = delete;

  uint32_t id() const { return id_; }
  const VgpuConfig& config() const { return config_; }
  const shadow::Partition& partition() const { return guest_.partition(); }
  // The VM's RAM regions, on the host bus (set by Host::set_guest_ram).
  shadow::GuestRam& guest_ram() const { return *ram_; }
  // The partition's own memfd (VgpuConfig::own_vram_fd), -1 without one.
  // Offset 0 is guest VRAM address 0. Owned by the vGPU.
  int vram_fd() const { return vram_fd_; }
  void adopt_vram_fd(int fd) { vram_fd_ = fd; }  // the host, at creation
  // This vGPU's share of hypervisor-reserved VRAM (its shadows).
  const shadow::ReservedVram& shadow_pool() const { return *reserved_; }

  // ---- trap entry points (the VM's thread)
  uint32_t read32(uint32_t offset);
  void write32(uint32_t offset, uint32_t value);
  uint32_t bar_read32(gpu::Bar bar, uint64_t offset);
  void bar_write32(gpu::Bar bar, uint64_t offset, uint32_t value);
  // `bytes` (whole words) of trapped BAR writes of `value` from `offset`,
  // as that many bar_write32 calls would leave VRAM, the shadows and the
  // guest's errors, under one lock (a driver clearing a new page table).
  void bar_fill32(gpu::Bar bar, uint64_t offset, uint64_t bytes, uint32_t value);

  // ---- BAR remap: what may be mapped straight onto VRAM right now
  std::vector<DirectRange> direct_ranges(gpu::Bar bar) const;
  uint64_t layout_generation() const { return bars_.generation(); }
  uint64_t bar_size(gpu::Bar bar) const { return bars_.size(bar); }

  void set_interrupt_handler(std::function<void(bool)> handler);
  // Interrupt messages (spec §11.6): one call per vector whose count moved,
  // outside the vGPU's lock, as the line's handler.
  void set_message_handler(std::function<void(regs::pci::MsiVector)> handler);
  CounterSnapshot counters() const;
  std::vector<std::string> guest_errors() const;  // the most recent, oldest first
  // The mappings of PV address space `id` as host VRAM, fn(va, host,
  // bytes, read_only) (tests, debugging); false when no such space.
  bool pv_mappings(uint32_t id, const std::function<void(uint64_t, uint64_t, uint64_t, bool)>& fn) const;

  // ---- from the turn (mediator/turn.h): ShadowChannels' dispatch,
  // continue_turn, ring_ahead, piece_pending, in_turn_of, end_turn and
  // piece_done, under the vGPU's lock
  Dispatch dispatch(uint32_t gchid, uint64_t seq, uint64_t host_budget_ns) override;
  Dispatch continue_turn(uint32_t gchid, uint64_t host_budget_ns) override;
  bool ring_ahead(uint32_t gchid, uint64_t host_budget_ns) override;
  bool piece_pending(uint32_t gchid) const override;
  bool in_turn_of(uint32_t gchid, uint64_t seq) const override;
  void end_turn(uint32_t gchid) override;
  void piece_done(uint32_t gchid) override;

  // ---- migration (vgpu_migration.cc, docs/migration.md §3 and §6)
  // The vGPU's image (mediator/vgpu_image.h). Built so far: the virtual
  // registers, interrupts owed and the BAR instances. Refused, with a
  // message, while a channel is bound or the PV interface is in use:
  // their state is not in the image yet (build step M4).
  [[nodiscard]] Result<std::vector<uint8_t>> export_image() const;
  // Reads an image made by export_image into this vGPU, which must have no
  // bound channel. The config echo must match this vGPU's. The BAR
  // instances are replayed through the guest's path (BarApertures::set_inst
  // and a full sync from the guest's tables in VRAM). On failure nothing
  // has changed.
  [[nodiscard]] Status import_image(std::span<const uint8_t> bytes);
  // Quiesce (docs/migration.md §4): no new piece of the VM's work starts;
  // the piece on the GPU ends (one slice with slicing, else at most
  // max-gpu-ms); then its physical channels are made unrunnable (a parked
  // acquire stays parked) and their engine work is waited for. The VM must
  // make no BAR access meanwhile (its vCPUs are stopped). Past `timeout_ns`
  // of host time it thaws again and names the channel still running.
  // With a device back end the partition's device-only pages are then
  // downloaded (and logged dirty): the stopped VM's VRAM is all on the host.
  [[nodiscard]] Status freeze(uint64_t timeout_ns);
  // Pre-copy with a device back end (docs/migration.md §8): downloads up
  // to `budget` bytes of the partition's device-only pages (logged dirty,
  // so this pass or the next sends them); the bytes and what is left.
  // Without one: nothing to do, {0, 0}.
  gpu::WriteBack write_back(uint64_t budget);
  uint64_t device_only_bytes();
  // Undo freeze: the guest's runnable channels run again and every channel
  // with work left is submitted. A vGPU not frozen: nothing happens.
  void thaw();
  bool frozen() const;

  // ---- from the host
  void on_channel_error(uint32_t gchid, regs::ChannelError code, uint32_t method_word, uint64_t addr);
  void on_fault(uint32_t gchid, regs::FaultUnit unit, regs::FaultReason reason, uint64_t va, bool write);
  void on_nonstall(uint32_t gchid);
  uint32_t pchid_of(uint32_t gchid) const { return pchid_base_ + gchid; }
  bool owns_pchid(uint32_t pchid) const { return pchid >= pchid_base_ && pchid - pchid_base_ < config_.channels; }
  uint32_t gchid_of(uint32_t pchid) const { return pchid - pchid_base_; }
  // Physical channels in this VM's committed runlist (for the physical runlist).
  std::vector<uint32_t> runlist_pchids() const;

 private:
  // The host's operations on this VM's physical channels.
  class Physical final : public PhysicalChannels {
   public:
    Physical(Host& host, uint32_t id, uint32_t slice_blocks, uint32_t watchdog_ms)
        : host_(host), id_(id), slice_blocks_(slice_blocks), watchdog_ms_(watchdog_ms) {}
    void bind(uint32_t pchid, uint64_t shadow_inst) override;
    void unbind(uint32_t pchid) override;
    void set_runnable(uint32_t pchid, bool runnable) override;
    uint32_t state(uint32_t pchid) override;
    void set_runlist(std::vector<uint32_t> pchids) override;
    uint64_t userd(uint32_t pchid) const override;
    void ring(uint32_t pchid, uint32_t put) override;
    bool wait_stopped(uint32_t pchid, uint64_t timeout_ns) override;  // vgpu_freeze.cc
    Result<gpu::ChannelImage> save_run(uint32_t pchid) override;      // vgpu_migration.cc
    Status restore_run(uint32_t pchid, const gpu::ChannelImage& image) override;

   private:
    Host& host_;
    const uint32_t id_;
    const uint32_t slice_blocks_;  // the VM's slicing (VgpuConfig::slice_blocks)
    const uint32_t watchdog_ms_;   // the VM's CHAN_WATCHDOG
  };

  // Every entry point from outside runs f with mutex_ held, then hands on
  // what the parts left for after the unlock: scheduler submissions, ended
  // turns, the interrupt line's new level (an early return from f is fine).
  template <typename F>
  auto locked(F&& f) {
    Deferred d;
    if constexpr (std::is_void_v<decltype(f())>) {
      {
        MediatorLock lock(mutex_);
        f();
        d = take_deferred();
      }
      run_deferred(std::move(d));
    } else {
      decltype(f()) result;
      {
        MediatorLock lock(mutex_);
        result = f();
        d = take_deferred();
      }
      run_deferred(std::move(d));
      return result;
    }
  }
  // The messages one take_deferred sends, in order, without allocating:
  // each vector at most once, then the error vector for a rising edge.
  class MsiVectors {
   public:
    void push_back(regs::pci::MsiVector v) { at_[count_++] = v; }
    bool empty() const { return count_ == 0; }
    const regs::pci::MsiVector* begin() const { return at_.data(); }
    const regs::pci::MsiVector* end() const { return at_.data() + count_; }

   private:
    std::array<regs::pci::MsiVector, regs::pci::MSI_VECTORS + 1> at_{};
    size_t count_ = 0;
  };
  struct Deferred {
    std::vector<uint32_t> submits;
    std::vector<uint32_t> rung_in_turn;
    std::vector<std::pair<uint32_t, uint64_t>> stopped;
    std::function<void(bool)> irq;
    bool level = false;
    std::function<void(regs::pci::MsiVector)> message;
    MsiVectors vectors;
  };
  Deferred take_deferred();       // with mutex_ held
  void run_deferred(Deferred d);  // without

  void build_table();  // vgpu_regs.cc

  // With mutex_ held.
  void guest_error(const std::string& what);
  void bar_write_word(gpu::Bar bar, uint64_t offset, uint32_t value);  // vgpu_bars.cc
  void reset();                                                        // PMC.ENABLE cleared PFIFO: reclaim everything
  void set_pmc_enable(uint32_t value);
  void set_bar_inst(gpu::Bar bar, uint32_t value);
  void set_userd_base(uint32_t value);
  void invalidate_tlb(uint32_t trigger);
  void pv_doorbell(uint32_t value);
  void rebuild_layout(bool pages_changed);
  void note_guest_write(uint64_t gaddr);
  uint32_t pramin_read(uint32_t offset);
  void pramin_write(uint32_t offset, uint32_t value);
  struct UserdSlot {
    uint32_t gchid;
    uint32_t field;  // byte offset in the channel's USERD page
  };
  std::optional<UserdSlot> userd_slot(uint64_t bar1_offset) const;  // a BAR1 offset in the USERD array
  void bar_fault(gpu::Bar bar, uint64_t offset, bool write);
  void record_fault(regs::FaultUnit unit, regs::FaultReason reason, uint64_t inst, uint64_t va, bool write,
                    std::optional<uint32_t> gchid);

  Host& host_;
  const uint32_t id_;
  const VgpuConfig config_;
  // The VM's RAM as the hypervisor reports it (Host::set_guest_ram).
  const std::shared_ptr<shadow::GuestRam> ram_ = std::make_shared<shadow::GuestRam>();
  const shadow::GuestMemory guest_;
  const uint32_t pchid_base_;
  // Declared before everything that holds shadow memory: freed last.
  const std::unique_ptr<shadow::ReservedVram> reserved_;

  int vram_fd_ = -1;
  // Frozen for migration (freeze/thaw, vgpu_migration.cc): dispatches,
  // turns and rings ahead run nothing. Under mutex_.
  bool frozen_ = false;
  // With mutex_ held: the first bound channel still in a turn or with a
  // piece rung, and not parked (turns), or with engine work (!turns).
  std::optional<uint32_t> busy_channel(bool turns);

  mutable std::mutex mutex_;
  Counters counters_;
  std::function<void(bool)> interrupt_handler_;
  bool line_delivered_ = false;
  std::function<void(regs::pci::MsiVector)> message_handler_;
  std::array<uint64_t, regs::pci::MSI_VECTORS> raised_delivered_{};  // regs_.raised() at the last messages
  std::deque<std::string> errors_;  // the last MAX_KEPT_ERRORS: a new one drops the oldest in O(1)

  VirtualRegisters regs_;
  ShadowSpaces spaces_;
  BarApertures bars_;
  Physical physical_;
  ShadowChannels channels_;
  PvServer pv_;
  RegisterTable table_;
};

}  // namespace vgpu::mediator
