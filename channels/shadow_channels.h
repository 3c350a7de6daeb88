// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's shadow channels: guest channel c is physical channel
// pchid_base + c. Binding validates the guest's instance block and gives
// the physical channel a shadow one (the guest's RAMFC with the shadow
// page directory and the host's USERD page); the runlist is virtual; a
// GP_PUT doorbell becomes one queued submission, and dispatch() rings the
// physical channel when the scheduler picks it. The sync points of the
// Fermi model (bind, enable, runlist submit, GP_PUT) bring the shadows up
// to date in naive mode; in lazy mode only dispatch does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "channels/guest_instance.h"
#include "gpu/channel_image.h"
#include "gpu/mem/vram.h"
#include "mediator/counters.h"
#include "shadow/shadow_spaces.h"
#include "mediator/virtual_registers.h"
#include "shadow/reserved_vram.h"

namespace vgpu::mediator {

// What shadow channels do to the physical GPU: the host's operations on
// one VM's physical channels (a fake in unit tests).
class PhysicalChannels {
 public:
  virtual void bind(uint32_t pchid, uint64_t shadow_inst) = 0;
  virtual void unbind(uint32_t pchid) = 0;  // stopped, preempted and unbound
  virtual void set_runnable(uint32_t pchid, bool runnable) = 0;
  virtual uint32_t state(uint32_t pchid) = 0;                  // CHAN_STATE
  virtual void set_runlist(std::vector<uint32_t> pchids) = 0;  // this VM's part of the physical runlist
  virtual uint64_t userd(uint32_t pchid) const = 0;            // host VRAM of its USERD page
  virtual void ring(uint32_t pchid, uint32_t put) = 0;         // the physical doorbell
  // Migration (docs/migration.md M4): the model's run state of a stopped
  // channel, and the same put back into one bound and not run since.
  // Migration's freeze: an unrunnable channel whose methods no longer run
  // (gpu::Gpu::wait_stopped); false past timeout_ns.
  [[nodiscard]] virtual bool wait_stopped(uint32_t /*pchid*/, uint64_t /*timeout_ns*/) { return true; }
  [[nodiscard]] virtual Result<gpu::ChannelImage> save_run(uint32_t /*pchid*/) {
    return fail(Errc::unsupported, "vgpu: these physical channels do not export run state");
  }
  [[nodiscard]] virtual Status restore_run(uint32_t /*pchid*/, const gpu::ChannelImage& /*image*/) {
    return fail(Errc::unsupported, "vgpu: these physical channels do not import run state");
  }

 protected:
  ~PhysicalChannels() = default;
};

// A bound guest channel in the migration image (shadow_channels_image.cc):
// what the guest wrote and the GPU consumed, the device-written words of
// its USERD page, and the model's run state. The shadows are rebuilt.
struct ChannelRecord {
  static constexpr std::array<uint32_t, 8> USERD_WORDS = {regs::userd::PUT,           regs::userd::GET,
                                                          regs::userd::REF,           regs::userd::PUT_HI,
                                                          regs::userd::TOP_LEVEL_GET, regs::userd::TOP_LEVEL_GET_HI,
                                                          regs::userd::GET_HI,        regs::userd::GP_GET};
  uint32_t inst_reg = 0;
  uint32_t state_reg = 0;
  bool in_runlist = false;
  uint32_t guest_put = 0;
  uint32_t physical_put = 0;
  std::array<uint32_t, USERD_WORDS.size()> userd{};
  gpu::ChannelImage run;
};
void encode_channel_record(const ChannelRecord& record, Writer& w);
[[nodiscard]] Result<ChannelRecord> decode_channel_record(
    Reader& r, gpu::ChannelImageLayout layout = gpu::ChannelImageLayout::with_cursor);

class ShadowChannels {
 public:
  struct Env {
    const shadow::GuestMemory& guest;
    gpu::Vram& vram;  // host VRAM: shadow instance blocks, USERD pages
    shadow::ReservedVram& pool;
    ShadowSpaces& spaces;
    VirtualRegisters& regs;
    PhysicalChannels& physical;
    Counters& counters;
    std::function<void(const std::string&)> guest_error;
    bool lazy_shadow;
    // Turns are bounded (mediator/turn_slice.h): the GPU is given one
    // GPFIFO entry at a time, so that a turn can end at an entry boundary.
    // Otherwise a turn gives it everything up to the guest's GP_PUT.
    bool entry_pieces = false;
    // The VM's launches run in slices (VgpuConfig::slice_blocks): its
    // channels may stop between slices. Otherwise none ever does, and the
    // host's CHAN_STATE is not read for it at each piece.
    bool sliced = false;
  };

