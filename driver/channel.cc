// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/channel.h"

#include <bit>
#include <optional>
#include <tuple>

#include "common/launch_trace.h"
#include "driver/bar_io.h"
#include "driver/msg.h"
#include "driver/poll.h"

namespace vgpu::driver {

namespace r = regs;

namespace {
// ACQUIRE as nouveau writes it: timeout enabled, maximal timeout and shift.
constexpr uint32_t ACQUIRE_VALUE = r::ramfc::AcquireTimeoutEnable::mask |
                                   r::ramfc::AcquireTimeout::make(r::ramfc::AcquireTimeout::max) |
                                   r::ramfc::AcquireTimeoutShift::make(r::ramfc::AcquireTimeoutShift::max);
// USERD words nouveau clears when it creates a channel.
constexpr uint32_t USERD_CLEARED[] = {r::userd::PUT,    r::userd::GET,           r::userd::REF,
                                      r::userd::PUT_HI, r::userd::TOP_LEVEL_GET, r::userd::TOP_LEVEL_GET_HI,
                                      r::userd::GET_HI, r::userd::GP_GET,        r::userd::GP_PUT};

struct ErrorName {
  r::ChannelError code;
  const char* name;
};
constexpr ErrorName ERROR_NAMES[] = {
    {r::ChannelError::mmu_fault, "mmu_fault"},
    {r::ChannelError::illegal_cmd, "illegal_cmd"},
    {r::ChannelError::illegal_method, "illegal_method"},
    {r::ChannelError::illegal_class, "illegal_class"},
    {r::ChannelError::empty_subchannel, "empty_subchannel"},
    {r::ChannelError::gpentry_invalid, "gpentry_invalid"},
    {r::ChannelError::bad_program, "bad_program"},
    {r::ChannelError::bad_argument, "bad_argument"},
    {r::ChannelError::sem_timeout, "sem_timeout"},
    {r::ChannelError::illegal_sem, "illegal_sem"},
    {r::ChannelError::bad_instance, "bad_instance"},
    {r::ChannelError::bad_copy, "bad_copy"},
    {r::ChannelError::internal, "internal"},
    {r::ChannelError::timeout, "timeout"},
    {r::ChannelError::kernel_error, "kernel_error"},
};
const char* error_name(r::ChannelError code) {
  for (const auto& e : ERROR_NAMES)
    if (e.code == code) return e.name;
  return "unknown";
}
}  // namespace

Result<std::unique_ptr<Channel>> Channel::create(ChannelDeps deps, AddressSpace& as, const ChannelConfig& config) {
  if (!std::has_single_bit(config.gpfifo_entries) ||
      std::bit_width(config.gpfifo_entries) - 1 > static_cast<int>(r::ramfc::MAX_LIMIT2) ||
      config.pushbuf_bytes < 4 * KiB || config.pushbuf_bytes % 4)
    return fail(Errc::invalid_argument, msg("channel: {} GPFIFO entries / {} push-buffer bytes not supported",
                                            config.gpfifo_entries, config.pushbuf_bytes));
  std::unique_ptr<Channel> ch(new Channel(deps, as, config));
  auto chid = deps.fifo.alloc_chid();
  if (!chid) return std::unexpected(chid.error());
  ch->chid_ = *chid;
  if (auto ok = ch->setup(); !ok) return std::unexpected(ok.error().context(msg("channel {}", ch->chid_)));
  return ch;
}

Status Channel::setup() {
  pb_start_.assign(config_.gpfifo_entries, 0);
  auto inst = d_.heap.alloc(r::inst::SIZE, r::inst::ALIGN);
  if (!inst) return std::unexpected(inst.error().context("instance block"));
  inst_ = *inst;
  d_.mem.fill(inst_, r::inst::SIZE);
  as_.vmm().join(inst_);

  const uint64_t gp_bytes = uint64_t{config_.gpfifo_entries} * r::ramfc::GP_ENTRY_BYTES;
  auto gp = d_.vram.alloc(gp_bytes, fmt::SMALL_PAGE);
  if (!gp) return std::unexpected(gp.error().context("GPFIFO ring"));
  gp_mem_ = *gp;
  auto pb = d_.vram.alloc(config_.pushbuf_bytes, fmt::SMALL_PAGE);
  if (!pb) return std::unexpected(pb.error().context("push buffer"));
  pb_mem_ = *pb;
  for (auto [mem, va, bar1, bytes] : {std::tuple{gp_mem_, &gp_va_, &gp_bar1_, gp_bytes},
                                      std::tuple{pb_mem_, &pb_va_, &pb_bar1_, config_.pushbuf_bytes}}) {
    auto v = as_.map(mem, bytes, {.read_only = true});
    if (!v) return std::unexpected(v.error());
    *va = *v;
    auto b = d_.bars.bar1().map(mem, bytes);
    if (!b) return std::unexpected(b.error());
    *bar1 = *b;
  }

  clear_userd();
  write_ramfc();
  // A channel id is reused after its context goes (or after the driver is
  // reloaded): clear an error a previous owner left, code and pending bit.
  d_.port.write32(Bar::bar0, r::pfifo::CHAN_ERROR[chid_].offset, 0);
  d_.port.write32(Bar::bar0, r::pfifo::CHAN_ERROR_PENDING[r::channel_word(chid_)].offset, r::channel_bit(chid_));
  d_.port.write32(Bar::bar0, r::pfifo::CHAN_INST[chid_].offset, fmt::encode_chan_inst({.valid = true, .inst = inst_}));
  d_.port.write32(Bar::bar0, r::pfifo::CHAN_STATE[chid_].offset,
                  r::pfifo::ChanStateRunnable::mask | r::pfifo::ChanStateEngine::make(r::pfifo::ENGINE_NONE));
  on_runlist_ = true;
  return d_.fifo.add(chid_);
}

void Channel::clear_userd() {
  const uint64_t userd = d_.bars.userd_bar1(chid_);
  for (uint32_t off : USERD_CLEARED) d_.port.write32(Bar::bar1, userd + off, 0);
}

// The instance block was zeroed (the heap's fill): PB_GET and REF start
// at 0 without being written.
void Channel::write_ramfc() {
  fmt::encode_ramfc(fmt::Ramfc{.gp_base = gp_va_,
                               .limit2 = static_cast<uint32_t>(std::bit_width(config_.gpfifo_entries) - 1),
                               .userd = d_.bars.userd_vram(chid_),
                               .acquire = ACQUIRE_VALUE},
                    d_.mem.writer(inst_));
}

Channel::~Channel() {
  if (chid_ < r::NUM_CHANNELS) {
    if (on_runlist_) {
      // Stop, take off the runlist, and wait out a slice the GPU may still
      // be running (it writes GP_GET into the instance block) before the
      // channel's memory is freed, as nouveau's Fermi channel kick does.
      d_.port.write32(Bar::bar0, r::pfifo::CHAN_STATE[chid_].offset, 0);
      (void)d_.fifo.remove(chid_);
      d_.port.write32(Bar::bar0, r::pfifo::PREEMPT.offset, r::pfifo::PreemptChid::make(chid_));
      (void)poll_until(d_.port, [&] {
        return !r::pfifo::PreemptPending::get(d_.port.read32(Bar::bar0, r::pfifo::PREEMPT.offset));
      });
      d_.port.write32(Bar::bar0, r::pfifo::CHAN_INST[chid_].offset, 0);
    }
    d_.fifo.free_chid(chid_);
  }
  for (uint64_t va : {gp_va_, pb_va_})
    if (va) (void)as_.unmap(va);
  for (uint64_t b : {gp_bar1_, pb_bar1_})
    if (b) (void)d_.bars.bar1().unmap(b);  // BAR1 offset 0 is the USERD array
  for (uint64_t m : {gp_mem_, pb_mem_})
    if (m) (void)d_.vram.free(m);
  if (inst_) (void)d_.heap.free(inst_);
}

uint32_t Channel::gp_get() { return d_.port.read32(Bar::bar1, d_.bars.userd_bar1(chid_) + r::userd::GP_GET); }

r::ChannelError Channel::error() {
  return static_cast<r::ChannelError>(
      r::pfifo::ChanErrorCode::get(d_.port.read32(Bar::bar0, r::pfifo::CHAN_ERROR[chid_].offset)));
}

r::ChannelError Channel::error_if_signalled() {
  if (interrupts()) {
    const uint64_t n = irq_count(d_.port.interrupt_counts(), r::pci::MsiVector::error);
    if (errors_seen_ == n) return last_error_;
    errors_seen_ = n;  // counted before the read: a message after it reads again
  }
  last_error_ = error();
  return last_error_;
}

Error Channel::error_status(r::ChannelError code) {
  const uint32_t method = d_.port.read32(Bar::bar0, r::pfifo::CHAN_ERROR_METHOD[chid_].offset);
  const uint64_t addr = join64(d_.port.read32(Bar::bar0, r::pfifo::CHAN_ERROR_ADDR_HI[chid_].offset),
                               d_.port.read32(Bar::bar0, r::pfifo::CHAN_ERROR_ADDR_LO[chid_].offset));
  return Error{Errc::device_error,
               msg("channel {}: error {} (code {}) at method {} subchannel {}, address {}", chid_, error_name(code),
                   static_cast<uint32_t>(code), hex(r::pfifo::ChanErrorMethodAddr::get(method) << 2),
                   r::pfifo::ChanErrorMethodSubch::get(method), hex(addr))};
}

void Channel::consumed_before(uint64_t submitted) {
  // Absolute entry numbers: submits_ entries so far, gp_get_seen_ is
  // `behind` of them short of the put.
  const uint32_t mask = config_.gpfifo_entries - 1;
  const uint64_t behind = (gp_put_ - gp_get_seen_) & mask;
  if (submitted > submits_ || submitted <= submits_ - behind) return;  // nothing new
  gp_get_seen_ = static_cast<uint32_t>(submitted) & mask;
}

Result<uint64_t> Channel::reserve_pushbuf(uint64_t bytes) {
  const uint64_t size = config_.pushbuf_bytes;
  if (bytes > size / 2)
    return fail(Errc::invalid_argument,
                msg("channel {}: {} push-buffer bytes in one submission (ring {})", chid_, bytes, size));
  const uint32_t mask = config_.gpfifo_entries - 1;
  std::optional<uint64_t> at;
  auto room = [&] {
    const uint32_t get = gp_get_seen_;
    if (((gp_put_ + 1) & mask) == get) return false;  // GPFIFO full
    if (get == gp_put_) {                             // nothing in flight
      at = pb_put_ + bytes <= size ? pb_put_ : 0;
      return true;
    }
    const uint64_t tail = pb_start_[get];
    if (pb_put_ >= tail) {
      if (pb_put_ + bytes <= size)
        at = pb_put_;
      else if (bytes < tail)
        at = 0;
    } else if (pb_put_ + bytes < tail) {
      at = pb_put_;
    }
    return at.has_value();
  };
  const auto refreshed = [&] {
    gp_get_seen_ = gp_get() & mask;
    return room() || error() != r::ChannelError::none;
  };
  if (!room() && !poll_until(d_.port, refreshed, config_.timeout_ns))
    return fail(Errc::timeout,
                msg("channel {}: no GPFIFO or push-buffer space (GP_GET {}, GP_PUT {})", chid_, gp_get(), gp_put_));
  if (!at) return std::unexpected(error_status(error()));  // the poll ended on an error
  return *at;
}

Status Channel::submit(std::span<const uint32_t> words) {
  if (words.empty()) return {};
  const uint64_t bytes = words.size_bytes();
  auto at = reserve_pushbuf(bytes);
  if (!at) return std::unexpected(at.error());
  bar1_write(d_.port, pb_bar1_ + *at, std::as_bytes(words));
  const fmt::gp::Entry e = fmt::gp::make(pb_va_ + *at, static_cast<uint32_t>(words.size()));
  const uint32_t entry[2] = {e.w0, e.w1};
  bar1_write(d_.port, gp_bar1_ + uint64_t{gp_put_} * r::ramfc::GP_ENTRY_BYTES, std::as_bytes(std::span(entry)));
  pb_start_[gp_put_] = *at;
  pb_put_ = *at + bytes;
  gp_put_ = (gp_put_ + 1) & (config_.gpfifo_entries - 1);
  // The doorbell: never through a direct mapping, so it reaches the device.
  d_.port.write32(Bar::bar1, d_.bars.userd_bar1(chid_) + r::userd::GP_PUT, gp_put_);
  LaunchTrace::mark(LaunchPhase::doorbell);
  ++submits_;
  return {};
}

}  // namespace vgpu::driver
