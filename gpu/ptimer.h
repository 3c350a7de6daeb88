// SPDX-License-Identifier: GPL-2.0-or-later
// PTIMER: the nanosecond counter, read from the model's Clock, and the alarm.
// As on Fermi, TIME_0 bits 4:0 read 0: the count is in nanoseconds with a
// 32 ns granule in the low word, and TIME_1 holds bits 60:32.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "common/reg_table.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {

class Ptimer {
 public:
  explicit Ptimer(Clock& clock) : clock_(clock) {}
  std::vector<RegRow> registers();

  static uint32_t time_0(uint64_t ns) { return lo32(ns) & regs::ptimer::Time0Count::mask; }
  static uint32_t time_1(uint64_t ns) { return regs::ptimer::Time1Count::get(hi32(ns)); }

  // Raise the alarm if its time has come (model lock held); true if it
  // did (an interrupt to deliver).
  bool poll();
  // Pending, enabled interrupts (model lock held).
  uint32_t pending() const { return intr_ & intr_en_; }
  // When the armed alarm fires, on the clock; none if not armed.
  std::optional<uint64_t> alarm_deadline() const { return deadline_; }
  // PMC.ENABLE cleared PTIMER.
  void reset();

 private:
  void arm(uint32_t alarm);

  Clock& clock_;
  uint32_t intr_ = 0;
  uint32_t intr_en_ = 0;
  uint32_t numerator_ = 0;
  uint32_t denominator_ = 0;
  uint32_t alarm_ = 0;
  std::optional<uint64_t> deadline_;
};

}  // namespace vgpu::gpu
