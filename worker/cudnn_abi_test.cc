// SPDX-License-Identifier: GPL-2.0-or-later
// cudnn_api.h's own copy of cuDNN's types and values against cudnn.h, and
// the loader against the installed library: built only where the header
// is (worker/tests/meson.build), so not in CI.
#include <cudnn.h>
#include <gtest/gtest.h>

#include <cstddef>
#include "worker/cudnn_api.h"

namespace vgpu::worker::cudnn {
namespace {

static_assert(SUCCESS == CUDNN_STATUS_SUCCESS);
static_assert(TENSOR_NCHW == CUDNN_TENSOR_NCHW);
static_assert(DATA_FLOAT == CUDNN_DATA_FLOAT);
static_assert(CROSS_CORRELATION == CUDNN_CROSS_CORRELATION);
static_assert(FMA_MATH == CUDNN_FMA_MATH);
static_assert(DETERMINISTIC == CUDNN_DETERMINISTIC);
static_assert(FWD_ALGO_COUNT == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
static_assert(sizeof(FwdAlgoPerf) == sizeof(cudnnConvolutionFwdAlgoPerf_t));
static_assert(offsetof(FwdAlgoPerf, algo) == offsetof(cudnnConvolutionFwdAlgoPerf_t, algo));
static_assert(offsetof(FwdAlgoPerf, status) == offsetof(cudnnConvolutionFwdAlgoPerf_t, status));
static_assert(offsetof(FwdAlgoPerf, time) == offsetof(cudnnConvolutionFwdAlgoPerf_t, time));
static_assert(offsetof(FwdAlgoPerf, memory) == offsetof(cudnnConvolutionFwdAlgoPerf_t, memory));
static_assert(offsetof(FwdAlgoPerf, determinism) == offsetof(cudnnConvolutionFwdAlgoPerf_t, determinism));
static_assert(offsetof(FwdAlgoPerf, math_type) == offsetof(cudnnConvolutionFwdAlgoPerf_t, mathType));
static_assert(sizeof(cudnnStatus_t) == sizeof(Code) && sizeof(cudnnConvolutionFwdAlgo_t) == sizeof(int));

TEST(CudnnAbi, TheInstalledLibraryLoadsWithTheHeadersVersion) {
  auto api = load();
  ASSERT_TRUE(api) << api.error().what();
  EXPECT_EQ(api->library, "libcudnn.so.9");
  EXPECT_EQ(api->GetVersion(), size_t{CUDNN_VERSION});
  EXPECT_STREQ(api->GetErrorString(SUCCESS), "CUDNN_STATUS_SUCCESS");
}

}  // namespace
}  // namespace vgpu::worker::cudnn
