// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/testing/harness.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "vgpu/classes.h"

namespace vgpu::gpu::testing {

using namespace regs;

bool line_becomes(const GpuModel& gpu, bool want) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (gpu.interrupt_asserted() != want && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  return gpu.interrupt_asserted() == want;
}

Harness::Harness(ClockKind clock, EngineBackend backend)
    : gpu_([clock, backend] {
        auto g = GpuModel::create(GpuConfig{.vram_bytes = VRAM_BYTES, .clock = clock, .backend = backend});
        EXPECT_TRUE(g.has_value());
        return std::move(*g);
      }()),
      tables_(gpu_->vram(), TABLES_BASE, TABLES_END) {
  gpu_->set_channel_event_handler([this](const ChannelEvent& e) {
    std::lock_guard l(mutex_);
    events_.push_back(e);
  });
  gpu_->set_interrupt_handler([this](bool) {
    std::lock_guard l(mutex_);
    ++edges_;
  });
  wr(pmc::ENABLE, ~0u);
  wr(pmc::INTR_EN_0, pmc::IntrEnHardware::mask);
  wr(pfifo::CTRL, pfifo::CtrlEnable::mask);
  wr(pfifo::INTR_EN, ~0u);

  // BAR1: the USERD array at USERD_BAR1.
  auto pd = tables_.create_pd();
  EXPECT_TRUE(pd.has_value());
  EXPECT_TRUE(tables_.map(*pd, USERD_BAR1, USERD_PHYS, NUM_CHANNELS * userd::SIZE, fmt::PageSize::small).has_value());
  EXPECT_TRUE(tables_.write_instance(BAR1_INST, *pd, pci::BAR1_SIZE - 1).has_value());
  wr(pbus::BAR1_INST, pbus::BarInstMode::mask | pbus::BarInstAddr::make(BAR1_INST >> pbus::BAR_INST_SHIFT));
  wr(pfifo::USERD_BASE,
     pfifo::UserdBaseEnable::mask | pfifo::UserdBaseAddr::make(USERD_BAR1 >> pfifo::USERD_BASE_SHIFT));
}

Channel& Harness::add_channel(uint32_t chid) {
  auto c = std::make_unique<Channel>();
  c->chid = chid;
  c->inst = INST_BASE + chid * inst::SIZE;
  c->mem = CHAN_MEM_PHYS + chid * CHAN_MEM_BYTES;
  auto pd = tables_.create_pd();
  EXPECT_TRUE(pd.has_value());
  c->pd = *pd;
  EXPECT_TRUE(tables_.map(c->pd, CHAN_VA, c->mem, CHAN_MEM_BYTES, fmt::PageSize::small).has_value());
  EXPECT_TRUE(tables_.write_instance(c->inst, c->pd, fmt::VA_LIMIT - 1).has_value());
  Vram& v = vram();
  const uint64_t ud = USERD_PHYS + chid * userd::SIZE;
  for (uint32_t off = 0; off < userd::SIZE; off += 4) (void)v.write32(ud + off, 0);
  fmt::encode_ramfc(fmt::Ramfc{.gp_base = c->va(RING_OFF), .limit2 = RING_LIMIT2, .userd = ud}, v.writer(c->inst));
  wr(pfifo::CHAN_INST[chid], fmt::encode_chan_inst({.valid = true, .inst = c->inst}));
  wr(pfifo::CHAN_STATE[chid], pfifo::ChanStateRunnable::mask | pfifo::ChanStateEngine::make(pfifo::ENGINE_NONE));
  channels_.push_back(std::move(c));
  return *channels_.back();
}

void Harness::commit_runlist(const std::vector<uint32_t>& chids) {
  // Raw words, not fmt::encode_runlist_entry: tests name bad channels too.
  for (size_t i = 0; i < chids.size(); ++i) {
    (void)vram().write32(RUNLIST_PHYS + i * runlist::ENTRY_BYTES + runlist::ENTRY_CHID, chids[i]);
    (void)vram().write32(RUNLIST_PHYS + i * runlist::ENTRY_BYTES + runlist::ENTRY_FLAGS, runlist::ENTRY_FLAGS_VALUE);
  }
  wr(pfifo::RUNLIST_BASE, pfifo::RunlistAddr::make(RUNLIST_PHYS >> pfifo::RUNLIST_SHIFT));
  wr(pfifo::RUNLIST_SUBMIT, pfifo::RunlistCount::make(static_cast<uint32_t>(chids.size())));
}

void Harness::submit(Channel& c, const std::vector<uint32_t>& words) {
  const uint64_t off = PB_OFF + c.pb_next;
  for (size_t i = 0; i < words.size(); ++i) (void)vram().write32(c.phys(off + i * 4), words[i]);
  c.pb_next += words.size() * 4;
  submit_entry(c, fmt::gp::make(c.va(off), static_cast<uint32_t>(words.size())));
}

void Harness::submit_entry(Channel& c, fmt::gp::Entry e) {
  const uint64_t slot = c.phys(RING_OFF + c.put * ramfc::GP_ENTRY_BYTES);
  (void)vram().write32(slot, e.w0);
  (void)vram().write32(slot + 4, e.w1);
  c.put = (c.put + 1) % (1u << RING_LIMIT2);
  ring(c);
}

void Harness::ring(Channel& c) {
  gpu_->bar_write32(Bar::bar1, USERD_BAR1 + c.chid * userd::SIZE + userd::GP_PUT, c.put);
}

bool Harness::wait_error(uint32_t chid, uint64_t timeout_ns) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  while (std::chrono::steady_clock::now() < end) {
    if (chan_error(chid) != 0) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return false;
}

std::vector<ChannelEvent> Harness::events() {
  std::lock_guard l(mutex_);
  return events_;
}

int Harness::interrupt_edges() {
  std::lock_guard l(mutex_);
  return edges_;
}

std::vector<uint32_t> sem_release(uint64_t va, uint32_t payload, bool four_bytes) {
  using namespace cls::host;
  return {fmt::mthd::inc(0, SEMAPHORE_A, 4), SemAHi::make(hi32(va)), lo32(va), payload,
          SemDOperation::make(uint32_t(SemOp::release)) | SemDReleaseSize4::make(four_bytes)};
}

std::vector<uint32_t> sem_acquire(uint64_t va, uint32_t payload, cls::host::SemOp op) {
  using namespace cls::host;
  return {fmt::mthd::inc(0, SEMAPHORE_A, 4), SemAHi::make(hi32(va)), lo32(va), payload,
          SemDOperation::make(uint32_t(op)) | SemDAcquireSwitch::mask};
}

std::vector<uint32_t> copy_line(uint32_t subch, uint64_t src, uint64_t dst, uint32_t bytes, uint64_t sem,
                                uint32_t payload) {
  using namespace cls::copy;
  const uint32_t launch = LaunchTransferType::make(uint32_t(Transfer::non_pipelined)) | LaunchSrcPitch::mask |
                          LaunchDstPitch::mask | LaunchSemaphoreType::make(uint32_t(SemRelease::one_word));
  return {fmt::mthd::inc(subch, cls::host::SET_OBJECT, 1),
          cls::DMA_COPY,
          fmt::mthd::inc(subch, SET_SEMAPHORE_A, 3),
          hi32(sem),
          lo32(sem),
          payload,
          fmt::mthd::inc(subch, OFFSET_IN_UPPER, 4),
          hi32(src),
          lo32(src),
          hi32(dst),
          lo32(dst),
          fmt::mthd::inc(subch, LINE_LENGTH_IN, 2),
          bytes,
          1,
          fmt::mthd::inc(subch, LAUNCH_DMA, 1),
          launch};
}

}  // namespace vgpu::gpu::testing
