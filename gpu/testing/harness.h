// SPDX-License-Identifier: GPL-2.0-or-later
// Test setup for the GPU model: a small model with every unit enabled,
// BAR1 mapping the USERD array, and channels with their own address space,
// GPFIFO ring and push buffer, driven the way a driver would.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "gpu/mem/page_table_builder.h"
#include "gpu/model.h"

namespace vgpu::gpu::testing {

// Whether the interrupt line reaches `want` within 2 s. The line is
// re-evaluated by whichever thread is delivering interrupts
// (InterruptLine::update): PFIFO's thread may be at it when a register
// write returns, so the line follows within moments, not within the write.
bool line_becomes(const GpuModel& gpu, bool want);

// VRAM layout of the tests (64 MiB).
inline constexpr uint64_t VRAM_BYTES = 64 * MiB;
inline constexpr uint64_t INST_BASE = 0x10000;  // + chid * inst::SIZE
inline constexpr uint64_t BAR1_INST = 0x0f000;
inline constexpr uint64_t BAR3_INST = 0x0e000;
inline constexpr uint64_t USERD_PHYS = 0x200000;  // + chid * userd::SIZE
inline constexpr uint64_t RUNLIST_PHYS = 0x300000;
inline constexpr uint64_t TABLES_BASE = 0x400000;
inline constexpr uint64_t TABLES_END = 0x2000000;
inline constexpr uint64_t CHAN_MEM_PHYS = 0x2000000;  // + chid * CHAN_MEM_BYTES
inline constexpr uint64_t CHAN_MEM_BYTES = 0x100000;
inline constexpr uint64_t USERD_BAR1 = 0x100000;  // BAR1 offset of the USERD array

// Channel VA layout (inside a 1 MiB window mapped at CHAN_VA).
inline constexpr uint64_t CHAN_VA = 0x10000000;
inline constexpr uint64_t RING_OFF = 0x0;
inline constexpr uint32_t RING_LIMIT2 = 9;  // 512 entries
inline constexpr uint64_t PB_OFF = 0x10000;
inline constexpr uint64_t DATA_OFF = 0x80000;

// The copy tests' layout in a channel's data: a BYTES copy from SRC_OFF to
// DST_OFF on subchannel COPY_SUBCH, its semaphore at SEM_OFF.
namespace copy_layout {
inline constexpr uint32_t COPY_SUBCH = 4;
inline constexpr uint64_t SRC_OFF = DATA_OFF;
inline constexpr uint64_t DST_OFF = DATA_OFF + 0x10000;
inline constexpr uint64_t SEM_OFF = DATA_OFF + 0x20000;
inline constexpr uint32_t BYTES = 0x2000;
}  // namespace copy_layout

struct Channel {
  uint32_t chid;
  uint64_t inst;
  uint64_t pd;
  uint64_t mem;          // physical base of the channel's window
  uint32_t put = 0;      // next GPFIFO entry
  uint64_t pb_next = 0;  // next free push-buffer byte (offset from PB_OFF)
  uint64_t va(uint64_t off) const { return CHAN_VA + off; }
  uint64_t phys(uint64_t off) const { return mem + off; }
};

class Harness {
 public:
  explicit Harness(ClockKind clock = ClockKind::real, EngineBackend backend = EngineBackend::model);
  // The model goes first: its threads call our handlers until it is gone.
  ~Harness() { gpu_.reset(); }

  GpuModel& gpu() { return *gpu_; }
  Vram& vram() { return gpu_->vram(); }
  PageTableBuilder& tables() { return tables_; }
  uint32_t rd(Reg32 r) { return gpu_->read32(r.offset); }
  void wr(Reg32 r, uint32_t v) { gpu_->write32(r.offset, v); }

  // Instance block, page directory, window and RAMFC; bound and runnable.
  Channel& add_channel(uint32_t chid);
  // Put these channels on the runlist.
  void commit_runlist(const std::vector<uint32_t>& chids);
  // Write a segment to the push buffer and ring the doorbell.
  void submit(Channel& c, const std::vector<uint32_t>& words);
  // A raw GPFIFO entry.
  void submit_entry(Channel& c, fmt::gp::Entry e);
  void ring(Channel& c);

  uint32_t userd(const Channel& c, uint32_t off) {
    return vram().read32(USERD_PHYS + c.chid * regs::userd::SIZE + off);
  }
  uint32_t chan_error(uint32_t chid) { return rd(regs::pfifo::CHAN_ERROR[chid]); }
  bool idle(uint64_t timeout_ns = 2'000'000'000) { return gpu_->wait_idle(timeout_ns); }
  // Wait until the channel reports an error (or time out).
  bool wait_error(uint32_t chid, uint64_t timeout_ns = 2'000'000'000);

  std::vector<ChannelEvent> events();
  int interrupt_edges();

 private:
  std::unique_ptr<GpuModel> gpu_;
  PageTableBuilder tables_;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::mutex mutex_;
  std::vector<ChannelEvent> events_;
  int edges_ = 0;
};

// Host-class method words.
std::vector<uint32_t> sem_release(uint64_t va, uint32_t payload, bool four_bytes);
// Copy-class (0x90B5) words on subchannel `subch`: bind the object, copy
// one line of `bytes` from src to dst (pitch layout, non-pipelined) and
// release `payload` (one word) at sem when done.
std::vector<uint32_t> copy_line(uint32_t subch, uint64_t src, uint64_t dst, uint32_t bytes, uint64_t sem,
                                uint32_t payload);
std::vector<uint32_t> sem_acquire(uint64_t va, uint32_t payload, cls::host::SemOp op);

}  // namespace vgpu::gpu::testing