  ShadowChannels(Env env, uint32_t count, uint32_t pchid_base);
  ~ShadowChannels();  // unbinds every channel
  ShadowChannels(const ShadowChannels&) = delete;
  ShadowChannels& operator=(const ShadowChannels&) = delete;

  uint32_t count() const { return static_cast<uint32_t>(channels_.size()); }

  // ---- registers (CHAN_INST, CHAN_STATE, RUNLIST_SUBMIT) and the doorbell
  uint32_t inst_reg(uint32_t c) const { return c < count() ? channels_[c].inst_reg : 0; }
  void write_inst(uint32_t c, uint32_t value);
  uint32_t read_state(uint32_t c);
  void write_state(uint32_t c, uint32_t value);
  void submit_runlist(uint32_t entries);
  void doorbell(uint32_t c, uint32_t put);

  // The scheduler picked submission `seq` of channel `c`: ring the
  // physical channel if it has work it can run. In lazy mode its shadows
  // are brought up to date first, within host_budget_ns of the steady
  // clock (0: no bound); a sync that does not finish rings nothing and
  // goes on at the next dispatch.
  enum class Dispatch { ran, nothing, host_work_left };
  Dispatch dispatch(uint32_t c, uint64_t seq, uint64_t host_budget_ns = 0);
  // The piece of the turn in progress ran: ring the next one (its sync
  // bounded as dispatch's).
  Dispatch continue_turn(uint32_t c, uint64_t host_budget_ns = 0);
  // The guest rang more work during its turn, before the host handled the
  // end of the turn's piece on the GPU (docs/scheduler.md, "Ringing
  // ahead"): ring the next GPFIFO entry now, so that PFIFO goes on to it
  // without waiting for the host to see the piece end. At most one entry
  // ahead; never behind a channel parked in a semaphore acquire, and never
  // for a VM whose launches run in slices.
  // The turn decides whether it may (Turn::rung_in_turn). False:
  // nothing rung.
  // Its sync is bounded by host_budget_ns (0: no bound): one that runs out
  // rings nothing ahead and goes on at the turn's next piece.
  bool ring_ahead(uint32_t c, uint64_t host_budget_ns = 0);
  // The GPU has not finished the entries given to channel c: its GP_GET
  // (in the physical USERD page, advanced as each entry ends) is behind.
  bool piece_pending(uint32_t c) const;
  // Submission `seq` was dispatched on channel c and its turn is not over.
  // Between the scheduler putting a submission in flight and its dispatch,
  // the end of a piece rung in the channel's last turn is not this turn's.
  bool in_turn_of(uint32_t c, uint64_t seq) const;
  // The scheduler ended channel c's turn: if it has entries left, they
  // wait in the scheduler's queue behind whoever arrived meanwhile. A
  // channel whose last piece has not run (parked in a semaphore acquire
  // when the watchdog ended its turn) is not queued: no further piece is
  // rung behind a parked one, so its entries cannot run outside the
  // scheduler once the acquire is satisfied. piece_done queues it.
  void end_turn(uint32_t c);
  // A piece of channel c ran outside a turn of it (the parked piece of an
  // ended turn, released): queue what the channel has left.
  void piece_done(uint32_t c);

  // PMC.ENABLE cleared PFIFO: every channel unbound, the runlist emptied.
  void reset();

  // Migration (shadow_channels_image.cc): a bound channel of a frozen vGPU,
  // and the same into an unbound one through the guest's bind path (its
  // instance block read again from the moved VRAM), then the words the GPU
  // wrote and the model's run state. Work left is rung again by the caller.
  [[nodiscard]] Result<ChannelRecord> save(uint32_t c);
  [[nodiscard]] Status restore(uint32_t c, const ChannelRecord& record);
  bool bound(uint32_t c) const { return c < count() && channels_[c].bound; }
  // For a freeze (mediator/vgpu_migration.cc): whether channel c's turn is
  // in progress, whether the guest made it runnable, and a submission of a
  // frozen VM taken from the scheduler without running (end_turn requeues
  // its work at the thaw).
  bool in_turn(uint32_t c) const { return c < count() && channels_[c].in_turn; }
  bool guest_runnable(uint32_t c) const;
  void drop_queued(uint32_t c) {
    if (c < count()) queued_[c] = false;
  }
  uint64_t guest_inst(uint32_t c) const { return c < count() ? channels_[c].guest.inst : 0; }
  std::vector<uint32_t> runlist_pchids() const;

