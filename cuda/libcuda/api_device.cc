// SPDX-License-Identifier: GPL-2.0-or-later
// cuInit, versions and the device queries (docs/cuda-programs.md,
// "The device"). vgpu gives a guest one device, ordinal 0, reported as
// compute capability 7.0 (the PTX targets clang-14's sm_70 and nvcc's
// sm_75 run as PTX on it).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>

#include "cuda/libcuda/module_image.h"  // CC_MAJOR, CC_MINOR
#include "cuda/libcuda/state.h"
#include "vgpu/classes.h"

using vgpu::cuda::api_lock;
using vgpu::cuda::State;

namespace vgpu::cuda {
namespace {

constexpr int DRIVER_VERSION = 13000;  // the CUDA version whose header our symbols follow

struct AttributeRow {
  CUdevice_attribute attribute;
  int value;
};
// What vgpu's compute class offers (docs/spec/vgpu.md §10, ptx::ModuleLimits).
// Attributes of CUDA 13 not listed are capabilities vgpu lacks: they read 0.
constexpr AttributeRow ATTRIBUTES[] = {
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, static_cast<int>(cls::compute::MAX_THREADS_PER_BLOCK)},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, static_cast<int>(cls::compute::MAX_GRID_DIM)},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, static_cast<int>(cls::compute::MAX_GRID_DIM)},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, static_cast<int>(cls::compute::MAX_GRID_DIM)},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, static_cast<int>(cls::compute::MAX_SHARED_BYTES)},
    {CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 64 * 1024},
    {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
    {CU_DEVICE_ATTRIBUTE_MAX_PITCH, 0x7fffffff},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
    {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1000000},  // kHz: PTIMER's 1 GHz nanoseconds
    {CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1},  // the compute engine runs one launch at a time
    {CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, 1},   // a launch has a time bound (ENGINE_TIMEOUT)
    {CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, 0},
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
    {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 1},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CC_MAJOR},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, CC_MINOR},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, static_cast<int>(cls::compute::MAX_SHARED_BYTES)},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, static_cast<int>(cls::compute::MAX_SHARED_BYTES)},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
};

CUresult check_device(CUdevice dev) {
  if (CUresult r = State::get().ready(); r != CUDA_SUCCESS) return r;
  return dev == DEVICE_ORDINAL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

// A device query's checks in order: its arguments (INVALID_VALUE when
// `invalid`), then the library's state and the ordinal.
CUresult check_query(bool invalid, CUdevice dev) {
  if (invalid) return CUDA_ERROR_INVALID_VALUE;
  return check_device(dev);
}

}  // namespace
}  // namespace vgpu::cuda

using vgpu::cuda::check_query;

extern "C" {

CUresult cuInit(unsigned int Flags) {
  auto lock = api_lock();
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return State::get().init();
}

CUresult cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = vgpu::cuda::DRIVER_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  auto lock = api_lock();
  if (CUresult r = check_query(device == nullptr, ordinal); r != CUDA_SUCCESS) return r;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  auto lock = api_lock();
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = State::get().ready(); r != CUDA_SUCCESS) return r;
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  auto lock = api_lock();
  if (CUresult r = check_query(name == nullptr || len <= 0, dev); r != CUDA_SUCCESS) return r;
  std::string s = "vgpu (" + State::get().opened().description() + ")";
  std::snprintf(name, static_cast<size_t>(len), "%s", s.c_str());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  auto lock = api_lock();
  if (CUresult r = check_query(uuid == nullptr, dev); r != CUDA_SUCCESS) return r;
  // "vgpu" then BOOT_0: stable for one device model, not unique across VMs.
  std::memset(uuid->bytes, 0, sizeof uuid->bytes);
  std::memcpy(uuid->bytes, "vgpu", 4);
  uint32_t boot0 = State::get().device().info().boot0;
  std::memcpy(uuid->bytes + 4, &boot0, sizeof boot0);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  auto lock = api_lock();
  if (CUresult r = check_query(bytes == nullptr, dev); r != CUDA_SUCCESS) return r;
  *bytes = State::get().device().vram_bytes();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  auto lock = api_lock();
  if (CUresult r = check_query(pi == nullptr || attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX, dev);
      r != CUDA_SUCCESS)
    return r;
  const auto& rows = vgpu::cuda::ATTRIBUTES;
  const auto* it = std::find_if(std::begin(rows), std::end(rows), [&](const auto& r) { return r.attribute == attrib; });
  *pi = it != std::end(rows) ? it->value : 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  auto lock = api_lock();
  if (CUresult r = check_query(major == nullptr || minor == nullptr, dev); r != CUDA_SUCCESS) return r;
  *major = vgpu::cuda::CC_MAJOR;
  *minor = vgpu::cuda::CC_MINOR;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  auto lock = api_lock();
  if (CUresult r = check_query(pciBusId == nullptr || len <= 0, dev); r != CUDA_SUCCESS) return r;
  std::string slot = State::get().opened().pci_slot();
  if (slot.empty()) {
    vgpu::cuda::note_unsupported("cuDeviceGetPCIBusId", "the in-process testbed device has no PCI address");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  std::snprintf(pciBusId, static_cast<size_t>(len), "%s", slot.c_str());
  return CUDA_SUCCESS;
}

}  // extern "C"
