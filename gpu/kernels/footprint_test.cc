// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/kernels/footprint.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace vgpu::gpu::kernels {
namespace {

const BufferUse& named(const KernelFootprint& fp, std::string_view name) {
  for (const BufferUse& b : fp.buffers())
    if (name == b.name) return b;
  ADD_FAILURE() << "no buffer " << name;
  return fp.items[0];
}

cls::SgemmArgs gemm(uint32_t m, uint32_t n, uint32_t k, float beta) {
  cls::SgemmArgs a{};
  a.a = 0x1000, a.b = 0x2000, a.c = 0x3000;
  a.m = m, a.n = n, a.k = k, a.alpha = 1.0f, a.beta = beta;
  return a;
}

TEST(Footprint, SgemmSizesComeFromDimensions) {
  const auto fp = footprint(gemm(64, 48, 32, 1.0f));
  ASSERT_TRUE(fp);
  ASSERT_EQ(fp->buffers().size(), 3u);
  EXPECT_EQ(named(*fp, "a").bytes, 64u * 32 * 4);
  EXPECT_EQ(named(*fp, "a").va, 0x1000u);
  EXPECT_EQ(named(*fp, "b").bytes, 32u * 48 * 4);
  EXPECT_EQ(named(*fp, "c").bytes, 64u * 48 * 4);
  EXPECT_FALSE(named(*fp, "a").writable());
  EXPECT_EQ(named(*fp, "c").access, Access::read_write);
}

TEST(Footprint, SgemmWithBetaZeroOnlyWritesC) {
  const auto fp = footprint(gemm(4, 4, 4, 0.0f));
  ASSERT_TRUE(fp);
  EXPECT_EQ(named(*fp, "c").access, Access::write);
}

TEST(Footprint, SgemmDimensionBeyondBlasIntIsInvalid) {
  EXPECT_FALSE(footprint(gemm(0x80000000u, 1, 1, 0.0f)));
  EXPECT_FALSE(footprint(gemm(1, 1, 0x80000000u, 0.0f)));
}

TEST(Footprint, MaddByteCountOverflowIsInvalid) {
  cls::MaddArgs a{};
  a.rows = UINT32_MAX, a.cols = UINT32_MAX;  // 2^64 elements * 4 bytes
  EXPECT_FALSE(footprint(a));
}

TEST(Footprint, SaxpyReadsXAndUpdatesY) {
  cls::SaxpyArgs a{};
  a.x = 0x100, a.y = 0x200, a.n = 10;
  const auto fp = footprint(a);
  ASSERT_TRUE(fp);
  EXPECT_EQ(named(*fp, "x").access, Access::read);
  EXPECT_EQ(named(*fp, "y").access, Access::read_write);
  EXPECT_EQ(fp->traffic_bytes(), 3u * 10 * 4);
}

TEST(Footprint, FillOfZeroElementsIsAnEmptyValidLaunch) {
  cls::FillArgs a{};
  const auto fp = footprint(a);
  ASSERT_TRUE(fp);
  ASSERT_EQ(fp->buffers().size(), 1u);
  EXPECT_EQ(fp->buffers()[0].bytes, 0u);
  EXPECT_TRUE(fp->buffers()[0].writable());
}

cls::Conv2dArgs deepbench_conv1() {
  cls::Conv2dArgs a{};
  a.n = 4, a.c = 32, a.h = 79, a.w = 341, a.k = 32, a.r = 5, a.s = 10;
  a.stride_h = 2, a.stride_w = 2;
  return a;
}

TEST(Footprint, Conv2dSizesForDeepBenchConv1) {
  const auto fp = footprint(deepbench_conv1());
  ASSERT_TRUE(fp);
  EXPECT_EQ(named(*fp, "input").bytes, 4u * 32 * 79 * 341 * 4);
  EXPECT_EQ(named(*fp, "filter").bytes, 32u * 32 * 5 * 10 * 4);
  EXPECT_EQ(named(*fp, "output").bytes, 4u * 32 * 38 * 166 * 4);
  EXPECT_TRUE(named(*fp, "output").writable());
}

TEST(Footprint, Conv2dInvalidShapeIsInvalid) {
  auto a = deepbench_conv1();
  a.stride_w = 0;
  EXPECT_FALSE(footprint(a));
}

TEST(Footprint, Conv2dByteCountOverflowIsInvalid) {
  cls::Conv2dArgs a{};  // input: 2^16 * 2^16 * 2^15 * 2^15 * 4 bytes
  a.n = 0x10000, a.c = 0x10000, a.h = 0x8000, a.w = 0x8000, a.k = 1, a.r = 1, a.s = 1;
  a.stride_h = 1, a.stride_w = 1;
  EXPECT_FALSE(footprint(a));
}

TEST(Footprint, MriqListsNineBuffersWithTwoOutputs) {
  cls::MriqArgs a{};
  a.num_k = 100, a.num_x = 300;
  const auto fp = footprint(a);
  ASSERT_TRUE(fp);
  ASSERT_EQ(fp->buffers().size(), 9u);
  EXPECT_EQ(named(*fp, "phi_mag").bytes, 400u);
  EXPECT_EQ(named(*fp, "qi").bytes, 1200u);
  int writable = 0;
  for (const BufferUse& b : fp->buffers()) writable += b.writable() ? 1 : 0;
  EXPECT_EQ(writable, 2);
}

TEST(Footprint, SpinTouchesNoMemory) {
  const auto fp = footprint(cls::SpinArgs{1000});
  ASSERT_TRUE(fp);
  EXPECT_TRUE(fp->buffers().empty());
}

TEST(Footprint, DecodesArgumentBlockByKernel) {
  const auto args = gemm(8, 4, 2, 1.0f);
  std::vector<std::byte> block(64);  // a constant buffer is larger than the struct
  std::memcpy(block.data(), &args, sizeof args);
  const auto fp = footprint(cls::Kernel::sgemm, block);
  ASSERT_TRUE(fp);
  EXPECT_EQ(named(*fp, "c").bytes, 8u * 4 * 4);
  EXPECT_EQ(args_size(cls::Kernel::conv2d), sizeof(cls::Conv2dArgs));
}

TEST(Footprint, ShortArgumentBlockIsInvalid) {
  std::vector<std::byte> block(sizeof(cls::SgemmArgs) - 1);
  EXPECT_FALSE(footprint(cls::Kernel::sgemm, block));
}

TEST(Footprint, UnknownKernelIsInvalid) {
  std::vector<std::byte> block(128);
  EXPECT_FALSE(footprint(static_cast<cls::Kernel>(99), block));
  EXPECT_EQ(args_size(static_cast<cls::Kernel>(0)), 0u);
}

}  // namespace
}  // namespace vgpu::gpu::kernels