  // What happened that the vGPU hands on after its lock is released:
  // channels with a new submission for the scheduler; submissions whose
  // channel stopped (unbound) while they might be on the GPU; whether a
  // bind changed which pages hold page tables.
  std::vector<uint32_t> take_submits() { return std::exchange(submits_, {}); }
  // Channels whose doorbell brought new work during their turn (the host
  // the turn may be holding itself open for it: Turn::rung_in_turn).
  std::vector<uint32_t> take_rung_in_turn() { return std::exchange(rung_in_turn_, {}); }
  std::vector<std::pair<uint32_t, uint64_t>> take_stopped() { return std::exchange(stopped_, {}); }
  bool take_layout_changed() { return std::exchange(layout_changed_, false); }

 private:
  struct Channel {
    uint32_t inst_reg = 0;   // CHAN_INST as the guest wrote it
    uint32_t state_reg = 0;  // CHAN_STATE as the guest wrote it
    bool bound = false;
    bool in_runlist = false;
    channels::GuestInstance guest{};
    uint64_t shadow_inst = 0;  // host VRAM
    std::shared_ptr<shadow::ShadowSpace> space;
    uint32_t guest_put = 0;     // last GP_PUT the guest rang
    uint32_t physical_put = 0;  // last GP_PUT given to the GPU
    uint64_t last_seq = 0;      // the last submission dispatched on it
    bool ran = false;           // one was, since the last bind
    bool in_turn = false;       // dispatched; the scheduler has not ended its turn
  };
  // Shadows of an unbound channel whose engine work still runs: that work
  // walks the shadow tables and instance block, so they are freed only
  // once the GPU reports it done (at the next bind or unbind).
  struct Retired {
    uint32_t pchid;
    uint64_t shadow_inst;
    std::shared_ptr<shadow::ShadowSpace> space;
  };

  uint32_t pchid(uint32_t c) const { return pchid_base_ + c; }
  // GP_GET of the physical channel, in its USERD page (advanced as each
  // entry ends).
  uint32_t physical_gp_get(uint32_t c) const;
  bool check_index(uint32_t c, const char* reg);
  void bind(uint32_t c, uint64_t guest_inst);
  void unbind(uint32_t c);
  void reap_retired();
  void commit_runlist() { env_.physical.set_runlist(runlist_pchids()); }
  // Rings the channel's next piece if it can run one; a lazy sync is
  // bounded by until_ns when given (sync_left_ tells that it ran out).
  bool ring_next_piece(uint32_t c, std::optional<uint64_t> until_ns);
  static std::optional<uint64_t> deadline(uint64_t host_budget_ns);  // on the steady clock; 0: none
  bool sync_to_run(Channel& ch, std::optional<uint64_t> until_ns);
  // The physical channel stopped between two slices of a launch (CHAN_SLICE
  // hold, docs/spec/vgpu.md §10.5), and its next slice rung.
  bool held(uint32_t c);
  bool resume(uint32_t c, std::optional<uint64_t> until_ns);

  Env env_;
  const uint32_t pchid_base_;
  std::vector<Channel> channels_;
  std::vector<Retired> retired_;
  // A submission of the channel waits in the scheduler, or its turn is in
  // progress: doorbells meanwhile only move GP_PUT (dispatch and the turn's
  // pieces run to the latest; end_turn requeues what is left). Kept across
  // reset: a queued one still reaches dispatch().
  std::vector<bool> queued_;
  std::vector<uint32_t> submits_;
  std::vector<uint32_t> rung_in_turn_;
  std::vector<std::pair<uint32_t, uint64_t>> stopped_;
  bool layout_changed_ = false;
  bool sync_left_ = false;  // the last bounded sync ran out of time
};

}  // namespace vgpu::mediator
