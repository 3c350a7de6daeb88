// SPDX-License-Identifier: GPL-2.0-or-later
// The device: one (ordinal 0), its properties from libcuda's attributes,
// synchronisation, reset, versions.
#include <cstring>

#include "cuda/cudart/runtime.h"

namespace {

using namespace vgpu::cudart;

static_assert(sizeof(cudaDeviceProp) == 1008, "CUDA 13's cudaDeviceProp is 1008 bytes");

constexpr int DEVICE = 0;

int attr(CUdevice_attribute a) {
  int v = 0;
  return cuDeviceGetAttribute(&v, a, DEVICE) == CUDA_SUCCESS ? v : 0;
}

// The properties libcuda's attribute table has; the rest stay 0 (no
// textures, surfaces, managed memory, peers: docs/cuda-programs.md).
void fill_limits(cudaDeviceProp& p) {
  p.sharedMemPerBlock = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
  p.regsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  p.warpSize = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  p.memPitch = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_PITCH));
  p.maxThreadsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  p.maxThreadsDim[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  p.maxThreadsDim[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  p.maxThreadsDim[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  p.maxGridSize[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  p.maxGridSize[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  p.maxGridSize[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  p.totalConstMem = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY));
  p.major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  p.minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  p.textureAlignment = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT));
  p.multiProcessorCount = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  p.integrated = attr(CU_DEVICE_ATTRIBUTE_INTEGRATED);
  p.concurrentKernels = attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS);
  p.pciBusID = attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  p.pciDeviceID = attr(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  p.pciDomainID = attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  p.asyncEngineCount = attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
  p.memoryBusWidth = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  p.l2CacheSize = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  p.maxThreadsPerMultiProcessor = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  p.sharedMemPerMultiprocessor = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR));
  p.regsPerMultiprocessor = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  p.sharedMemPerBlockOptin = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  p.maxBlocksPerMultiProcessor = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  p.reservedSharedMemPerBlock = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK));
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return record(cudaErrorInvalidValue);
  *count = 0;
  if (const cudaError_t e = check(cuInit(0)); e != cudaSuccess) return e;
  return check(cuDeviceGetCount(count));
}

cudaError_t cudaSetDevice(int device) {
  if (device != DEVICE) return record(cudaErrorInvalidDevice);  // a guest has one vGPU
  return ensure_context();
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return record(cudaErrorInvalidValue);
  *device = DEVICE;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return record(cudaErrorInvalidValue);
  if (device != DEVICE) return record(cudaErrorInvalidDevice);
  if (const cudaError_t e = check(cuInit(0)); e != cudaSuccess) return e;
  std::memset(prop, 0, sizeof *prop);
  if (const cudaError_t e = check(cuDeviceGetName(prop->name, sizeof prop->name, DEVICE)); e != cudaSuccess) return e;
  cuDeviceGetUuid_v2(&prop->uuid, DEVICE);
  cuDeviceTotalMem_v2(&prop->totalGlobalMem, DEVICE);
  fill_limits(*prop);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, int attr_id, int device) {
  if (value == nullptr) return record(cudaErrorInvalidValue);
  if (device != DEVICE) return record(cudaErrorInvalidDevice);
  if (const cudaError_t e = check(cuInit(0)); e != cudaSuccess) return e;
  // cudaDeviceAttr and CUdevice_attribute number each attribute alike.
  return check(cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(attr_id), DEVICE));
}

cudaError_t cudaDeviceSynchronize(void) {
  return in_context([&] { return cuCtxSynchronize(); });
}

cudaError_t cudaDeviceReset(void) { return reset_context(); }

cudaError_t cudaDriverGetVersion(int* driverVersion) { return check(cuDriverGetVersion(driverVersion)); }

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return record(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) { return last_error(true); }
cudaError_t cudaPeekAtLastError(void) { return last_error(false); }

}  // extern "C"
