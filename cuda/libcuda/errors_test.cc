// SPDX-License-Identifier: GPL-2.0-or-later
#include "cuda/libcuda/errors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace vgpu::cuda {
namespace {

TEST(CudaErrors, NamesMatchTheirValues) {
  const char* s = nullptr;
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_INVALID_PTX, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_ERROR_INVALID_PTX");
  ASSERT_EQ(cuGetErrorName(CUDA_SUCCESS, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_SUCCESS");
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_UNKNOWN, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_ERROR_UNKNOWN");
}

TEST(CudaErrors, ValuesAreCudas) {
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, 1);
  EXPECT_EQ(CUDA_ERROR_NO_DEVICE, 100);
  EXPECT_EQ(CUDA_ERROR_INVALID_IMAGE, 200);
  EXPECT_EQ(CUDA_ERROR_INVALID_PTX, 218);
  EXPECT_EQ(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222);
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, 400);
  EXPECT_EQ(CUDA_ERROR_NOT_FOUND, 500);
  EXPECT_EQ(CUDA_ERROR_NOT_READY, 600);
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, 700);
  EXPECT_EQ(CUDA_ERROR_MISALIGNED_ADDRESS, 716);
  EXPECT_EQ(CUDA_ERROR_LAUNCH_FAILED, 719);
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, 801);
  EXPECT_EQ(CUDA_ERROR_UNKNOWN, 999);
}

TEST(CudaErrors, EveryRowHasItsNameAndADescription) {
  for (const auto& e : error_table()) {
    EXPECT_EQ(std::strncmp(e.name, "CUDA_", 5), 0) << e.name;
    const char* s = nullptr;
    ASSERT_EQ(cuGetErrorString(e.code, &s), CUDA_SUCCESS) << e.name;
    EXPECT_GT(std::strlen(s), 5u) << e.name;
  }
}

TEST(CudaErrors, UnknownValueIsInvalidValue) {
  const char* s = "x";
  EXPECT_EQ(cuGetErrorName(static_cast<CUresult>(998), &s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(cuGetErrorString(CUDA_SUCCESS, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST(CudaErrors, DriverErrorsMap) {
  EXPECT_EQ(result_of(Error{Errc::out_of_memory, "vram"}), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(result_of(Error{Errc::invalid_argument, "x"}), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(result_of(Error{Errc::unsupported, "x"}), CUDA_ERROR_NOT_SUPPORTED);
}

}  // namespace
}  // namespace vgpu::cuda
