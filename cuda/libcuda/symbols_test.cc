// SPDX-License-Identifier: GPL-2.0-or-later
// What libcuda.so.1 exports, seen as a program's loader sees it (dlopen of
// the built library, LIBCUDA): the versioned names CUDA 12's and 13's
// headers map calls to, the plain names of older binaries, nothing but
// cu*, and cuGetProcAddress's answers. Needs no device.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cuda/include/cuda.h"

namespace {

class LibCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("LIBCUDA");
    ASSERT_NE(path, nullptr) << "LIBCUDA names the built libcuda.so.1";
    // Never unmapped: the C++ runtime libraries it brings keep allocations
    // (libstdc++'s exception pool) that LeakSanitizer would report once
    // their globals were unmapped by the last dlclose.
    lib_ = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    ASSERT_NE(lib_, nullptr) << dlerror();
  }
  void TearDown() override {
    if (lib_ != nullptr) dlclose(lib_);
  }
  void* sym(const char* name) { return dlsym(lib_, name); }
  void* lib_ = nullptr;
};

// Every versioned name CUDA 13's cuda.h (or 12's) #defines a call we have to.
constexpr const char* VERSIONED[] = {
    "cuDeviceTotalMem_v2",
    "cuDeviceGetUuid_v2",
    "cuDevicePrimaryCtxRelease_v2",
    "cuDevicePrimaryCtxReset_v2",
    "cuDevicePrimaryCtxSetFlags_v2",
    "cuCtxCreate_v2",
    "cuCtxCreate_v4",
    "cuCtxDestroy_v2",
    "cuCtxPopCurrent_v2",
    "cuCtxPushCurrent_v2",
    "cuModuleGetGlobal_v2",
    "cuMemGetInfo_v2",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemGetAddressRange_v2",
    "cuMemAllocHost_v2",
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuMemcpyDtoD_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuMemsetD8_v2",
    "cuMemsetD16_v2",
    "cuMemsetD32_v2",
    "cuStreamDestroy_v2",
    "cuEventDestroy_v2",
    "cuEventElapsedTime_v2",
    "cuGetProcAddress_v2",
    "cuCtxSynchronize_v2",
    "cuCtxGetDevice_v2",
};
// The plain names (older signatures where they differ) and the calls that never changed.
constexpr const char* PLAIN[] = {
    "cuDeviceTotalMem",
    "cuDeviceGetUuid",
    "cuDevicePrimaryCtxRelease",
    "cuDevicePrimaryCtxReset",
    "cuDevicePrimaryCtxSetFlags",
    "cuCtxCreate",
    "cuCtxDestroy",
    "cuCtxPopCurrent",
    "cuCtxPushCurrent",
    "cuModuleGetGlobal",
    "cuMemGetInfo",
    "cuMemAlloc",
    "cuMemFree",
    "cuMemGetAddressRange",
    "cuMemAllocHost",
    "cuMemcpyHtoD",
    "cuMemcpyDtoH",
    "cuMemcpyDtoD",
    "cuMemcpyHtoDAsync",
    "cuMemcpyDtoHAsync",
    "cuMemcpyDtoDAsync",
    "cuMemsetD8",
    "cuMemsetD16",
    "cuMemsetD32",
    "cuStreamDestroy",
    "cuEventDestroy",
    "cuEventElapsedTime",
    "cuGetProcAddress",
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGet",
    "cuDeviceGetCount",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDeviceComputeCapability",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxGetState",
    "cuCtxSetCurrent",
    "cuCtxGetCurrent",
    "cuCtxGetDevice",
    "cuCtxSynchronize",
    "cuCtxGetApiVersion",
    "cuModuleLoadData",
    "cuModuleLoadDataEx",
    "cuModuleLoadFatBinary",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuFuncGetAttribute",
    "cuMemFreeHost",
    "cuMemsetD8Async",
    "cuMemsetD16Async",
    "cuMemsetD32Async",
    "cuLaunchKernel",
    "cuStreamCreate",
    "cuStreamQuery",
    "cuStreamSynchronize",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventQuery",
    "cuEventSynchronize",
    "cuGetErrorName",
    "cuGetErrorString",
};

TEST_F(LibCuda, ExportsTheVersionedNames) {
  for (const char* name : VERSIONED) EXPECT_NE(sym(name), nullptr) << name;
}

TEST_F(LibCuda, ExportsThePlainNames) {
  for (const char* name : PLAIN) EXPECT_NE(sym(name), nullptr) << name;
}

TEST_F(LibCuda, ExportsNothingButTheApi) {
  EXPECT_EQ(sym("_ZN4vgpu4cuda10find_errorE14cudaError_enum"), nullptr);
  EXPECT_EQ(sym("_ZN4vgpu6driver6Device4openERNS0_4PortERKNS0_13DeviceOptionsE"), nullptr);
}

using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

TEST_F(LibCuda, GetProcAddressPicksTheVersionAskedFor) {
  auto get = reinterpret_cast<GetProc>(sym("cuGetProcAddress_v2"));
  ASSERT_NE(get, nullptr);
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status{};
  ASSERT_EQ(get("cuMemAlloc", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_EQ(fn, sym("cuMemAlloc_v2"));
  ASSERT_EQ(get("cuMemAlloc", &fn, 2000, 0, &status), CUDA_SUCCESS);
  EXPECT_EQ(fn, sym("cuMemAlloc"));
  ASSERT_EQ(get("cuCtxCreate", &fn, 12000, 0, &status), CUDA_SUCCESS);
  EXPECT_EQ(fn, sym("cuCtxCreate_v2"));
  ASSERT_EQ(get("cuCtxCreate", &fn, 13000, 0, &status), CUDA_SUCCESS);
  EXPECT_EQ(fn, sym("cuCtxCreate_v4"));
  ASSERT_EQ(get("cuEventElapsedTime", &fn, 12080, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(fn, sym("cuEventElapsedTime_v2"));
  ASSERT_EQ(get("cuLaunchKernel", &fn, 12000, 0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(fn, sym("cuLaunchKernel"));
}

TEST_F(LibCuda, GetProcAddressRefusesWhatItDoesNotHave) {
  auto get = reinterpret_cast<GetProc>(sym("cuGetProcAddress_v2"));
  ASSERT_NE(get, nullptr);
  void* fn = sym("cuInit");
  CUdriverProcAddressQueryResult status{};
  EXPECT_EQ(get("cuGraphLaunch", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(get("cuLaunchKernel", &fn, 3020, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(get(nullptr, &fn, 13000, 0, &status), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(LibCuda, CallsBeforeInitAreNotInitialized) {
  using GetCount = CUresult (*)(int*);
  auto count = reinterpret_cast<GetCount>(sym("cuDeviceGetCount"));
  ASSERT_NE(count, nullptr);
  int n = -1;
  EXPECT_EQ(count(&n), CUDA_ERROR_NOT_INITIALIZED);
}

}  // namespace
