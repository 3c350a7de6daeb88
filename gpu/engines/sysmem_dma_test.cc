// SPDX-License-Identifier: GPL-2.0-or-later
// The copy engine and semaphores through sysmem PTEs: DMA to and from the
// host's SystemMemory, and DMA errors as MMU faults (docs/spec/vgpu.md §4.5).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "gpu/engines/class_object.h"
#include "gpu/engines/copy_object.h"
#include "gpu/engines/testing/sysmem_env.h"

namespace vgpu::gpu {
namespace {

using namespace cls::copy;
using testing::Method;
using testing::pattern;

class SysmemDmaTest : public testing::SysmemEnv {
 protected:
  void SetUp() override {
    EngineEnv::SetUp();
    attach_ram();
  }
};

TEST_F(SysmemDmaTest, CopyFromSysmemToVram) {
  const auto data = pattern(300000, 3);
  std::memcpy(ram_->data() + 0x1234, data.data(), data.size());
  CopyObject ce;
  ASSERT_TRUE(send(ce, copy(SYS_VA + 0x1234, LINEAR_VA + 5, 300000)).has_value());
  EXPECT_EQ(read_vec<uint8_t>(LINEAR_VA + 5, data.size()), data);
}

TEST_F(SysmemDmaTest, CopyFromVramToSysmem) {
  const auto data = pattern(200000, 7);
  write_vec(SCATTER_VA, std::vector<uint8_t>(data.begin(), data.begin() + 16 * 4096 - 100));
  write_vec(LINEAR_VA, data);
  CopyObject ce;
  ASSERT_TRUE(send(ce, copy(LINEAR_VA, SYS_VA + 100, 200000)).has_value());
  EXPECT_EQ(std::memcmp(ram_->data() + 100, data.data(), data.size()), 0);
}

TEST_F(SysmemDmaTest, CopyWithinSysmem) {
  const auto data = pattern(50000, 9);
  std::memcpy(ram_->data(), data.data(), data.size());
  CopyObject ce;
  ASSERT_TRUE(send(ce, copy(SYS_VA, SYS_VA + 512 * KiB, 50000)).has_value());
  EXPECT_EQ(std::memcmp(ram_->data() + 512 * KiB, data.data(), data.size()), 0);
}

TEST_F(SysmemDmaTest, CopyCrossingRamEndFaultsAndWritesNothing) { expect_copy_past_ram_end_faults(); }

TEST_F(SysmemDmaTest, SemaphoreReleaseToSysmem) {
  ChannelContext ctx = context();
  ASSERT_TRUE(release_semaphore(ctx, SYS_VA + 0x40, 77, false, 0x1c).has_value());
  uint32_t v = 0;
  std::memcpy(&v, ram_->data() + 0x40, 4);
  EXPECT_EQ(v, 77u);
}

TEST_F(SysmemDmaTest, SemaphoreReleasePastRamFaultsDmaError) {
  ChannelContext ctx = context();
  auto r = release_semaphore(ctx, SYS_VA + RAM_BYTES, 77, true, 0x1c);
  ASSERT_FALSE(r.has_value());
  ASSERT_TRUE(r.error().mmu.has_value());
  EXPECT_EQ(r.error().mmu->reason, regs::FaultReason::dma_error);
  EXPECT_EQ(semaphore_writes_, 0);
}

}  // namespace
}  // namespace vgpu::gpu
