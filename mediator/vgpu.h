// SPDX-License-Identifier: GPL-2.0-or-later
// One VM's virtual GPU: a VRAM partition, a range of physical channels,
// its virtual register state and its shadows. Every BAR access a VM makes
// that is not directly mapped lands in one of the trap entry points below.
//
// Threads: the VM's own thread calls the trap entry points; the host's
// service thread delivers channel events; the scheduler's dispatch thread
// calls dispatch(). One mutex guards the virtual state; interrupt
// callbacks and scheduler submissions happen outside it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "channels/guest_instance.h"
#include "common/error.h"
#include "gpu/gpu.h"
#include "mediator/counters.h"
#include "mediator/lock.h"
#include "mediator/mmio_table.h"
#include "shadow/guest_memory.h"
#include "shadow/shadow_space.h"
#include "vgpu/regs.h"

namespace vgpu::mediator {

class Host;

struct VgpuConfig {
  std::string name = "vm";
  uint64_t vram_bytes = 256 * MiB;
  uint32_t channels = 16;        // guest channel ids [0, channels)
  bool bar_remap = true;         // map insensitive BAR pages straight onto VRAM
  bool lazy_shadow = true;       // defer shadow sync to dispatch, rescan dirty pages only
  uint32_t weight = 1;           // scheduler share
  // Reserved VRAM this vGPU's shadows may use (page tables, instance
  // blocks): carved from the host's pool at creation, so that no VM can
  // exhaust what another needs.
  uint64_t shadow_bytes = 24 * MiB;
};

// A run of BAR pages mapped straight onto host VRAM (BAR remap).
struct DirectRange {
  uint64_t bar_offset;
  uint64_t vram_addr;
  uint64_t bytes;
  bool read_only;
};

class Vgpu {
 public:
  Vgpu(Host& host, uint32_t id, VgpuConfig config, shadow::Partition partition, uint32_t pchid_base,
       uint64_t shadow_base);
  ~Vgpu();
  Vgpu(const Vgpu&) = delete;
  Vgpu& operator=(const Vgpu&) = delete;

  uint32_t id() const { return id_; }
  const VgpuConfig& config() const { return config_; }
  const shadow::Partition& partition() const { return guest_.partition(); }
  // This vGPU's share of hypervisor-reserved VRAM (its shadows).
  const shadow::ReservedVram& shadow_pool() const { return *reserved_; }

  // ---- trap entry points (the VM's thread)
  uint32_t read32(uint32_t offset);
  void write32(uint32_t offset, uint32_t value);
  uint32_t bar_read32(gpu::Bar bar, uint64_t offset);
  void bar_write32(gpu::Bar bar, uint64_t offset, uint32_t value);

  // ---- BAR remap: what may be mapped straight onto VRAM right now
  std::vector<DirectRange> direct_ranges(gpu::Bar bar) const;
  uint64_t layout_generation() const { return layout_generation_.load(std::memory_order_acquire); }
  uint64_t bar_size(gpu::Bar bar) const;

  void set_interrupt_handler(std::function<void(bool)> handler);
  CounterSnapshot counters() const;
  std::vector<std::string> guest_errors() const;   // the most recent, oldest first

  // ---- from the host
  void dispatch(uint32_t gchid);                   // scheduler picked a submission
  void on_channel_idle(uint32_t gchid, uint64_t start_ns, uint64_t end_ns);
  void on_channel_error(uint32_t gchid, regs::ChannelError code, uint32_t method_word, uint64_t addr);
  void on_fault(uint32_t gchid, regs::FaultUnit unit, regs::FaultReason reason, uint64_t va, bool write);
  void on_nonstall(uint32_t gchid);
  // The channel of the in-flight submission parked in a semaphore acquire:
  // end its turn (it stays runnable and resumes on the GPU once released).
  void on_channel_parked(uint32_t gchid);
  uint32_t pchid_of(uint32_t gchid) const { return pchid_base_ + gchid; }
  bool owns_pchid(uint32_t pchid) const { return pchid >= pchid_base_ && pchid - pchid_base_ < config_.channels; }
  uint32_t gchid_of(uint32_t pchid) const { return pchid - pchid_base_; }
  // Physical channels in this VM's committed runlist (for the physical runlist).
  std::vector<uint32_t> runlist_pchids() const;

