// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/fifo.h"

#include "driver/msg.h"
#include "driver/poll.h"
#include "vgpu/formats.h"

namespace vgpu::driver {

namespace r = regs;

namespace {
constexpr uint64_t RUNLIST_BYTES = uint64_t{r::NUM_CHANNELS} * r::runlist::ENTRY_BYTES;
// Dword 1 of a runlist entry, as nouveau writes it (the device ignores it).
}  // namespace

Result<std::unique_ptr<Fifo>> Fifo::init(Port& port, InstMem& mem, RangeAllocator& heap) {
  std::unique_ptr<Fifo> fifo(new Fifo(port, mem, heap));
  for (uint64_t& b : fifo->buffers_) {
    auto a = heap.alloc(align_up(RUNLIST_BYTES, uint64_t{1} << r::pfifo::RUNLIST_SHIFT),
                        uint64_t{1} << r::pfifo::RUNLIST_SHIFT);
    if (!a) return std::unexpected(a.error().context("runlist"));
    b = *a;
  }
  port.write32(Bar::bar0, r::pfifo::PBDMA_ENABLE.offset, r::ALL_PBDMA);
  port.write32(Bar::bar0, r::pfifo::CTRL.offset, r::pfifo::CtrlEnable::mask);
  return fifo;
}

Fifo::~Fifo() {
  for (uint64_t b : buffers_)
    if (b) (void)heap_.free(b);
}

Result<uint32_t> Fifo::alloc_chid() {
  for (uint32_t c = 0; c < r::NUM_CHANNELS; ++c) {
    if (!used_[c]) {
      used_[c] = true;
      return c;
    }
  }
  return fail(Errc::out_of_memory, msg("all {} channels in use", r::NUM_CHANNELS));
}

void Fifo::free_chid(uint32_t chid) {
  if (chid < r::NUM_CHANNELS) used_[chid] = false;
}

Status Fifo::add(uint32_t chid) {
  running_.insert(chid);
  return commit();
}

Status Fifo::remove(uint32_t chid) {
  running_.erase(chid);
  return commit();
}

Status Fifo::commit() {
  const uint64_t buf = buffers_[next_];
  next_ ^= 1;
  uint64_t off = 0;
  for (uint32_t chid : running_) {
    const auto entry = fmt::encode_runlist_entry(chid);
    mem_.write32(buf + off + r::runlist::ENTRY_CHID, entry[0]);
    mem_.write32(buf + off + r::runlist::ENTRY_FLAGS, entry[1]);
    off += r::runlist::ENTRY_BYTES;
  }
  port_.write32(Bar::bar0, r::pfifo::RUNLIST_BASE.offset,
                r::pfifo::RunlistTarget::make(0) |
                    r::pfifo::RunlistAddr::make(static_cast<uint32_t>(buf >> r::pfifo::RUNLIST_SHIFT)));
  port_.write32(Bar::bar0, r::pfifo::RUNLIST_SUBMIT.offset,
                r::pfifo::RunlistCount::make(static_cast<uint32_t>(running_.size())));
  ++commits_;
  auto done = [&] {
    return !(port_.read32(Bar::bar0, r::pfifo::RUNLIST_STATUS.offset) & r::pfifo::RunlistPending::mask);
  };
  if (!poll_until(port_, done))
    return fail(Errc::timeout, msg("runlist of {} channels at {}: still pending", running_.size(), hex(buf)));
  // Acknowledge the completion interrupt (RW1C).
  port_.write32(Bar::bar0, r::pfifo::RUNLIST_INTR.offset, r::pfifo::RunlistIntrDone::mask);
  port_.write32(Bar::bar0, r::pfifo::INTR.offset, r::pfifo::IntrRunlist::mask);
  return {};
}

}  // namespace vgpu::driver
