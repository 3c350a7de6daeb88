// SPDX-License-Identifier: GPL-2.0-or-later
#include "cuda/libcuda/module_image.h"

#include <gtest/gtest.h>

#include <cstring>

namespace vgpu::cuda {
namespace {

constexpr uint64_t MAX = 1 << 20;

TEST(CudaImage, PtxTextIsAccepted) {
  const char* ptx = ".version 6.0\n.target sm_70\n.address_size 64\n";
  auto c = check_image(ptx, MAX);
  EXPECT_EQ(c.result, CUDA_SUCCESS);
  EXPECT_EQ(c.text, ptx);
}

TEST(CudaImage, NullIsInvalidValue) { EXPECT_EQ(check_image(nullptr, MAX).result, CUDA_ERROR_INVALID_VALUE); }

// Fat binaries with PTX: fatbin_test.cc. One with none is named as such.
TEST(CudaImage, FatBinaryWithoutPtxIsNoBinaryForGpuAndNamed) {
  const unsigned char fatbin[16] = {0x50, 0xED, 0x55, 0xBA, 0x01, 0x00, 0x10, 0x00};
  auto c = check_image(fatbin, MAX);
  EXPECT_EQ(c.result, CUDA_ERROR_NO_BINARY_FOR_GPU);
  EXPECT_NE(c.message.find("fat binary has no PTX"), std::string::npos) << c.message;
}

TEST(CudaImage, ElfAndOtherBinaryAreInvalidImage) {
  const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  EXPECT_EQ(check_image(elf, MAX).result, CUDA_ERROR_INVALID_IMAGE);
  const unsigned char junk[] = {'.', 'v', 0x01, 0x02, 0};
  EXPECT_EQ(check_image(junk, MAX).result, CUDA_ERROR_INVALID_IMAGE);
}

TEST(CudaImage, ShortTextIsNotReadPastItsEnd) {
  EXPECT_EQ(check_image("P", MAX).result, CUDA_SUCCESS);  // 'P' is the fat binary magic's first byte
  EXPECT_EQ(check_image("", MAX).result, CUDA_SUCCESS);
}

TEST(CudaImage, TextLongerThanTheLimitIsInvalidPtx) {
  std::string big(100, 'x');
  EXPECT_EQ(check_image(big.c_str(), 99).result, CUDA_ERROR_INVALID_PTX);
  EXPECT_EQ(check_image(big.c_str(), 100).result, CUDA_SUCCESS);
}

TEST(CudaImage, VersionDirectiveOutsideComments) {
  EXPECT_TRUE(has_version_directive("//\n.version 7.0\n"));
  EXPECT_FALSE(has_version_directive("// .version 7.0\n.target sm_70\n"));
  EXPECT_FALSE(has_version_directive(".target sm_70\n"));
}

TEST(CudaImage, LoadRefusalsMapAsNvidiasDriver) {
  EXPECT_EQ(load_result(ptx::ParseStatus::parse_error, true), CUDA_ERROR_INVALID_PTX);
  EXPECT_EQ(load_result(ptx::ParseStatus::unsupported, true), CUDA_ERROR_INVALID_PTX);
  EXPECT_EQ(load_result(ptx::ParseStatus::too_large, true), CUDA_ERROR_INVALID_PTX);
  EXPECT_EQ(load_result(ptx::ParseStatus::bad_version, true), CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
  EXPECT_EQ(load_result(ptx::ParseStatus::bad_version, false), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(load_result(cls::PtxStatus::parse_error, true), CUDA_ERROR_INVALID_PTX);
  EXPECT_EQ(load_result(cls::PtxStatus::bad_version, true), CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
  EXPECT_EQ(load_result(cls::PtxStatus::bad_version, false), CUDA_ERROR_INVALID_IMAGE);
}

TEST(CudaImage, LaunchFailuresMapAsCudas) {
  EXPECT_EQ(launch_result(cls::PtxStatus::mmu_fault), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(launch_result(cls::PtxStatus::misaligned), CUDA_ERROR_MISALIGNED_ADDRESS);
  EXPECT_EQ(launch_result(cls::PtxStatus::trap), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(launch_result(cls::PtxStatus::timeout), CUDA_ERROR_LAUNCH_TIMEOUT);
  EXPECT_EQ(launch_result(cls::PtxStatus::resource), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_EQ(launch_result(cls::PtxStatus::illegal), CUDA_ERROR_ILLEGAL_INSTRUCTION);
}

}  // namespace
}  // namespace vgpu::cuda
