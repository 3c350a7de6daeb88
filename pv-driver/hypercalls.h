// SPDX-License-Identifier: GPL-2.0-or-later
// The guest side of the vGPU's paravirtual interface (spec §17): one batch
// slot in the slot area, filled as the driver maps and unmaps, and run
// with one DOORBELL write. A full batch is run before the next operation
// is added. Not thread-safe (one per Device, like the rest of the driver).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "driver/instmem.h"
#include "driver/port.h"
#include "driver/vmm.h"
#include "vgpu/regs.h"

namespace vgpu::pvdriver {

struct PvOp {
  regs::pv::Opcode code = regs::pv::Opcode::nop;
  uint32_t flags = 0;  // regs::pv::op::Big, ReadOnly, Sysmem
  uint32_t space = 0;
  uint64_t va = 0;
  uint64_t addr = 0;
  uint32_t pages = 0;
};

using driver::HypercallStats;

class Hypercalls {
 public:
  // Whether the device offers the interface (PV.CAPS).
  static bool offered(driver::Port& port);
  // Names the slot area [area, area + AREA_BYTES) of guest VRAM (SLOT_BYTES
  // aligned; the caller allocated it) and uses slot `slot` of it.
  [[nodiscard]] static Result<std::unique_ptr<Hypercalls>> open(driver::Port& port, driver::InstMem& mem, uint64_t area,
                                                                uint32_t slot = 0);

  // Appends an operation; when the batch is full it is run first.
  [[nodiscard]] Status add(const PvOp& op);
  // Runs the batch (nothing when it is empty). An error names the first
  // failing operation and its result code; the rest of that batch did not
  // run (stop on first failure).
  [[nodiscard]] Status submit();
  size_t pending() const { return count_; }

  // Address space ids [0, SPACES): the next free one.
  [[nodiscard]] Result<uint32_t> alloc_space();
  void free_space(uint32_t id);

  const HypercallStats& stats() const { return stats_; }

 private:
  Hypercalls(driver::Port& port, driver::InstMem& mem, uint64_t slot_addr, uint32_t slot)
      : port_(port), mem_(mem), slot_addr_(slot_addr), slot_(slot), used_(regs::pv::SPACES, false) {}

  driver::Port& port_;
  driver::InstMem& mem_;
  const uint64_t slot_addr_;
  const uint32_t slot_;
  uint32_t count_ = 0;
  std::vector<bool> used_;
  std::vector<regs::pv::Opcode> codes_;  // of the pending ops, for messages
  HypercallStats stats_;
};

// A result code's name (spec §17.6).
const char* result_name(uint32_t code);

}  // namespace vgpu::pvdriver
