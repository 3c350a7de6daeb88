// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/bars.h"

#include <gtest/gtest.h>

#include "driver/testing/fake_port.h"
#include "vgpu/regs.h"

namespace vgpu::driver {
namespace {

using testing::FakePort;

struct BarsTest : ::testing::Test {
  void SetUp() override {
    ASSERT_TRUE(vram.reserve(0, 64 * KiB));
    auto h = vram.alloc(4 * MiB, fmt::BIG_PAGE);
    ASSERT_TRUE(h);
    heap = std::make_unique<RangeAllocator>("instance heap", *h, 4 * MiB);
    tables = std::make_unique<TableMemory>(*heap, &vram);
  }
  FakePort port{64 * MiB};
  InstMem mem{port};
  RangeAllocator vram{"vram", 0, 64 * MiB};
  std::unique_ptr<RangeAllocator> heap;
  std::unique_ptr<TableMemory> tables;
};

TEST_F(BarsTest, Bar3MapsInstanceHeapLinearly) {
  auto bars = Bars::init(port, mem, *heap, vram, *tables);
  ASSERT_TRUE(bars) << bars.error().what();
  const uint32_t reg = port.reg_or0(regs::pbus::BAR3_INST.offset);
  EXPECT_TRUE(regs::pbus::BarInstMode::get(reg));
  EXPECT_EQ(uint64_t{regs::pbus::BarInstAddr::get(reg)} << 12, (*bars)->bar3_inst());
  for (uint64_t off : {uint64_t{0}, uint64_t{0x1000}, 4 * MiB - 4}) {
    auto a = port.translate(Bar::bar3, off);
    ASSERT_TRUE(a);
    EXPECT_EQ(*a, heap->base() + off);
  }
}

TEST_F(BarsTest, InstanceMemoryMovesToBar3AfterBootstrap) {
  auto bars = Bars::init(port, mem, *heap, vram, *tables);
  ASSERT_TRUE(bars);
  EXPECT_TRUE(mem.bar3_active());
  const uint64_t pramin_before = mem.stats().pramin_accesses;
  port.bar_writes.clear();
  mem.write32(heap->base() + 0x2340, 0xcafe);
  EXPECT_EQ(mem.stats().pramin_accesses, pramin_before);
  ASSERT_EQ(port.bar_writes.size(), 1u);
  EXPECT_EQ(port.bar_writes[0].first, Bar::bar3);
  EXPECT_EQ(port.vram32(heap->base() + 0x2340), 0xcafeu);
}

TEST_F(BarsTest, Bar1MapsUserdAndProgramsUserdBase) {
  auto bars = Bars::init(port, mem, *heap, vram, *tables);
  ASSERT_TRUE(bars);
  const uint32_t base = port.reg_or0(regs::pfifo::USERD_BASE.offset);
  EXPECT_TRUE(regs::pfifo::UserdBaseEnable::get(base));
  EXPECT_EQ(uint64_t{regs::pfifo::UserdBaseAddr::get(base)} << 12, (*bars)->userd_bar1(0));
  EXPECT_TRUE(regs::pbus::BarInstMode::get(port.reg_or0(regs::pbus::BAR1_INST.offset)));
  auto a = port.translate(Bar::bar1, (*bars)->userd_bar1(5) + regs::userd::GP_PUT);
  ASSERT_TRUE(a);
  EXPECT_EQ(*a, (*bars)->userd_vram(5) + regs::userd::GP_PUT);
}

TEST_F(BarsTest, Bar1MapsBuffersOnDemand) {
  auto bars = Bars::init(port, mem, *heap, vram, *tables);
  ASSERT_TRUE(bars);
  auto buf = vram.alloc(3 * fmt::SMALL_PAGE, fmt::SMALL_PAGE);
  ASSERT_TRUE(buf);
  auto off = (*bars)->bar1().map(*buf, 3 * fmt::SMALL_PAGE);
  ASSERT_TRUE(off);
  port.write32(Bar::bar1, *off + 0x2008, 77);
  EXPECT_EQ(port.vram32(*buf + 0x2008), 77u);
  ASSERT_TRUE((*bars)->bar1().unmap(*off));
  EXPECT_FALSE(port.translate(Bar::bar1, *off));
}

TEST_F(BarsTest, HeapLargerThanBar3IsInvalid) {
  RangeAllocator big("instance heap", 32 * MiB, 32 * MiB);
  TableMemory t(big, nullptr);
  auto bars = Bars::init(port, mem, big, vram, t);
  ASSERT_FALSE(bars);
  EXPECT_EQ(bars.error().code, Errc::invalid_argument);
  EXPECT_NE(bars.error().message.find("BAR3"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::driver
