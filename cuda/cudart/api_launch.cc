// SPDX-License-Identifier: GPL-2.0-or-later
// What nvcc's generated host code calls (crt/host_runtime.h): registration
// at start-up, <<<grid, block, shared, stream>>> as a push of the launch
// configuration that the kernel's host stub pops, and the launch itself
// (CUDA 13's __cudaGetKernel + __cudaLaunchKernel, or cudaLaunchKernel).
#include <cstdio>
#include <vector>

#include "cuda/cudart/registry.h"
#include "cuda/cudart/runtime.h"

namespace {

using namespace vgpu::cudart;

struct Config {
  dim3 grid, block;
  size_t shared = 0;
  cudaStream_t stream = nullptr;
};
thread_local std::vector<Config> t_configs;

cudaError_t launch(Kernel* k, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  CUfunction fn = nullptr;
  if (const cudaError_t e = function_of(k, &fn); e != cudaSuccess) return e;
  if (shared > UINT32_MAX) return record(cudaErrorInvalidValue);
  return check(cuLaunchKernel(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, static_cast<unsigned>(shared),
                              stream, args, nullptr));
}

}  // namespace

extern "C" {

void** __cudaRegisterFatBinary(void* fatCubin) { return reinterpret_cast<void**>(register_fatbin(fatCubin)); }

void __cudaRegisterFatBinaryEnd(void** fatCubinHandle) {
  (void)fatCubinHandle;  // modules load on first use (as CUDA's lazy loading)
}

void __cudaUnregisterFatBinary(void** fatCubinHandle) {
  unregister_fatbin(reinterpret_cast<FatBinary*>(fatCubinHandle));
}

void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun, const char* deviceName,
                            int thread_limit, uint3* tid, uint3* bid, dim3* bDim, dim3* gDim, int* wSize) {
  (void)deviceName, (void)thread_limit, (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
  register_kernel(reinterpret_cast<FatBinary*>(fatCubinHandle), hostFun, deviceFun);
}

void __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char* deviceAddress, const char* deviceName, int ext,
                       size_t size, int constant, int global) {
  (void)deviceAddress, (void)ext, (void)global;
  register_var(reinterpret_cast<FatBinary*>(fatCubinHandle), hostVar, deviceName, size, constant != 0);
}

// For managed variables (none here: __cudaRegisterManagedVar is not
// supported); nvcc's code calls it with the handle of a module that has them.
char __cudaInitModule(void** fatCubinHandle) {
  (void)fatCubinHandle;
  return 1;
}

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, CUstream_st* stream) {
  t_configs.push_back(Config{gridDim, blockDim, sharedMem, stream});
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream) {
  if (t_configs.empty()) return record(cudaErrorMissingConfiguration);
  const Config c = t_configs.back();
  t_configs.pop_back();
  *gridDim = c.grid;
  *blockDim = c.block;
  *sharedMem = c.shared;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
  if (kernel == nullptr) return record(cudaErrorInvalidValue);
  Kernel* k = kernel_of(hostFun);
  *kernel = reinterpret_cast<cudaKernel_t>(k);
  return k ? cudaSuccess : record(cudaErrorInvalidDeviceFunction);
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                               cudaStream_t stream) {
  Kernel* k = reinterpret_cast<Kernel*>(kernel);
  if (k == nullptr || !is_kernel(k)) return record(cudaErrorInvalidDeviceFunction);
  return launch(k, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                             cudaStream_t stream) {
  return launch(kernel_of(func), gridDim, blockDim, args, sharedMem, stream);
}

}  // extern "C"
