// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

#include <vector>

#include "gpu/engines/class_object.h"
#include "gpu/engines/testing/engine_env.h"

namespace vgpu::gpu {
namespace {

using SemaphoreTest = testing::EngineEnv;

TEST_F(SemaphoreTest, OneWordReleaseWritesPayloadAndWakesWaiters) {
  write_vec(LINEAR_VA, std::vector<uint32_t>{0, 9, 9, 9});
  ChannelContext ctx = context();
  ASSERT_TRUE(release_semaphore(ctx, LINEAR_VA, 42, false, 0x1c).has_value());
  EXPECT_EQ(read_vec<uint32_t>(LINEAR_VA, 4), (std::vector<uint32_t>{42, 9, 9, 9}));
  EXPECT_EQ(semaphore_writes_, 1);
}

TEST_F(SemaphoreTest, FourWordReleaseWritesPayloadZeroTimestamp) {
  clock_.advance_to(0x1'2345'6789);
  write_vec(LINEAR_VA, std::vector<uint32_t>(4, 9));
  ChannelContext ctx = context();
  ASSERT_TRUE(release_semaphore(ctx, LINEAR_VA, 42, true, 0x1c).has_value());
  EXPECT_EQ(read_vec<uint32_t>(LINEAR_VA, 4), (std::vector<uint32_t>{42, 0, 0x2345'6789, 0x1}));
}

TEST_F(SemaphoreTest, UnmappedReleaseIsMmuFault) {
  ChannelContext ctx = context();
  auto r = release_semaphore(ctx, UNMAPPED_VA, 1, true, 0x1c);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, regs::ChannelError::mmu_fault);
  EXPECT_EQ(r.error().method, 0x1cu);
  ASSERT_TRUE(r.error().mmu.has_value());
  EXPECT_TRUE(r.error().mmu->write);
  EXPECT_EQ(semaphore_writes_, 0);
}

TEST_F(SemaphoreTest, MisalignedReleaseIsBadArgument) {
  ChannelContext ctx = context();
  auto r = release_semaphore(ctx, LINEAR_VA + 2, 1, false, 0x1c);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, regs::ChannelError::bad_argument);
  EXPECT_EQ(r.error().addr, LINEAR_VA + 2);
}

TEST(ClassFactory, MakesCopyAndComputeOnly) {
  auto copy = make_class_object(cls::DMA_COPY);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->class_id(), cls::DMA_COPY);
  auto compute = make_class_object(cls::COMPUTE);
  ASSERT_NE(compute, nullptr);
  EXPECT_EQ(compute->class_id(), cls::COMPUTE);
  EXPECT_EQ(make_class_object(cls::CHANNEL_GPFIFO), nullptr);
  EXPECT_EQ(make_class_object(0x9097), nullptr);
}

}  // namespace
}  // namespace vgpu::gpu
