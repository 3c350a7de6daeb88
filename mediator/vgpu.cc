// SPDX-License-Identifier: GPL-2.0-or-later
// The vGPU's core: construction, its interrupt line, reset, the events the
// host routes to it, and dispatch of a scheduled submission.
#include "mediator/vgpu.h"

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
      guest_(host.gpu().vram(), partition),
      pchid_base_(pchid_base),
      reserved_(std::make_unique<shadow::ReservedVram>(host.gpu().vram(), shadow_base, config_.shadow_bytes,
                                                       [&host] { host.invalidate_all_physical(); })),
      submission_queued_(config_.channels, false),
      channels_(config_.channels) {}

Vgpu::~Vgpu() {
  MediatorLock lock(mutex_);
  for (uint32_t c = 0; c < channels_.size(); ++c) unbind(c);
}

void Vgpu::set_interrupt_handler(std::function<void(bool)> handler) {
  MediatorLock lock(mutex_);
  interrupt_handler_ = std::move(handler);
  line_delivered_ = false;
}

CounterSnapshot Vgpu::counters() const { return snapshot(counters_, reserved_->used()); }

std::vector<std::string> Vgpu::guest_errors() const {
  MediatorLock lock(mutex_);
  return errors_;
}

uint64_t Vgpu::bar_size(gpu::Bar bar) const { return host_.gpu().bar_size(bar); }

void Vgpu::guest_error(const std::string& what) {
  Counters::bump(counters_.guest_errors);
  const std::string line = config_.name + ": guest error: " + what;
  if (errors_.size() == MAX_KEPT_ERRORS) errors_.erase(errors_.begin());
  errors_.push_back(line);
  host_.log_guest_error(line);
}

uint32_t Vgpu::intr0() const {
  namespace intr = regs::pmc::intr;
  uint32_t v = 0;
  if (pfifo_intr_ & pfifo_intr_en_) v |= intr::Pfifo::mask;
  if (pbus_intr_ & pbus_intr_en_) v |= intr::Pbus::mask;
  if (ptimer_intr_ & ptimer_intr_en_) v |= intr::Ptimer::mask;
  return v;
}

void Vgpu::update_interrupt_line() {
  line_ = regs::pmc::IntrEnHardware::get(pmc_intr_en_) && (intr0() & pmc_intr_mask_);
}

Vgpu::Deferred Vgpu::take_deferred() {
  Deferred d;
  d.submits.swap(pending_submits_);
  d.completion = pending_completion_;
  pending_completion_.reset();
  if (line_ != line_delivered_ && interrupt_handler_) {
    line_delivered_ = line_;
    d.irq = interrupt_handler_;
    d.level = line_;
  }
  return d;
}

void Vgpu::run_deferred(Deferred d) {
  if (d.completion) host_.completed(d.completion->first, d.completion->second);
  for (uint64_t gchid : d.submits) host_.submit(id_, static_cast<uint32_t>(gchid));
  if (d.irq) d.irq(d.level);
}

void Vgpu::reset() {
  for (uint32_t c = 0; c < channels_.size(); ++c) {
    unbind(c);
    channels_[c] = Channel{};
  }
  host_.set_runlist(id_, {});
  spaces_.clear();
  bar1_ = BarState{};
  bar3_ = BarState{};
  pfifo_intr_ = pfifo_intr_en_ = pfifo_ctrl_ = 0;
  userd_base_ = runlist_base_ = runlist_intr_ = chan_table_error_ = fault_pending_ = preempt_ = 0;
  faults_ = {};
  chan_error_pending_ = {};
  nonstall_pending_ = {};
  chan_errors_ = {};
  for (uint64_t gchid : pending_submits_) submission_queued_[gchid] = false;   // dropped before reaching the scheduler
  pending_submits_.clear();
  rebuild_layout(true);
  update_interrupt_line();
}

void Vgpu::record_fault(regs::FaultUnit unit, regs::FaultReason reason, uint64_t inst, uint64_t va, bool write,
                        std::optional<uint32_t> gchid) {
  namespace pf = regs::pfifo;
  const uint32_t u = static_cast<uint32_t>(unit);
  FaultRecord& f = faults_[u];
  f.inst = pf::FaultInstAddr::make(static_cast<uint32_t>(inst >> regs::pfifo::CHAN_INST_SHIFT));
  f.va_lo = lo32(va);
  f.va_hi = hi32(va);
  f.type = pf::FaultReason::make(static_cast<uint32_t>(reason)) | pf::FaultWrite::make(write) |
           (gchid ? pf::FaultChid::make(*gchid) | pf::FaultChidValid::mask : 0);
  fault_pending_ |= 1u << u;
  pfifo_intr_ |= pf::IntrMmuFault::mask;
  Counters::bump(counters_.faults);
  update_interrupt_line();
}

void Vgpu::on_fault(uint32_t gchid, regs::FaultUnit unit, regs::FaultReason reason, uint64_t va, bool write) {
  locked([&] {
    if (gchid >= channels_.size()) return;
    record_fault(unit, reason, channels_[gchid].guest.inst, va, write, gchid);
  });
}

void Vgpu::on_channel_error(uint32_t gchid, regs::ChannelError code, uint32_t method_word, uint64_t addr) {
  locked([&] {
    if (gchid >= channels_.size()) return;
    raise_channel_error(gchid, code, method_word, addr);
    finish_in_flight(channels_[gchid], channels_[gchid].in_flight_start, host_.now_ns());
  });
}

void Vgpu::raise_channel_error(uint32_t gchid, regs::ChannelError code, uint32_t method_word, uint64_t addr) {
  namespace pf = regs::pfifo;
  chan_errors_[gchid] = ChannelErrorRecord{pf::ChanErrorCode::make(static_cast<uint32_t>(code)), method_word,
                                           lo32(addr), hi32(addr)};
  chan_error_pending_[gchid / 32] |= 1u << (gchid % 32);
  pfifo_intr_ |= pf::IntrChannelError::mask;
  Counters::bump(counters_.faults);
  update_interrupt_line();
}

void Vgpu::on_nonstall(uint32_t gchid) {
  locked([&] {
    if (gchid >= channels_.size()) return;
    nonstall_pending_[gchid / 32] |= 1u << (gchid % 32);
    pfifo_intr_ |= regs::pfifo::IntrNonStall::mask;
    update_interrupt_line();
  });
}

void Vgpu::on_channel_idle(uint32_t gchid, uint64_t start_ns, uint64_t end_ns) {
  locked([&] {
    if (gchid >= channels_.size()) return;
    finish_in_flight(channels_[gchid], start_ns, end_ns);
  });
}

void Vgpu::on_channel_parked(uint32_t gchid) {
  locked([&] {
    if (gchid >= channels_.size()) return;
    finish_in_flight(channels_[gchid], channels_[gchid].in_flight_start, host_.now_ns());
  });
}

void Vgpu::finish_in_flight(Channel& ch, uint64_t start_ns, uint64_t end_ns) {
  if (!ch.in_flight) return;
  ch.in_flight = false;
  pending_completion_ = std::make_pair(start_ns, end_ns);
}

}  // namespace vgpu::mediator
