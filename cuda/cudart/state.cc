// SPDX-License-Identifier: GPL-2.0-or-later
// The runtime's state (runtime.h): the primary context and the last error.
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "cuda/cudart/registry.h"
#include "cuda/cudart/runtime.h"

namespace vgpu::cudart {
namespace {

thread_local cudaError_t t_last = cudaSuccess;

struct Primary {
  std::mutex mu;
  bool tried = false;
  CUresult init = CUDA_SUCCESS;
  CUcontext ctx = nullptr;
};
Primary& primary() {
  static Primary p;
  return p;
}

}  // namespace

// CUDA gives a runtime error the number of the driver result it stands for
// (cudaErrorMemoryAllocation 2 is CUDA_ERROR_OUT_OF_MEMORY,
// cudaErrorSymbolNotFound 500 CUDA_ERROR_NOT_FOUND, ...): every CUresult
// libcuda returns has its cudaError_t of the same value.
cudaError_t from_cu(CUresult r) { return static_cast<cudaError_t>(r); }

cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess) t_last = e;
  return e;
}

cudaError_t last_error(bool clear) {
  const cudaError_t e = t_last;
  if (clear) t_last = cudaSuccess;
  return e;
}

cudaError_t ensure_context() {
  Primary& p = primary();
  CUcontext ctx = nullptr;
  {
    std::lock_guard lock(p.mu);
    if (!p.tried) {
      p.tried = true;
      p.init = cuInit(0);
      CUdevice dev = 0;
      if (p.init == CUDA_SUCCESS) p.init = cuDeviceGet(&dev, 0);
      if (p.init == CUDA_SUCCESS) p.init = cuDevicePrimaryCtxRetain(&p.ctx, dev);
    }
    if (p.init != CUDA_SUCCESS) return check(p.init);
    ctx = p.ctx;
  }
  CUcontext cur = nullptr;
  if (cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == ctx) return cudaSuccess;
  return check(cuCtxSetCurrent(ctx));
}

cudaError_t reset_context() {
  if (const cudaError_t e = ensure_context(); e != cudaSuccess) return e;
  forget_modules();  // the reset context has none of them
  return check(cuDevicePrimaryCtxReset(0));
}

cudaError_t unsupported(const char* call, const char* why) {
  static std::mutex mu;
  static std::set<std::string> said;
  {
    std::lock_guard lock(mu);
    if (said.insert(call).second)
      std::fprintf(stderr, "libcudart (vgpu): %s is not supported%s%s (docs/cuda-programs.md)\n", call, why ? ": " : "",
                   why ? why : "");
  }
  return record(cudaErrorNotSupported);
}

}  // namespace vgpu::cudart
