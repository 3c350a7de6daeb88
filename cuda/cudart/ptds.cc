// SPDX-License-Identifier: GPL-2.0-or-later
// The per-thread default stream forms (nvcc --default-stream per-thread
// makes a program call these): the same calls, since every stream,
// cudaStreamPerThread included, is the context's one channel.
#include "cuda/cudart/runtime.h"

extern "C" {

cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return cudaMemcpy(dst, src, count, kind);
}
cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t s) {
  return cudaMemcpyAsync(dst, src, count, kind, s);
}
cudaError_t cudaMemset_ptds(void* p, int value, size_t count) { return cudaMemset(p, value, count); }
cudaError_t cudaMemsetAsync_ptsz(void* p, int value, size_t count, cudaStream_t s) {
  return cudaMemsetAsync(p, value, count, s);
}
cudaError_t cudaMemcpyToSymbol_ptds(const void* sym, const void* src, size_t count, size_t offset,
                                    cudaMemcpyKind kind) {
  return cudaMemcpyToSymbol(sym, src, count, offset, kind);
}
cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* sym, size_t count, size_t offset, cudaMemcpyKind kind) {
  return cudaMemcpyFromSymbol(dst, sym, count, offset, kind);
}
cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* sym, const void* src, size_t count, size_t offset,
                                         cudaMemcpyKind kind, cudaStream_t s) {
  return cudaMemcpyToSymbolAsync(sym, src, count, offset, kind, s);
}
cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* sym, size_t count, size_t offset, cudaMemcpyKind kind,
                                           cudaStream_t s) {
  return cudaMemcpyFromSymbolAsync(dst, sym, count, offset, kind, s);
}
cudaError_t cudaLaunchKernel_ptsz(const void* f, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t s) {
  return cudaLaunchKernel(f, g, b, args, shared, s);
}
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t s) {
  return __cudaLaunchKernel(k, g, b, args, shared, s);
}
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) { return cudaStreamSynchronize(s); }
cudaError_t cudaStreamQuery_ptsz(cudaStream_t s) { return cudaStreamQuery(s); }
cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s) { return cudaEventRecord(e, s); }
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  return cudaStreamWaitEvent(s, e, flags);
}

}  // extern "C"
