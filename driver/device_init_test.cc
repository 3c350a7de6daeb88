// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/device_init.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "driver/testing/fake_port.h"
#include "driver/timer.h"
#include "vgpu/regs.h"

namespace vgpu::driver {
namespace {

using testing::FakePort;

bool wrote(const FakePort& p, uint32_t off, uint32_t value) {
  return std::ranges::find(p.writes, std::pair{off, value}) != p.writes.end();
}

TEST(DeviceInit, Gf100IsIdentified) {
  FakePort port;
  auto info = identify(port);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->chipset, regs::CHIPSET_GF100);
  EXPECT_EQ(info->stepping, regs::pci::REVISION);
}

TEST(DeviceInit, OtherChipsetIsUnsupported) {
  FakePort port;
  port.regs[regs::pmc::BOOT_0.offset] = regs::pmc::Boot0Chipset::make(0x0e4);
  auto info = identify(port);
  ASSERT_FALSE(info);
  EXPECT_EQ(info.error().code, Errc::unsupported);
  EXPECT_NE(info.error().message.find("0xe4"), std::string::npos);
}

TEST(DeviceInit, AbsentDeviceReadingAllOnesIsUnsupported) {
  FakePort port;
  port.regs[regs::pmc::BOOT_0.offset] = ~0u;
  EXPECT_EQ(identify(port).error().code, Errc::unsupported);
}

TEST(DeviceInit, EnablesEveryUnitAndPbdma) {
  FakePort port;
  ASSERT_TRUE(init_device(port));
  EXPECT_TRUE(wrote(port, regs::pmc::ENABLE.offset, regs::pmc::enable::ALL));
  EXPECT_TRUE(wrote(port, regs::pmc::PBDMA_ENABLE.offset, (1u << regs::NUM_PBDMA) - 1));
}

TEST(DeviceInit, RoutesInterrupts) {
  FakePort port;
  ASSERT_TRUE(init_device(port));
  EXPECT_TRUE(wrote(port, regs::pmc::INTR_EN_0.offset, regs::pmc::IntrEnHardware::mask));
  EXPECT_TRUE(port.reg_or0(regs::pmc::INTR_MASK_0.offset) & regs::pmc::intr::Pfifo::mask);
  EXPECT_TRUE(port.reg_or0(regs::pfifo::INTR_EN.offset) & regs::pfifo::IntrChannelError::mask);
}

TEST(DeviceInit, VramIsSumOfEnabledPartitions) {
  FakePort port;
  port.regs[regs::punits::FBP_COUNT.offset] = 3;
  port.regs[regs::punits::FBP_DISABLED_MASK.offset] = 0b010;
  port.regs[regs::pfb::FBPA_MIB[0].offset] = 64;
  port.regs[regs::pfb::FBPA_MIB[1].offset] = 1000;  // disabled: not counted
  port.regs[regs::pfb::FBPA_MIB[2].offset] = 32;
  auto info = init_device(port);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->vram_bytes, 96 * MiB);
}

TEST(DeviceInit, NoVramIsDeviceError) {
  FakePort port;
  port.regs[regs::pfb::FBPA_MIB[0].offset] = 0;
  EXPECT_EQ(probe_vram(port).error().code, Errc::device_error);
}

// A port whose timer carries from TIME_0 into TIME_1 between two reads.
class CarryPort final : public Port {
 public:
  uint32_t read32(Bar, uint64_t off) override {
    if (off == regs::ptimer::TIME_1.offset) return hi_reads++ == 0 ? 1 : 2;
    if (off == regs::ptimer::TIME_0.offset) return lo_reads++ == 0 ? 0xffffffe0u : 0x20u;
    return 0;
  }
  void write32(Bar, uint64_t, uint32_t) override {}
  std::span<std::byte> map(Bar, uint64_t, uint64_t) override { return {}; }
  uint64_t bar_size(Bar) const override { return 0; }
  std::string name() const override { return "carry"; }
  int hi_reads = 0, lo_reads = 0;
};

TEST(Timer, RetriesWhenHighWordMoves) {
  CarryPort port;
  EXPECT_EQ(read_time_ns(port), join64(2, 0x20));
  EXPECT_EQ(port.lo_reads, 2);
}

}  // namespace
}  // namespace vgpu::driver
