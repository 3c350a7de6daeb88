// SPDX-License-Identifier: GPL-2.0-or-later
// Parameter packing from a parsed module (ptx::parse_module, the parser the
// device runs): the offsets the guest packs at are the ones the device reads.
#include <gtest/gtest.h>

#include <cstring>

#include "cuda/libcuda/params.h"

namespace vgpu::cuda {
namespace {

// clang-14 -O2 --cuda-gpu-arch=sm_70 of
//   struct Pair { float scale; unsigned char tag; double bias; };
//   extern "C" __global__ void axpb(float* y, char flag, Pair p, unsigned n) { ... }
//   __device__ float gain = 3.0f;
constexpr const char* PTX = R"(
.version 6.0
.target sm_70
.address_size 64

.visible .global .align 4 .f32 gain = 0f40400000;
.visible .entry axpb(
	.param .u64 axpb_param_0,
	.param .u8 axpb_param_1,
	.param .align 8 .b8 axpb_param_2[16],
	.param .u32 axpb_param_3
)
{
	.reg .b32 	%r<2>;
	ld.param.u32 	%r1, [axpb_param_3];
	ret;
}
)";

TEST(CudaParamsFromPtx, ClangStructLayoutPacks) {
  auto m = ptx::parse_module(PTX);
  ASSERT_TRUE(m) << m.error().message;
  int i = (*m)->find_entry("axpb");
  ASSERT_GE(i, 0);
  const ptx::EntryInfo& e = (*m)->entries()[static_cast<size_t>(i)];
  ASSERT_EQ(e.params.size(), 4u);
  EXPECT_EQ(e.params[1].offset, 8u);
  EXPECT_EQ(e.params[2].offset, 16u);
  EXPECT_EQ(e.params[2].size, 16u);
  EXPECT_EQ(e.params[3].offset, 32u);
  EXPECT_EQ(e.param_bytes, 36u);
  uint64_t y = 0xfeed;
  char flag = 3;
  unsigned char pair[16] = {1, 2, 3, 4, 5};
  unsigned n = 77;
  void* args[] = {&y, &flag, pair, &n};
  auto buf = pack_params(e, args, nullptr);
  ASSERT_TRUE(buf);
  EXPECT_EQ(std::memcmp(buf->data() + 16, pair, 16), 0);
  unsigned got = 0;
  std::memcpy(&got, buf->data() + 32, 4);
  EXPECT_EQ(got, 77u);
}

TEST(CudaParamsFromPtx, GlobalVariableHasItsPlace) {
  auto m = ptx::parse_module(PTX);
  ASSERT_TRUE(m) << m.error().message;
  const ptx::Variable* v = (*m)->find_variable("gain");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->size, 4u);
  EXPECT_GE((*m)->data_bytes(), v->offset + 4);
  EXPECT_EQ((*m)->find_entry("missing"), -1);
}

}  // namespace
}  // namespace vgpu::cuda
