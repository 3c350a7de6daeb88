// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/ptimer.h"

namespace vgpu::gpu {

using namespace regs::ptimer;

namespace {
// The counter rate is fixed at 1 ns; NUMERATOR/DENOMINATOR are stored only.
constexpr uint32_t RATE_FIELD_BITS = 0xffff;
}  // namespace

std::vector<RegRow> Ptimer::registers() {
  std::vector<RegRow> rows{
      // Write-1-to-clear, but a read first raises an alarm that is due.
      sensitive(
          "PTIMER.INTR_0", INTR_0,
          [this](uint32_t) {
            poll();
            return intr_;
          },
          [this](uint32_t, uint32_t v) { intr_ &= ~v; }),
      plain("PTIMER.INTR_EN_0", INTR_EN_0, intr_en_, IntrAlarm::mask),
      plain("PTIMER.NUMERATOR", NUMERATOR, numerator_, RATE_FIELD_BITS),
      plain("PTIMER.DENOMINATOR", DENOMINATOR, denominator_, RATE_FIELD_BITS),
      read_only("PTIMER.TIME_0", TIME_0, [this](uint32_t) { return time_0(clock_.now_ns()); }),
      read_only("PTIMER.TIME_1", TIME_1, [this](uint32_t) { return time_1(clock_.now_ns()); }),
      sensitive("PTIMER.ALARM_0", ALARM_0, alarm_, [this](uint32_t, uint32_t v) { arm(v & Time0Count::mask); }),
  };
  for (RegRow& r : rows) r.gate = Gate::ptimer;
  return rows;
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

bool Ptimer::poll() {
  if (!deadline_ || clock_.now_ns() < *deadline_) return false;
  intr_ |= IntrAlarm::mask;
  deadline_.reset();
  return true;
}

void Ptimer::reset() {
  intr_ = 0;
  intr_en_ = 0;
  deadline_.reset();
}

}  // namespace vgpu::gpu
