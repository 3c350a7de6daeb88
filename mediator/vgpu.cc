// SPDX-License-Identifier: GPL-2.0-or-later
// The vGPU's core: construction from its parts, the lock-then-deferred
// protocol, guest errors, reset, the events the host routes to it, and
// dispatch of a scheduled submission.
#include "mediator/vgpu.h"

#include <unistd.h>

#include "common/text.h"
#include "mediator/host.h"

namespace vgpu::mediator {
namespace {
constexpr size_t MAX_KEPT_ERRORS = 64;
}  // namespace

Vgpu::Vgpu(Host& host, uint32_t id, VgpuConfig config, shadow::Partition partition, uint32_t pchid_base,
           uint64_t shadow_base)
    : host_(host),
      id_(id),
      config_(std::move(config)),
      guest_(host.gpu().vram(), partition, ram_),
      pchid_base_(pchid_base),
      reserved_(std::make_unique<shadow::ReservedVram>(host.gpu().vram(), shadow_base, config_.shadow_bytes,
                                                       [&host] { host.invalidate_all_physical(); })),
      spaces_(
          guest_, *reserved_, counters_.shadow, [&host](uint64_t pd) { host.invalidate_physical(pd); },
          [this](const std::string& e) { guest_error(e); }),
      bars_(guest_, *reserved_, counters_.shadow, host.gpu().bar_size(gpu::Bar::bar1),
            host.gpu().bar_size(gpu::Bar::bar3)),
      physical_(host, id, config.slice_blocks, config.watchdog_ms),
      channels_(ShadowChannels::Env{guest_, host.gpu().vram(), *reserved_, spaces_, regs_, physical_, counters_,
                                    [this](const std::string& e) { guest_error(e); }, config_.lazy_shadow,
                                    host.turns_bounded(), config_.slice_blocks != 0},
                config_.channels, pchid_base),
      pv_(PvServer::Env{guest_, *reserved_, spaces_, counters_, [&host](uint64_t pd) { host.invalidate_physical(pd); },
                        [this](const std::string& e) { guest_error(e); }},
          config_.pv),
      table_([this](const std::string& e) { guest_error(e); }) {
  bars_.set_pv_lookup([this](uint64_t pd) { return spaces_.find_pv(pd); });
  build_table();
}

Vgpu::~Vgpu() {
  {
    MediatorLock lock(mutex_);
    channels_.reset();
  }
  if (vram_fd_ >= 0) close(vram_fd_);
}

void Vgpu::set_interrupt_handler(std::function<void(bool)> handler) {
  MediatorLock lock(mutex_);
  interrupt_handler_ = std::move(handler);
  line_delivered_ = false;
}

void Vgpu::set_message_handler(std::function<void(regs::pci::MsiVector)> handler) {
  MediatorLock lock(mutex_);
  message_handler_ = std::move(handler);
}

CounterSnapshot Vgpu::counters() const { return snapshot(counters_, reserved_->used()); }

std::vector<std::string> Vgpu::guest_errors() const {
  MediatorLock lock(mutex_);
  return {errors_.begin(), errors_.end()};
}

std::vector<uint32_t> Vgpu::runlist_pchids() const {
  MediatorLock lock(mutex_);
  return channels_.runlist_pchids();
}

void Vgpu::guest_error(const std::string& what) {
  Counters::bump(counters_.guest_errors);
  const std::string line = config_.name + ": " + what;
  if (errors_.size() == MAX_KEPT_ERRORS) errors_.pop_front();
  errors_.push_back(line);
  host_.log_guest_error(line);
}

Vgpu::Deferred Vgpu::take_deferred() {
  Deferred d;
  d.submits = channels_.take_submits();
  d.rung_in_turn = channels_.take_rung_in_turn();
  d.stopped = channels_.take_stopped();
  const bool line = regs_.line();
  bool rose = false;
  if (line != line_delivered_) {
    rose = line;
    line_delivered_ = line;
    d.irq = interrupt_handler_;
    d.level = line;
  }
  for (unsigned v = 0; v < regs::pci::MSI_VECTORS; ++v) {
    if (regs_.raised()[v] == raised_delivered_[v]) continue;
    raised_delivered_[v] = regs_.raised()[v];
    Counters::bump(counters_.interrupts);
    d.vectors.push_back(static_cast<regs::pci::MsiVector>(v));
  }
  if (rose) {  // a rising edge is a message on the error vector (spec §11.6)
    Counters::bump(counters_.interrupts);
    d.vectors.push_back(regs::pci::MsiVector::error);
  }
  if (!d.vectors.empty()) d.message = message_handler_;
  return d;
}

void Vgpu::run_deferred(Deferred d) {
  for (auto [gchid, seq] : d.stopped) host_.channel_stopped(id_, gchid, seq);
  for (uint32_t gchid : d.submits) host_.submit(id_, gchid);
  for (uint32_t gchid : d.rung_in_turn) host_.turn().rung_in_turn(id_, gchid);
  if (d.irq) d.irq(d.level);
  if (d.message)
    for (auto v : d.vectors) d.message(v);
}

void Vgpu::reset() {
  channels_.reset();
  pv_.reset();
  spaces_.clear();
  bars_.reset();
  regs_.reset_pfifo();
  rebuild_layout(true);
}

void Vgpu::record_fault(regs::FaultUnit unit, regs::FaultReason reason, uint64_t inst, uint64_t va, bool write,
                        std::optional<uint32_t> gchid) {
  regs_.record_fault(unit, reason, inst, va, write, gchid);
  Counters::bump(counters_.faults);
}

// ---- events the host routes here

void Vgpu::on_fault(uint32_t gchid, regs::FaultUnit unit, regs::FaultReason reason, uint64_t va, bool write) {
  locked([&] {
    if (gchid >= config_.channels) return;
    record_fault(unit, reason, channels_.guest_inst(gchid), va, write, gchid);
  });
}

void Vgpu::on_channel_error(uint32_t gchid, regs::ChannelError code, uint32_t method_word, uint64_t addr) {
  locked([&] {
    if (gchid >= config_.channels) return;
    regs_.raise_channel_error(gchid, code, method_word, addr);
    Counters::bump(counters_.faults);
  });
}

void Vgpu::on_nonstall(uint32_t gchid) {
  locked([&] {
    if (gchid < config_.channels) regs_.raise_nonstall(gchid);
  });
}

namespace {

TurnChannels::Dispatch to_turn(ShadowChannels::Dispatch d) {
  switch (d) {
    case ShadowChannels::Dispatch::ran: return TurnChannels::Dispatch::ran;
    case ShadowChannels::Dispatch::host_work_left: return TurnChannels::Dispatch::host_work_left;
    case ShadowChannels::Dispatch::nothing: break;
  }
  return TurnChannels::Dispatch::nothing;
}

}  // namespace

TurnChannels::Dispatch Vgpu::dispatch(uint32_t gchid, uint64_t seq, uint64_t host_budget_ns) {
  return to_turn(locked([&] {
    if (frozen_) {
      channels_.drop_queued(gchid);  // its work is requeued at the thaw
      return ShadowChannels::Dispatch::nothing;
    }
    return channels_.dispatch(gchid, seq, host_budget_ns);
  }));
}

TurnChannels::Dispatch Vgpu::continue_turn(uint32_t gchid, uint64_t host_budget_ns) {
  return to_turn(locked(
      [&] { return frozen_ ? ShadowChannels::Dispatch::nothing : channels_.continue_turn(gchid, host_budget_ns); }));
}

bool Vgpu::ring_ahead(uint32_t gchid, uint64_t host_budget_ns) {
  return locked([&] { return !frozen_ && channels_.ring_ahead(gchid, host_budget_ns); });
}

bool Vgpu::piece_pending(uint32_t gchid) const {
  MediatorLock lock(mutex_);
  return channels_.piece_pending(gchid);
}

bool Vgpu::in_turn_of(uint32_t gchid, uint64_t seq) const {
  MediatorLock lock(mutex_);
  return channels_.in_turn_of(gchid, seq);
}

void Vgpu::end_turn(uint32_t gchid) {
  locked([&] { channels_.end_turn(gchid); });
}

void Vgpu::piece_done(uint32_t gchid) {
  locked([&] { channels_.piece_done(gchid); });
}

// ---- the physical side, through the host

void Vgpu::Physical::bind(uint32_t pchid, uint64_t shadow_inst) {
  host_.bind_physical(pchid, shadow_inst, slice_blocks_, watchdog_ms_);
}
void Vgpu::Physical::unbind(uint32_t pchid) { host_.unbind_physical(pchid); }
void Vgpu::Physical::set_runnable(uint32_t pchid, bool runnable) { host_.set_runnable(pchid, runnable); }
uint32_t Vgpu::Physical::state(uint32_t pchid) { return host_.physical_state(pchid); }
void Vgpu::Physical::set_runlist(std::vector<uint32_t> pchids) { host_.set_runlist(id_, std::move(pchids)); }
uint64_t Vgpu::Physical::userd(uint32_t pchid) const { return host_.host_userd(pchid); }
void Vgpu::Physical::ring(uint32_t pchid, uint32_t put) { host_.ring_physical(pchid, put); }

}  // namespace vgpu::mediator
