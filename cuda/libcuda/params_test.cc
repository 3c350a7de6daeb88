// SPDX-License-Identifier: GPL-2.0-or-later
#include "cuda/libcuda/params.h"

#include <gtest/gtest.h>

#include <cstring>

#include "ptx/testing/param_bytes.h"

namespace vgpu::cuda {
namespace {

using ptx::testing::at;

// clang-14's layout of axpb(float* y, char flag, Pair p, unsigned n) with
// struct Pair { float; unsigned char; double; } (.param .align 8 .b8 [16]).
ptx::EntryInfo axpb() {
  ptx::EntryInfo e;
  e.name = "axpb";
  e.params = {{"axpb_param_0", 0, 8, 8},
              {"axpb_param_1", 8, 1, 1},
              {"axpb_param_2", 16, 16, 8},
              {"axpb_param_3", 32, 4, 4}};
  e.param_bytes = 36;
  return e;
}

struct Pair {
  float scale;
  unsigned char tag;
  double bias;
};

TEST(CudaParams, KernelParamsGoToTheirOffsets) {
  uint64_t y = 0x1234'5678'9abc'def0;
  char flag = 7;
  Pair p{2.5f, 9, -1.25};
  unsigned n = 1000;
  void* args[] = {&y, &flag, &p, &n};
  auto buf = pack_params(axpb(), args, nullptr);
  ASSERT_TRUE(buf);
  ASSERT_EQ(buf->size(), 36u);
  EXPECT_EQ(at<uint64_t>(*buf, 0), y);
  EXPECT_EQ(at<char>(*buf, 8), 7);
  EXPECT_EQ(at<float>(*buf, 16), 2.5f);
  EXPECT_EQ(at<unsigned char>(*buf, 20), 9);
  EXPECT_EQ(at<double>(*buf, 24), -1.25);
  EXPECT_EQ(at<unsigned>(*buf, 32), 1000u);
}

TEST(CudaParams, ExtraBufferIsTakenWhole) {
  std::byte packed[40];
  for (size_t i = 0; i < sizeof packed; ++i) packed[i] = static_cast<std::byte>(i);
  size_t size = sizeof packed;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  auto buf = pack_params(axpb(), nullptr, extra);
  ASSERT_TRUE(buf);
  ASSERT_EQ(buf->size(), 36u);
  EXPECT_EQ(std::memcmp(buf->data(), packed, 36), 0);
}

TEST(CudaParams, ExtraTooSmallIsInvalid) {
  std::byte packed[32] = {};
  size_t size = sizeof packed;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  EXPECT_EQ(pack_params(axpb(), nullptr, extra).error(), CUDA_ERROR_INVALID_VALUE);
}

TEST(CudaParams, ExtraWithoutSizeOrWithUnknownKeyIsInvalid) {
  std::byte packed[36] = {};
  void* no_size[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_END};
  EXPECT_EQ(pack_params(axpb(), nullptr, no_size).error(), CUDA_ERROR_INVALID_VALUE);
  size_t size = 36;
  void* unknown[] = {reinterpret_cast<void*>(uintptr_t{7}), packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
  EXPECT_EQ(pack_params(axpb(), nullptr, unknown).error(), CUDA_ERROR_INVALID_VALUE);
}

TEST(CudaParams, BothFormsOrNeitherIsInvalid) {
  uint64_t y = 0;
  char flag = 0;
  Pair p{};
  unsigned n = 0;
  void* args[] = {&y, &flag, &p, &n};
  void* extra[] = {CU_LAUNCH_PARAM_END};
  EXPECT_EQ(pack_params(axpb(), args, extra).error(), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(pack_params(axpb(), nullptr, nullptr).error(), CUDA_ERROR_INVALID_VALUE);
}

TEST(CudaParams, NullParameterPointerIsInvalid) {
  uint64_t y = 0;
  void* args[] = {&y, nullptr, nullptr, nullptr};
  EXPECT_EQ(pack_params(axpb(), args, nullptr).error(), CUDA_ERROR_INVALID_VALUE);
}

TEST(CudaParams, EntryWithoutParametersNeedsNone) {
  ptx::EntryInfo e;
  e.name = "empty";
  auto buf = pack_params(e, nullptr, nullptr);
  ASSERT_TRUE(buf);
  EXPECT_TRUE(buf->empty());
}

}  // namespace
}  // namespace vgpu::cuda
