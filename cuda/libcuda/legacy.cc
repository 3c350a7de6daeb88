// SPDX-License-Identifier: GPL-2.0-or-later
// The plain entry points (legacy.h): each forwards to its versioned form.
// A 32-bit device pointer can name only the low 4 GiB of a context's
// address space: an allocation above it is CUDA_ERROR_NOT_SUPPORTED.
#include "cuda/libcuda/legacy.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "cuda/libcuda/state.h"

namespace {

constexpr uint64_t V1_MAX = std::numeric_limits<unsigned int>::max();

unsigned int clamp32(size_t v) { return static_cast<unsigned int>(std::min<uint64_t>(v, V1_MAX)); }

}  // namespace

extern "C" {

CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) {
  size_t b = 0;
  CUresult r = cuDeviceTotalMem_v2(bytes ? &b : nullptr, dev);
  if (r == CUDA_SUCCESS) *bytes = clamp32(b);
  return r;
}
CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }
CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }
CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}
CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) { return cuCtxCreate_v2(pctx, flags, dev); }
CUresult cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }
CUresult cuCtxPopCurrent(CUcontext* pctx) { return cuCtxPopCurrent_v2(pctx); }
CUresult cuCtxPushCurrent(CUcontext ctx) { return cuCtxPushCurrent_v2(ctx); }

CUresult cuModuleGetGlobal(CUdeviceptr_v1* dptr, unsigned int* bytes, CUmodule hmod, const char* name) {
  CUdeviceptr p = 0;
  size_t n = 0;
  CUresult r = cuModuleGetGlobal_v2(&p, &n, hmod, name);
  if (r != CUDA_SUCCESS) return r;
  if (p + n > V1_MAX) return CUDA_ERROR_NOT_SUPPORTED;
  if (dptr != nullptr) *dptr = static_cast<CUdeviceptr_v1>(p);
  if (bytes != nullptr) *bytes = static_cast<unsigned int>(n);
  return CUDA_SUCCESS;
}

CUresult cuMemGetInfo(unsigned int* free, unsigned int* total) {
  size_t f = 0, t = 0;
  CUresult r = cuMemGetInfo_v2(free ? &f : nullptr, total ? &t : nullptr);
  if (r == CUDA_SUCCESS) *free = clamp32(f), *total = clamp32(t);
  return r;
}

CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr p = 0;
  CUresult r = cuMemAlloc_v2(&p, bytesize);
  if (r != CUDA_SUCCESS) return r;
  if (p + bytesize > V1_MAX) {
    (void)cuMemFree_v2(p);
    auto lock = vgpu::cuda::api_lock();
    vgpu::cuda::note_unsupported("cuMemAlloc (32-bit)", "the allocation lies above 4 GiB: use cuMemAlloc_v2");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  *dptr = static_cast<CUdeviceptr_v1>(p);
  return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr_v1 dptr) { return cuMemFree_v2(dptr); }

CUresult cuMemGetAddressRange(CUdeviceptr_v1* pbase, unsigned int* psize, CUdeviceptr_v1 dptr) {
  CUdeviceptr b = 0;
  size_t s = 0;
  CUresult r = cuMemGetAddressRange_v2(&b, &s, dptr);
  if (r != CUDA_SUCCESS) return r;
  if (pbase != nullptr) *pbase = static_cast<CUdeviceptr_v1>(b);
  if (psize != nullptr) *psize = clamp32(s);
  return CUDA_SUCCESS;
}

CUresult cuMemAllocHost(void** pp, unsigned int bytesize) { return cuMemAllocHost_v2(pp, bytesize); }
CUresult cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void* srcHost, unsigned int ByteCount) {
  return cuMemcpyHtoD_v2(dstDevice, srcHost, ByteCount);
}
CUresult cuMemcpyDtoH(void* dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount) {
  return cuMemcpyDtoH_v2(dstHost, srcDevice, ByteCount);
}
CUresult cuMemcpyDtoD(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount) {
  return cuMemcpyDtoD_v2(dstDevice, srcDevice, ByteCount);
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 dstDevice, const void* srcHost, unsigned int ByteCount, CUstream hStream) {
  return cuMemcpyHtoDAsync_v2(dstDevice, srcHost, ByteCount, hStream);
}
CUresult cuMemcpyDtoHAsync(void* dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount, CUstream hStream) {
  return cuMemcpyDtoHAsync_v2(dstHost, srcDevice, ByteCount, hStream);
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount,
                           CUstream hStream) {
  return cuMemcpyDtoDAsync_v2(dstDevice, srcDevice, ByteCount, hStream);
}
CUresult cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N) {
  return cuMemsetD8_v2(dstDevice, uc, N);
}
CUresult cuMemsetD16(CUdeviceptr_v1 dstDevice, unsigned short us, unsigned int N) {
  return cuMemsetD16_v2(dstDevice, us, N);
}
CUresult cuMemsetD32(CUdeviceptr_v1 dstDevice, unsigned int ui, unsigned int N) {
  return cuMemsetD32_v2(dstDevice, ui, N);
}
CUresult cuStreamDestroy(CUstream hStream) { return cuStreamDestroy_v2(hStream); }
CUresult cuEventDestroy(CUevent hEvent) { return cuEventDestroy_v2(hEvent); }
CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, nullptr);
}

// A statically linked CUDA runtime (nvcc's default, -cudart static; also
// inside NVIDIA's libraries: cuBLAS, cuDNN, ...) reaches the driver through
// NVIDIA's private export tables, which vgpu does not have: say so, once,
// naming the fix, and refuse (no crash).
CUresult cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  (void)pExportTableId;
  if (ppExportTable != nullptr) *ppExportTable = nullptr;
  vgpu::cuda::note_unsupported("cuGetExportTable",
                               "a CUDA runtime linked statically, into the program (nvcc's default, -cudart static) "
                               "or into a library it uses (NVIDIA's cuBLAS, cuDNN, ...), needs NVIDIA's private "
                               "driver tables; vgpu runs CUDA runtime programs built with nvcc -cudart shared, on "
                               "vgpu's libcudart.so.13 (docs/cuda-programs.md)");
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // extern "C"
