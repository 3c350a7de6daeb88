// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

#include "gpu/testing/harness.h"

namespace vgpu::gpu {
namespace {

using namespace regs;

struct VirtualModel {
  std::unique_ptr<GpuModel> gpu;
  VirtualClock& clock;
  static VirtualModel make() {
    auto g = GpuModel::create(GpuConfig{testing::VRAM_BYTES, ClockKind::virtual_time});
    EXPECT_TRUE(g.has_value());
    auto& c = dynamic_cast<VirtualClock&>((*g)->clock());
    (*g)->write32(pmc::ENABLE.offset, pmc::enable::ALL);
    return VirtualModel{std::move(*g), c};
  }
};

uint64_t read_time_safely(GpuModel& g) {
  for (;;) {
    const uint32_t hi = g.read32(ptimer::TIME_1.offset);
    const uint32_t lo = g.read32(ptimer::TIME_0.offset);
    if (g.read32(ptimer::TIME_1.offset) == hi) return join64(hi, lo);
  }
}

TEST(Ptimer, TimeIsTheClockInNanosecondsWithLowBitsZero) {
  auto m = VirtualModel::make();
  m.clock.advance_to(0x123456789bull);
  EXPECT_EQ(m.gpu->read32(ptimer::TIME_0.offset), 0x3456789bu & ~0x1fu);
  EXPECT_EQ(m.gpu->read32(ptimer::TIME_1.offset), 0x12u);
  EXPECT_EQ(m.gpu->read32(pfifo::TIME_LO.offset), 0x3456789bu & ~0x1fu);
}

TEST(Ptimer, SafeReadOrderGivesAMonotonicTime) {
  auto m = VirtualModel::make();
  m.clock.advance_to((uint64_t{5} << 32) - 64);
  const uint64_t a = read_time_safely(*m.gpu);
  m.clock.advance_to((uint64_t{5} << 32) + 64);
  const uint64_t b = read_time_safely(*m.gpu);
  EXPECT_LT(a, b);
  EXPECT_EQ(b, (uint64_t{5} << 32) + 64);
}

TEST(Ptimer, TimeIsReadOnly) {
  auto m = VirtualModel::make();
  m.clock.advance_to(1000);
  m.gpu->write32(ptimer::TIME_0.offset, 0);
  EXPECT_EQ(m.gpu->read32(ptimer::TIME_0.offset), 1000u & ~0x1fu);
}

TEST(Ptimer, AlarmRaisesInterruptWhenReached) {
  auto m = VirtualModel::make();
  m.gpu->write32(pmc::INTR_EN_0.offset, pmc::IntrEnHardware::mask);
  m.gpu->write32(ptimer::INTR_EN_0.offset, ptimer::IntrAlarm::mask);
  m.gpu->write32(ptimer::ALARM_0.offset, 5000);
  EXPECT_EQ(m.gpu->read32(ptimer::INTR_0.offset), 0u);
  m.clock.advance_to(5000);
  EXPECT_EQ(m.gpu->read32(ptimer::INTR_0.offset), ptimer::IntrAlarm::mask);
  EXPECT_TRUE(m.gpu->read32(pmc::INTR_0.offset) & pmc::intr::Ptimer::mask);
  EXPECT_TRUE(testing::line_becomes(*m.gpu, true));
  m.gpu->write32(ptimer::INTR_0.offset, ptimer::IntrAlarm::mask);
  EXPECT_EQ(m.gpu->read32(ptimer::INTR_0.offset), 0u);
  EXPECT_TRUE(testing::line_becomes(*m.gpu, false));
}

// No register access after the alarm's time: PFIFO's loop polls the
// timer and delivers what its poll raised (it skips deliveries with
// nothing new, and this one has something).
TEST(Ptimer, AlarmReachedWithNoRegisterAccessIsDeliveredByPfifosPoll) {
  auto m = VirtualModel::make();
  m.gpu->write32(pmc::INTR_EN_0.offset, pmc::IntrEnHardware::mask);
  m.gpu->write32(ptimer::INTR_EN_0.offset, ptimer::IntrAlarm::mask);
  m.gpu->write32(ptimer::ALARM_0.offset, 5000);
  EXPECT_FALSE(m.gpu->interrupt_asserted());
  m.clock.advance_to(5000);
  EXPECT_TRUE(testing::line_becomes(*m.gpu, true));
  EXPECT_EQ(m.gpu->read32(ptimer::INTR_0.offset), ptimer::IntrAlarm::mask);
}

TEST(Ptimer, RateRegistersAreStored) {
  auto m = VirtualModel::make();
  m.gpu->write32(ptimer::NUMERATOR.offset, 8);
  m.gpu->write32(ptimer::DENOMINATOR.offset, 3);
  EXPECT_EQ(m.gpu->read32(ptimer::NUMERATOR.offset), 8u);
  EXPECT_EQ(m.gpu->read32(ptimer::DENOMINATOR.offset), 3u);
}

}  // namespace
}  // namespace vgpu::gpu
