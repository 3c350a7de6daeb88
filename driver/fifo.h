// SPDX-License-Identifier: GPL-2.0-or-later
// PFIFO: enable, channel ids, and the runlist (double-buffered as nouveau
// does it: each commit writes the other buffer, names it in RUNLIST_BASE,
// submits the count and waits for the pending bit to clear).
#pragma once

#include <bitset>
#include <cstdint>
#include <memory>
#include <set>

#include "common/error.h"
#include "driver/allocator.h"
#include "driver/instmem.h"
#include "vgpu/regs.h"

namespace vgpu::driver {

class Fifo {
 public:
  [[nodiscard]] static Result<std::unique_ptr<Fifo>> init(Port& port, InstMem& mem, RangeAllocator& heap);
  ~Fifo();

  [[nodiscard]] Result<uint32_t> alloc_chid();
  void free_chid(uint32_t chid);

  // Adds or removes a channel and commits the new runlist.
  [[nodiscard]] Status add(uint32_t chid);
  [[nodiscard]] Status remove(uint32_t chid);
  const std::set<uint32_t>& runlist() const { return running_; }
  uint64_t commits() const { return commits_; }

 private:
  Fifo(Port& port, InstMem& mem, RangeAllocator& heap) : port_(port), mem_(mem), heap_(heap) {}
  [[nodiscard]] Status commit();

  Port& port_;
  InstMem& mem_;
  RangeAllocator& heap_;
  uint64_t buffers_[2] = {0, 0};
  unsigned next_ = 0;
  std::bitset<regs::NUM_CHANNELS> used_;
  std::set<uint32_t> running_;
  uint64_t commits_ = 0;
};

}  // namespace vgpu::driver