 private:
  friend struct VgpuRegs;
  using Table = MmioTable<Vgpu>;

  struct Channel {
    uint32_t inst_reg = 0;       // CHAN_INST as the guest wrote it
    uint32_t state_reg = 0;      // CHAN_STATE as the guest wrote it
    bool bound = false;
    bool in_runlist = false;
    channels::GuestInstance guest{};
    uint64_t shadow_inst = 0;    // host VRAM
    std::shared_ptr<shadow::ShadowSpace> space;
    uint32_t guest_put = 0;      // last GP_PUT the guest rang
    uint32_t physical_put = 0;   // last GP_PUT given to the GPU
    bool in_flight = false;
    uint64_t in_flight_start = 0;
  };
  struct ChannelErrorRecord {
    uint32_t code = 0, method = 0, addr_lo = 0, addr_hi = 0;
  };
  struct FaultRecord {
    uint32_t inst = 0, va_lo = 0, va_hi = 0, type = 0;
  };
  struct BarState {
    uint32_t inst_reg = 0;
    std::unique_ptr<shadow::ShadowSpace> space;
    uint64_t limit = 0;
    std::vector<uint64_t> pages;   // per 4 KiB BAR page: host VRAM address | flags, or NO_PAGE
  };

  static const Table& table();

  // Work that must happen after mutex_ is released: scheduler submissions
  // and interrupt delivery.
  struct Deferred {
    std::vector<uint64_t> submits;
    std::optional<std::pair<uint64_t, uint64_t>> completion;   // the in-flight submission ran [start, end]
    std::function<void(bool)> irq;
    bool level = false;
  };
  Deferred take_deferred();            // with mutex_ held
  void run_deferred(Deferred d);       // without
  // Every entry point from outside: f runs with mutex_ held, then whatever
  // it left for after the unlock runs (an early return from f is fine).
  template <typename F>
  void locked(F&& f) {
    Deferred d;
    {
      MediatorLock lock(mutex_);
      f();
      d = take_deferred();
    }
    run_deferred(std::move(d));
  }

  // Registers (vgpu_regs.cc) and helpers, all with mutex_ held.
  uint32_t intr0() const;
  void update_interrupt_line();            // records the new level; delivered after unlock
  void reset();                            // PMC ENABLE cleared PFIFO: reclaim everything
  void guest_error(const std::string& what);

  // Channels (vgpu_channels.cc).
  void write_chan_inst(uint32_t gchid, uint32_t value);
  void write_chan_state(uint32_t gchid, uint32_t value);
  uint32_t read_chan_state(uint32_t gchid);
  void bind(uint32_t gchid, uint64_t guest_inst);
  void unbind(uint32_t gchid);
  void submit_runlist(uint32_t count);
  void doorbell(uint32_t gchid, uint32_t put);
  void raise_channel_error(uint32_t gchid, regs::ChannelError code, uint32_t method_word, uint64_t addr);
  void sync_channel_spaces_full();
  void sync_space(shadow::ShadowSpace& space, bool full);
  void finish_in_flight(Channel& ch, uint64_t start_ns, uint64_t end_ns);
  std::vector<uint32_t> runlist_pchids_locked() const;
  void invalidate_tlb(uint32_t pdb_reg, uint32_t trigger);
  std::shared_ptr<shadow::ShadowSpace> space_for(uint64_t guest_pd, Status& status);

