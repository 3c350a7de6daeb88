// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/ptimer.h"

namespace vgpu::gpu {

using namespace regs::ptimer;

namespace {
// The counter rate is fixed at 1 ns; NUMERATOR/DENOMINATOR are stored only.
constexpr uint32_t RATE_FIELD_BITS = 0xffff;
}  // namespace

void Ptimer::add_registers(RegisterFile& rf) {
  rf.add(RegRecord{"PTIMER.INTR_0", single(INTR_0), Access::rw1c, Gate::ptimer,
                   [this](uint32_t) {
                     poll();
                     return intr_;
                   },
                   [this](uint32_t, uint32_t v) { intr_ &= ~v; }});
  rf.add(stored_rw("PTIMER.INTR_EN_0", INTR_EN_0, Gate::ptimer, intr_en_, IntrAlarm::mask));
  rf.add(stored_rw("PTIMER.NUMERATOR", NUMERATOR, Gate::ptimer, numerator_, RATE_FIELD_BITS));
  rf.add(stored_rw("PTIMER.DENOMINATOR", DENOMINATOR, Gate::ptimer, denominator_, RATE_FIELD_BITS));
  rf.add(RegRecord{"PTIMER.TIME_0", single(TIME_0), Access::ro, Gate::ptimer,
                   [this](uint32_t) { return time_0(clock_.now_ns()); }, nullptr});
  rf.add(RegRecord{"PTIMER.TIME_1", single(TIME_1), Access::ro, Gate::ptimer,
                   [this](uint32_t) { return time_1(clock_.now_ns()); }, nullptr});
  rf.add(RegRecord{"PTIMER.ALARM_0", single(ALARM_0), Access::rw, Gate::ptimer,
                   [this](uint32_t) { return alarm_; },
                   [this](uint32_t, uint32_t v) { arm(v & Time0Count::mask); }});
}

void Ptimer::arm(uint32_t alarm) {
  alarm_ = alarm;
  // The alarm fires when TIME_0 bits 31:5 next equal ALARM_0 bits 31:5.
  const uint64_t now = clock_.now_ns();
  const uint32_t ahead = alarm - time_0(now);  // wraps modulo 2^32
  const uint64_t granule_start = now - (lo32(now) & ~Time0Count::mask);
  deadline_ = granule_start + ahead;
  poll();
}

void Ptimer::poll() {
  if (!deadline_ || clock_.now_ns() < *deadline_) return;
  intr_ |= IntrAlarm::mask;
  deadline_.reset();
}

void Ptimer::reset() {
  intr_ = 0;
  intr_en_ = 0;
  deadline_.reset();
}

}  // namespace vgpu::gpu
