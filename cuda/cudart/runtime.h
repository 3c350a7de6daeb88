// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu's CUDA runtime (libcudart.so.13, docs/cuda-programs.md "CUDA runtime
// programs"): the runtime API over vgpu's Driver API library (libcuda.so.1,
// public cu* calls only). One device (0), its primary context made current
// on each calling thread on first need; a per-thread last error as CUDA's.
#pragma once

#include "cuda/include/cuda_runtime_api.h"

namespace vgpu::cudart {

// The runtime error of a driver result (CUDA gives both the same numbers
// for every result the library returns; the few that differ are mapped).
cudaError_t from_cu(CUresult r);

// Records a failure as the thread's last error; returns e.
cudaError_t record(cudaError_t e);
inline cudaError_t check(CUresult r) { return record(from_cu(r)); }

// The primary context of device 0, current on this thread (cuInit and the
// context on the first call of the process). Its failure is recorded.
cudaError_t ensure_context();

// `call` (a driver call, returning its CUresult) with the primary context
// current; its result recorded as check() does.
template <typename Call>
cudaError_t in_context(Call&& call) {
  if (const cudaError_t e = ensure_context(); e != cudaSuccess) return e;
  return check(call());
}

// cudaDeviceReset: drops the primary context; modules load again on need.
cudaError_t reset_context();

// The not-supported answer: one line on stderr per call name, then
// cudaErrorNotSupported recorded and returned.
cudaError_t unsupported(const char* call, const char* why = nullptr);

// The thread's last error, reset to cudaSuccess when `clear`.
cudaError_t last_error(bool clear);

}  // namespace vgpu::cudart
