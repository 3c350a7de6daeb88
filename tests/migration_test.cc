// SPDX-License-Identifier: GPL-2.0-or-later
// Migration of a vGPU's device state between two hosts in one process
// (docs/migration.md §12, build steps M1 and M4 so far): the source's
// image is read into a fresh vGPU on a second host whose partition got the
// source's VRAM (as QEMU's RAM migration gives it); the destination must
// then show the guest what the source showed. A bound channel is exported
// only from a frozen vGPU (its move: migration_channels_test.cc).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "driver/runtime.h"
#include "mediator/vgpu.h"
#include "testbed/testbed.h"
#include "tests/testing/moving_vgpu.h"

namespace vgpu::mediator {
namespace {

using driver::Bar;
using testbed::Mode;

using moving::copy_partition;
using moving::make_testbed;
using moving::VM_CHANNELS;
using moving::VM_VRAM;
constexpr uint32_t INTR_MASK = 0x5a5a0000;
constexpr uint32_t PTIMER_NUM = 3, PTIMER_DEN = 7;
using moving::FREEZE_NS;

// BAR0 registers a driver sets up, each read through the VM's port.
const Reg32 CHECKED[] = {regs::pmc::INTR_EN_0,      regs::pmc::INTR_MASK_0,  regs::pmc::PBDMA_ENABLE,
                         regs::pfifo::INTR_EN,      regs::pfifo::CTRL,       regs::pfifo::USERD_BASE,
                         regs::pfifo::RUNLIST_BASE, regs::ptimer::NUMERATOR, regs::ptimer::DENOMINATOR,
                         regs::pbus::PRAMIN_WINDOW, regs::pbus::INTR_EN,     regs::pbus::BAR1_INST,
                         regs::pbus::BAR3_INST,     regs::pmc::INTR_0};

class Migration : public ::testing::TestWithParam<Mode> {
 protected:
  // Hosts A and B of the test's mode, A's driver opened and its interrupt
  // mask set to INTR_MASK (a value no reset gives).
  void open_source() {
    a = make_testbed(GetParam());
    b = make_testbed(GetParam());
    ASSERT_TRUE(a && b);
    auto d = driver::Device::open(a->port(0));
    ASSERT_TRUE(d) << d.error().what();
    dev = std::move(*d);
    a->port(0).write32(Bar::bar0, regs::pmc::INTR_MASK_0.offset, INTR_MASK);
  }