  // BARs and PRAMIN (vgpu_bars.cc).
  BarState& bar_state(gpu::Bar bar) { return bar == gpu::Bar::bar1 ? bar1_ : bar3_; }
  const BarState& bar_state(gpu::Bar bar) const { return bar == gpu::Bar::bar1 ? bar1_ : bar3_; }
  void write_bar_inst(gpu::Bar bar, uint32_t value);
  void sync_bar(gpu::Bar bar, bool full);
  void rebuild_layout(bool pages_changed);
  bool sensitive_bar_page(gpu::Bar bar, uint64_t bar_offset) const;
  void note_guest_write(uint64_t gaddr);
  uint32_t pramin_read(uint32_t offset);
  void pramin_write(uint32_t offset, uint32_t value);
  bool userd_slot(uint64_t bar1_offset, uint32_t& gchid, uint32_t& field) const;
  void bar_fault(gpu::Bar bar, uint64_t offset, bool write);
  void record_fault(regs::FaultUnit unit, regs::FaultReason reason, uint64_t inst, uint64_t va, bool write,
                    std::optional<uint32_t> gchid);

  Host& host_;
  const uint32_t id_;
  const VgpuConfig config_;
  const shadow::GuestMemory guest_;
  const uint32_t pchid_base_;
  // Declared before everything that holds shadow memory: freed last.
  const std::unique_ptr<shadow::ReservedVram> reserved_;

  mutable std::mutex mutex_;
  Counters counters_;
  std::function<void(bool)> interrupt_handler_;
  bool line_ = false;
  bool line_delivered_ = false;
  std::vector<uint64_t> pending_submits_;  // gchid doorbells to hand to the scheduler after unlock
  // Per guest channel: a submission of it waits in the scheduler (or in
  // pending_submits_). Doorbells meanwhile only move its GP_PUT: dispatch
  // runs up to the latest one, so a doorbell storm queues at most one
  // submission per channel. Not cleared by reset: a queued one still
  // reaches dispatch().
  std::vector<bool> submission_queued_;
  std::optional<std::pair<uint64_t, uint64_t>> pending_completion_;
  std::vector<std::string> errors_;

  // Virtual registers.
  uint32_t pmc_enable_ = regs::pmc::enable::ALL;
  uint32_t pmc_intr_en_ = 0;
  uint32_t pmc_intr_mask_ = ~uint32_t{0};
  uint32_t pbus_intr_ = 0, pbus_intr_en_ = 0;
  uint32_t pramin_window_ = 0;
  uint32_t ptimer_intr_ = 0, ptimer_intr_en_ = 0, ptimer_alarm_ = 0, ptimer_num_ = 0, ptimer_den_ = 0;
  uint32_t mmu_invalidate_pdb_ = 0;
  uint32_t pfifo_intr_ = 0, pfifo_intr_en_ = 0, pfifo_ctrl_ = 0, pbdma_enable_ = 0;
  uint32_t userd_base_ = 0;
  uint32_t runlist_base_ = 0, runlist_intr_ = 0;
  uint32_t chan_table_error_ = 0;
  uint32_t fault_pending_ = 0;
  uint32_t preempt_ = 0;
  std::array<FaultRecord, regs::pfifo::NUM_FAULT_UNITS> faults_{};
  std::array<uint32_t, regs::NUM_CHANNELS / 32> chan_error_pending_{};
  std::array<uint32_t, regs::NUM_CHANNELS / 32> nonstall_pending_{};
  std::array<ChannelErrorRecord, regs::NUM_CHANNELS> chan_errors_{};

  std::vector<Channel> channels_;
  // Shadows of unbound channels whose engine work still runs: that work
  // walks the shadow tables and its instance block, so they are freed only
  // once the GPU reports it done (reap_retired, at the next bind/unbind).
  struct Retired {
    uint32_t pchid;
    uint64_t shadow_inst;
    std::shared_ptr<shadow::ShadowSpace> space;
  };
  std::vector<Retired> retired_;
  void reap_retired();
  std::map<uint64_t, std::weak_ptr<shadow::ShadowSpace>> spaces_;   // by guest PD
  BarState bar1_, bar3_;
  std::vector<uint64_t> sensitive_pages_;    // guest VRAM pages (sorted) trapped under remap
  std::atomic<uint64_t> layout_generation_{1};
};

}  // namespace vgpu::mediator
