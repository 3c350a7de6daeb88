// SPDX-License-Identifier: GPL-2.0-or-later
// Memory: device allocations, copies (by cudaMemcpyKind), memsets and the
// registered __device__/__constant__ variables (to and from symbols).
// Copies between host and device complete before they return, their Async
// forms too (libcuda's copies do); stream order is the one channel's order.
#include <cstring>

#include "cuda/cudart/registry.h"
#include "cuda/cudart/runtime.h"

namespace {

using namespace vgpu::cudart;

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// cudaMemcpyDefault: a pointer is the device's when libcuda knows an
// allocation around it.
bool on_device(const void* p) {
  CUdeviceptr base = 0;
  size_t size = 0;
  return cuMemGetAddressRange_v2(&base, &size, dptr(p)) == CUDA_SUCCESS;
}

cudaError_t copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return record(cudaErrorInvalidValue);
  if (const cudaError_t e = ensure_context(); e != cudaSuccess) return e;
  if (kind == cudaMemcpyDefault) {
    const bool d = on_device(dst), s = on_device(src);
    kind = d ? (s ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
             : (s ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  }
  switch (kind) {
    case cudaMemcpyHostToHost: std::memmove(dst, src, count); return cudaSuccess;
    case cudaMemcpyHostToDevice: return check(cuMemcpyHtoDAsync_v2(dptr(dst), src, count, stream));
    case cudaMemcpyDeviceToHost: return check(cuMemcpyDtoHAsync_v2(dst, dptr(src), count, stream));
    case cudaMemcpyDeviceToDevice: return check(cuMemcpyDtoDAsync_v2(dptr(dst), dptr(src), count, stream));
    default: return record(cudaErrorInvalidMemcpyDirection);
  }
}

// The device address of [offset, offset + count) of a registered variable.
cudaError_t symbol_range(const void* symbol, size_t count, size_t offset, void** at) {
  CUdeviceptr base = 0;
  size_t size = 0;
  if (const cudaError_t e = symbol_of(symbol, &base, &size); e != cudaSuccess) return e;
  if (offset > size || count > size - offset) return record(cudaErrorInvalidValue);
  *at = reinterpret_cast<void*>(base + offset);
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (devPtr == nullptr) return record(cudaErrorInvalidValue);
  *devPtr = nullptr;
  if (size == 0) return cudaSuccess;  // as CUDA: no allocation, a null pointer
  if (const cudaError_t e = ensure_context(); e != cudaSuccess) return e;
  CUdeviceptr p = 0;
  if (const cudaError_t e = check(cuMemAlloc_v2(&p, size)); e != cudaSuccess) return e;
  *devPtr = reinterpret_cast<void*>(p);
  return cudaSuccess;
}

cudaError_t cudaFree(void* devPtr) {
  if (const cudaError_t e = ensure_context(); e != cudaSuccess) return e;  // cudaFree(0): initialise
  return devPtr == nullptr ? cudaSuccess : check(cuMemFree_v2(dptr(devPtr)));
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  return in_context([&] { return cuMemAllocHost_v2(ptr, size); });
}

cudaError_t cudaFreeHost(void* ptr) {
  return in_context([&] { return cuMemFreeHost(ptr); });
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  return in_context([&] { return cuMemGetInfo_v2(free, total); });
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return copy(dst, src, count, kind, nullptr);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return copy(dst, src, count, kind, stream);
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return in_context([&] { return cuMemsetD8Async(dptr(devPtr), static_cast<unsigned char>(value), count, stream); });
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) { return cudaMemsetAsync(devPtr, value, count, nullptr); }

cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                    cudaMemcpyKind kind, cudaStream_t stream) {
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    return record(cudaErrorInvalidMemcpyDirection);
  void* at = nullptr;
  if (const cudaError_t e = symbol_range(symbol, count, offset, &at); e != cudaSuccess) return e;
  return copy(at, src, count, kind, stream);
}

cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind,
                                      cudaStream_t stream) {
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    return record(cudaErrorInvalidMemcpyDirection);
  void* at = nullptr;
  if (const cudaError_t e = symbol_range(symbol, count, offset, &at); e != cudaSuccess) return e;
  return copy(dst, at, count, kind, stream);
}

cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind kind) {
  return cudaMemcpyToSymbolAsync(symbol, src, count, offset, kind, nullptr);
}

cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind) {
  return cudaMemcpyFromSymbolAsync(dst, symbol, count, offset, kind, nullptr);
}

cudaError_t cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  if (devPtr == nullptr) return record(cudaErrorInvalidValue);
  return symbol_range(symbol, 0, 0, devPtr);
}

cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  if (size == nullptr) return record(cudaErrorInvalidValue);
  CUdeviceptr base = 0;
  return symbol_of(symbol, &base, size);
}

}  // extern "C"
