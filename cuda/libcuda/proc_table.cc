// SPDX-License-Identifier: GPL-2.0-or-later
#include "cuda/libcuda/proc_table.h"

#include <cstring>
#include <vector>

#include "cuda/libcuda/legacy.h"

namespace vgpu::cuda {
namespace {

template <typename F>
void* fn_ptr(F* f) {
  return reinterpret_cast<void*>(f);
}

#define ROW(name, version, symbol) \
  { name, version, fn_ptr(&symbol), #symbol }
// Sorted by name, then version. Per-thread-default-stream variants are the
// same functions: every stream runs in order on the context's channel.
const ProcRow ROWS[] = {
    ROW("cuCtxCreate", 2000, cuCtxCreate),
    ROW("cuCtxCreate", 3020, cuCtxCreate_v2),
    ROW("cuCtxCreate", 12050, cuCtxCreate_v4),
    ROW("cuCtxDestroy", 2000, cuCtxDestroy),
    ROW("cuCtxDestroy", 4000, cuCtxDestroy_v2),
    ROW("cuCtxGetApiVersion", 3020, cuCtxGetApiVersion),
    ROW("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    ROW("cuCtxGetDevice", 2000, cuCtxGetDevice),
    ROW("cuCtxGetDevice", 13000, cuCtxGetDevice_v2),
    ROW("cuCtxGetFlags", 7000, cuCtxGetFlags),
    ROW("cuCtxPopCurrent", 2000, cuCtxPopCurrent),
    ROW("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
    ROW("cuCtxPushCurrent", 2000, cuCtxPushCurrent),
    ROW("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
    ROW("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    ROW("cuCtxSynchronize", 2000, cuCtxSynchronize),
    ROW("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),
    ROW("cuDeviceComputeCapability", 2000, cuDeviceComputeCapability),
    ROW("cuDeviceGet", 2000, cuDeviceGet),
    ROW("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    ROW("cuDeviceGetCount", 2000, cuDeviceGetCount),
    ROW("cuDeviceGetName", 2000, cuDeviceGetName),
    ROW("cuDeviceGetPCIBusId", 4010, cuDeviceGetPCIBusId),
    ROW("cuDeviceGetUuid", 9020, cuDeviceGetUuid),
    ROW("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2),
    ROW("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState),
    ROW("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease),
    ROW("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    ROW("cuDevicePrimaryCtxReset", 7000, cuDevicePrimaryCtxReset),
    ROW("cuDevicePrimaryCtxReset", 11000, cuDevicePrimaryCtxReset_v2),
    ROW("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    ROW("cuDevicePrimaryCtxSetFlags", 7000, cuDevicePrimaryCtxSetFlags),
    ROW("cuDevicePrimaryCtxSetFlags", 11000, cuDevicePrimaryCtxSetFlags_v2),
    ROW("cuDeviceTotalMem", 2000, cuDeviceTotalMem),
    ROW("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    ROW("cuDriverGetVersion", 2020, cuDriverGetVersion),
    ROW("cuEventCreate", 2000, cuEventCreate),
    ROW("cuEventDestroy", 2000, cuEventDestroy),
    ROW("cuEventDestroy", 4000, cuEventDestroy_v2),
    ROW("cuEventElapsedTime", 2000, cuEventElapsedTime),
    ROW("cuEventElapsedTime", 12080, cuEventElapsedTime_v2),
    ROW("cuEventQuery", 2000, cuEventQuery),
    ROW("cuEventRecord", 2000, cuEventRecord),
    ROW("cuEventSynchronize", 2000, cuEventSynchronize),
    ROW("cuFuncGetAttribute", 2020, cuFuncGetAttribute),
    ROW("cuGetErrorName", 6000, cuGetErrorName),
    ROW("cuGetErrorString", 6000, cuGetErrorString),
    ROW("cuGetExportTable", 2000, cuGetExportTable),
    ROW("cuGetProcAddress", 11030, cuGetProcAddress),
    ROW("cuGetProcAddress", 12000, cuGetProcAddress_v2),
    ROW("cuInit", 2000, cuInit),
    ROW("cuLaunchKernel", 4000, cuLaunchKernel),
    ROW("cuMemAlloc", 2000, cuMemAlloc),
    ROW("cuMemAlloc", 3020, cuMemAlloc_v2),
    ROW("cuMemAllocHost", 2000, cuMemAllocHost),
    ROW("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    ROW("cuMemFree", 2000, cuMemFree),
    ROW("cuMemFree", 3020, cuMemFree_v2),
    ROW("cuMemFreeHost", 2000, cuMemFreeHost),
    ROW("cuMemGetAddressRange", 2000, cuMemGetAddressRange),
    ROW("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2),
    ROW("cuMemGetInfo", 2000, cuMemGetInfo),
    ROW("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    ROW("cuMemcpyDtoD", 2000, cuMemcpyDtoD),
    ROW("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2),
    ROW("cuMemcpyDtoDAsync", 3000, cuMemcpyDtoDAsync),
    ROW("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2),
    ROW("cuMemcpyDtoH", 2000, cuMemcpyDtoH),
    ROW("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
    ROW("cuMemcpyDtoHAsync", 2000, cuMemcpyDtoHAsync),
    ROW("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2),
    ROW("cuMemcpyHtoD", 2000, cuMemcpyHtoD),
    ROW("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
    ROW("cuMemcpyHtoDAsync", 2000, cuMemcpyHtoDAsync),
    ROW("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2),
    ROW("cuMemsetD16", 2000, cuMemsetD16),
    ROW("cuMemsetD16", 3020, cuMemsetD16_v2),
    ROW("cuMemsetD16Async", 3020, cuMemsetD16Async),
    ROW("cuMemsetD32", 2000, cuMemsetD32),
    ROW("cuMemsetD32", 3020, cuMemsetD32_v2),
    ROW("cuMemsetD32Async", 3020, cuMemsetD32Async),
    ROW("cuMemsetD8", 2000, cuMemsetD8),
    ROW("cuMemsetD8", 3020, cuMemsetD8_v2),
    ROW("cuMemsetD8Async", 3020, cuMemsetD8Async),
    ROW("cuModuleGetFunction", 2000, cuModuleGetFunction),
    ROW("cuModuleGetGlobal", 2000, cuModuleGetGlobal),
    ROW("cuModuleGetGlobal", 3020, cuModuleGetGlobal_v2),
    ROW("cuModuleLoadData", 2000, cuModuleLoadData),
    ROW("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx),
    ROW("cuModuleLoadFatBinary", 2000, cuModuleLoadFatBinary),
    ROW("cuModuleUnload", 2000, cuModuleUnload),
    ROW("cuStreamCreate", 2000, cuStreamCreate),
    ROW("cuStreamDestroy", 2000, cuStreamDestroy),
    ROW("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    ROW("cuStreamQuery", 2000, cuStreamQuery),
    ROW("cuStreamSynchronize", 2000, cuStreamSynchronize),
};
#undef ROW

}  // namespace

std::span<const ProcRow> proc_table() { return ROWS; }

const ProcRow* find_proc(std::string_view name, int cuda_version, CUdriverProcAddressQueryResult* status) {
  const ProcRow* best = nullptr;
  bool named = false;
  for (const auto& r : ROWS) {
    if (name != r.name) continue;
    named = true;
    if (r.version <= cuda_version) best = &r;  // rows of a name rise in version
  }
  if (status != nullptr)
    *status = best ? CU_GET_PROC_ADDRESS_SUCCESS
                   : (named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  return best;
}

}  // namespace vgpu::cuda

extern "C" CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                        CUdriverProcAddressQueryResult* symbolStatus) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  constexpr cuuint64_t KNOWN = CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if ((flags & ~KNOWN) != 0) return CUDA_ERROR_INVALID_VALUE;
  const auto* row = vgpu::cuda::find_proc(symbol, cudaVersion, symbolStatus);
  *pfn = row ? row->fn : nullptr;
  return row ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