  std::unique_ptr<testbed::Testbed> a, b;
  std::unique_ptr<driver::Device> dev;
};

TEST_P(Migration, DeviceStateAndBarMappingsMoveWithTheImage) {
  ASSERT_NO_FATAL_FAILURE(open_source());
  a->port(0).write32(Bar::bar0, regs::ptimer::NUMERATOR.offset, PTIMER_NUM);
  a->port(0).write32(Bar::bar0, regs::ptimer::DENOMINATOR.offset, PTIMER_DEN);

  Result<std::vector<uint8_t>> image = a->vgpu(0)->export_image();
  ASSERT_TRUE(image) << image.error().what();
  copy_partition(*a, *b);
  ASSERT_TRUE(b->vgpu(0)->import_image(*image)) << "import refused";

  // Preconditions: the driver set the BAR1 instance up, the test's values are there.
  ASSERT_NE(a->port(0).read32(Bar::bar0, regs::pbus::BAR1_INST.offset), 0u);
  EXPECT_EQ(b->port(0).read32(Bar::bar0, regs::pmc::INTR_MASK_0.offset), INTR_MASK);
  for (Reg32 r : CHECKED)
    EXPECT_EQ(b->port(0).read32(Bar::bar0, r.offset), a->port(0).read32(Bar::bar0, r.offset))
        << "BAR0 offset " << std::hex << r.offset;
  // The BAR1 and BAR3 shadows were rebuilt from the guest's tables in the
  // moved VRAM: every page reads the same through either vGPU.
  for (Bar bar : {Bar::bar1, Bar::bar3}) {
    const gpu::Bar gbar = bar == Bar::bar1 ? gpu::Bar::bar1 : gpu::Bar::bar3;
    auto ra = a->vgpu(0)->direct_ranges(gbar), rb = b->vgpu(0)->direct_ranges(gbar);
    ASSERT_EQ(ra.size(), rb.size());
    if (GetParam() == Mode::fv_opt && bar == Bar::bar1) {
      EXPECT_FALSE(ra.empty()) << "no BAR1 page is remapped";
    }
    for (size_t i = 0; i < ra.size(); ++i) {
      EXPECT_EQ(ra[i].bar_offset, rb[i].bar_offset);
      EXPECT_EQ(ra[i].vram_addr - a->vgpu(0)->partition().base, rb[i].vram_addr - b->vgpu(0)->partition().base);
      EXPECT_EQ(ra[i].bytes, rb[i].bytes);
    }
  }
  // The image of the destination is the source's: nothing was lost or added.
  Result<std::vector<uint8_t>> again = b->vgpu(0)->export_image();
  ASSERT_TRUE(again) << again.error().what();
  EXPECT_EQ(*again, *image);
}

// A bound channel's state is exported only from a frozen vGPU (M3), where
// no piece runs; migration_channels_test.cc moves one.
TEST_P(Migration, BoundChannelIsExportedOnlyWhileFrozen) {
  a = make_testbed(GetParam());
  ASSERT_TRUE(a);
  auto on_a = driver::Device::open(a->port(0));
  ASSERT_TRUE(on_a) << on_a.error().what();
  auto ctx = (*on_a)->create_context();
  ASSERT_TRUE(ctx) << ctx.error().what();
  Result<std::vector<uint8_t>> image = a->vgpu(0)->export_image();
  ASSERT_FALSE(image);
  EXPECT_EQ(image.error().message, "vgpu: a vGPU with bound channels is exported only while frozen");
  ASSERT_TRUE(a->vgpu(0)->freeze(FREEZE_NS));
  image = a->vgpu(0)->export_image();
  EXPECT_TRUE(image) << image.error().what();
  a->vgpu(0)->thaw();
}

TEST_P(Migration, PingPongBackToTheSourceKeepsTheImage) {
  ASSERT_NO_FATAL_FAILURE(open_source());
  Result<std::vector<uint8_t>> first = a->vgpu(0)->export_image();
  ASSERT_TRUE(first) << first.error().what();
  // The image of `from`, read by `to` (with the VRAM moved first).
  auto move = [](testbed::Testbed& from, testbed::Testbed& to) -> Status {
    copy_partition(from, to);
    Result<std::vector<uint8_t>> image = from.vgpu(0)->export_image();
    if (!image) return std::unexpected(image.error());
    return to.vgpu(0)->import_image(*image);
  };
  for (int round = 0; round < 3; ++round) {  // A -> B -> A, three times
    Status there = move(*a, *b);
    ASSERT_TRUE(there) << "round " << round << ", A -> B: " << there.error().what();
    Status back = move(*b, *a);
    ASSERT_TRUE(back) << "round " << round << ", B -> A: " << back.error().what();
  }
  Result<std::vector<uint8_t>> last = a->vgpu(0)->export_image();
  ASSERT_TRUE(last);
  EXPECT_EQ(*last, *first);
  EXPECT_EQ(a->port(0).read32(Bar::bar0, regs::pmc::INTR_MASK_0.offset), INTR_MASK);
}

TEST_P(Migration, ImportIntoAVgpuWithABoundChannelIsRefused) {
  a = make_testbed(GetParam());
  b = make_testbed(GetParam());
  ASSERT_TRUE(a && b);
  Result<std::vector<uint8_t>> image = a->vgpu(0)->export_image();
  ASSERT_TRUE(image) << image.error().what();
  auto on_b = driver::Device::open(b->port(0));
  ASSERT_TRUE(on_b) << on_b.error().what();
  auto ctx = (*on_b)->create_context();
  ASSERT_TRUE(ctx) << ctx.error().what();
  Status s = b->vgpu(0)->import_image(*image);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("only into a vGPU with no bound channel"), std::string::npos) << s.error().message;
}

TEST(Migration, ImageForAnotherVramSizeIsRefused) {
  auto a = make_testbed(Mode::fv_opt);
  auto b = make_testbed(Mode::fv_opt, 2 * VM_VRAM);
  ASSERT_TRUE(a && b);
  Result<std::vector<uint8_t>> image = a->vgpu(0)->export_image();
  ASSERT_TRUE(image) << image.error().what();
  Status s = b->vgpu(0)->import_image(*image);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "vgpu: migration image has vram=64 MiB, this device vram=128 MiB");
}

INSTANTIATE_TEST_SUITE_P(Modes, Migration, ::testing::Values(Mode::fv_naive, Mode::fv_opt),
                         [](const auto& p) { return testbed::mode_identifier(p.param); });

}  // namespace
}  // namespace vgpu::mediator
