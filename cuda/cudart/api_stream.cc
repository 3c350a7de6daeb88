// SPDX-License-Identifier: GPL-2.0-or-later
// Streams and events: libcuda's, one to one (cudaStream_t is a CUstream,
// cudaEvent_t a CUevent; the flags have the same values). Every stream is
// the context's one channel, in submission order, so waiting on an event
// from a stream is already done by that order.
#include "cuda/cudart/runtime.h"

using namespace vgpu::cudart;

extern "C" {

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  return in_context([&] { return cuStreamCreate(pStream, flags); });
}

cudaError_t cudaStreamCreate(cudaStream_t* pStream) { return cudaStreamCreateWithFlags(pStream, cudaStreamDefault); }

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  return in_context([&] { return cuStreamDestroy_v2(stream); });
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return in_context([&] { return cuStreamSynchronize(stream); });
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  if (const cudaError_t e = ensure_context(); e != cudaSuccess) return e;
  const CUresult r = cuStreamQuery(stream);
  return r == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : check(r);  // not ready is no error
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  (void)stream;
  if (event == nullptr || flags != 0) return record(cudaErrorInvalidValue);
  return ensure_context();  // in order on the one channel (the top)
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  return in_context([&] { return cuEventCreate(event, flags); });
}

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  return in_context([&] { return cuEventDestroy_v2(event); });
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return in_context([&] { return cuEventRecord(event, stream); });
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (const cudaError_t e = ensure_context(); e != cudaSuccess) return e;
  const CUresult r = cuEventQuery(event);
  return r == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : check(r);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return in_context([&] { return cuEventSynchronize(event); });
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  return in_context([&] { return cuEventElapsedTime_v2(ms, start, end); });
}

}  // extern "C"
