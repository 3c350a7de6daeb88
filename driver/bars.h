// SPDX-License-Identifier: GPL-2.0-or-later
// The BAR1 and BAR3 apertures (nouveau gf100_bar_oneinit_bar). BAR3 maps
// the instance heap linearly and is bootstrapped through PRAMIN: its
// instance block, page directory and table are written through the window,
// then BAR3_INST is programmed and instance memory moves to BAR3. BAR1 gets
// its own address space (tables written through BAR3), the USERD array
// and, on demand, CPU windows onto buffers.
#pragma once

#include <cstdint>
#include <memory>

#include "common/error.h"
#include "driver/address_space.h"
#include "driver/allocator.h"
#include "driver/instmem.h"
#include "driver/vmm.h"

namespace vgpu::driver {

class Bars {
 public:
  // heap: the instance heap (at most BAR3's size); vram: the rest of VRAM
  // (USERD comes from it). `make` picks the page tables' back end (none:
  // Vmm, written in VRAM).
  [[nodiscard]] static Result<std::unique_ptr<Bars>> init(Port& port, InstMem& mem, RangeAllocator& heap,
                                                          RangeAllocator& vram, TableMemory& tables,
                                                          const TablesMaker& make = {});
  ~Bars();

  AddressSpace& bar1() { return *bar1_; }
  PageTables& bar3() { return *bar3_; }
  uint64_t bar3_inst() const { return bar3_inst_; }
  uint64_t bar1_inst() const { return bar1_inst_; }

  // USERD page of a channel: VRAM address (for RAMFC) and BAR1 offset (for
  // the doorbell).
  uint64_t userd_vram(uint32_t chid) const;
  uint64_t userd_bar1(uint32_t chid) const;

 private:
  Bars(RangeAllocator& heap, RangeAllocator& vram) : heap_(heap), vram_(vram) {}
  [[nodiscard]] Status init_bar3(Port& port, InstMem& mem, const TablesMaker& make);
  [[nodiscard]] Status init_bar1(Port& port, InstMem& mem, const TablesMaker& make);

  RangeAllocator& heap_;
  RangeAllocator& vram_;
  uint64_t bar3_inst_ = 0;
  uint64_t bar1_inst_ = 0;
  std::unique_ptr<PageTables> bar3_;
  std::unique_ptr<AddressSpace> bar1_;
  uint64_t userd_ = 0;
  uint64_t userd_va_ = 0;
};

}  // namespace vgpu::driver
