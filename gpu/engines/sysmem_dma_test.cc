// SPDX-License-Identifier: GPL-2.0-or-later
// The copy engine and semaphores through sysmem PTEs: DMA to and from the
// host's SystemMemory, and DMA errors as MMU faults (docs/spec/vgpu.md §4.5).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "gpu/engines/class_object.h"
#include "gpu/engines/copy_object.h"
#include "gpu/engines/testing/engine_env.h"

namespace vgpu::gpu {
namespace {

using namespace cls::copy;
using testing::Method;
using testing::pattern;

constexpr uint32_t LINEAR = LaunchTransferType::make(uint32_t(Transfer::non_pipelined)) | LaunchSrcPitch::make(1) |
                            LaunchDstPitch::make(1);

class SysmemDmaTest : public testing::EngineEnv {
 protected:
  static constexpr uint64_t RAM_BYTES = 1 * MiB;
  static constexpr uint64_t SYS_VA = 0x40'0000'0000;  // RAM_BYTES mapped, then one page past RAM

  void SetUp() override {
    EngineEnv::SetUp();
    auto r = MemfdRam::create(RAM_BYTES, "ram");
    ASSERT_TRUE(r.has_value());
    ram_ = *r;
    set_system_memory(ram_);
    for (uint64_t off = 0; off <= RAM_BYTES; off += fmt::SMALL_PAGE)
      ASSERT_TRUE(builder_->set_pte(pd_, SYS_VA + off, fmt::PageSize::small, fmt::pte::make_sysmem(off)).has_value());
  }

  std::vector<Method> copy(uint64_t src, uint64_t dst, uint32_t bytes) {
    return {{OFFSET_IN_UPPER, hi32(src)},  {OFFSET_IN_LOWER, lo32(src)}, {OFFSET_OUT_UPPER, hi32(dst)},
            {OFFSET_OUT_LOWER, lo32(dst)}, {LINE_LENGTH_IN, bytes},      {LINE_COUNT, 1},
            {LAUNCH_DMA, LINEAR}};
  }

  std::shared_ptr<MemfdRam> ram_;
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

TEST_F(SysmemDmaTest, CopyCrossingRamEndFaultsAndWritesNothing) {
  write_vec(LINEAR_VA, pattern(8192, 1));
  CopyObject ce;
  auto r = send(ce, copy(LINEAR_VA, SYS_VA + RAM_BYTES - 4096, 8192));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, regs::ChannelError::mmu_fault);
  ASSERT_TRUE(r.error().mmu.has_value());
  EXPECT_EQ(r.error().mmu->reason, regs::FaultReason::dma_error);
  EXPECT_EQ(r.error().mmu->va, SYS_VA + RAM_BYTES);
  EXPECT_EQ(ram_->data()[RAM_BYTES - 4096], std::byte{0});
}

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
