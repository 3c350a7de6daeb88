// SPDX-License-Identifier: GPL-2.0-or-later
// Contexts (docs/cuda-programs.md, "Contexts"): each is a driver::Context,
// so a channel and its own GPU address space; the primary context is one
// more, reference counted. The current context is the top of the calling
// thread's stack, as in CUDA.
#include "cuda/libcuda/state.h"

using vgpu::cuda::api_lock;
using vgpu::cuda::State;

namespace {

constexpr unsigned CTX_API_VERSION = 3020;  // the context API generation CUDA has reported since 3.2

CUresult check_device(CUdevice dev) {
  if (CUresult r = State::get().ready(); r != CUDA_SUCCESS) return r;
  return dev == vgpu::cuda::DEVICE_ORDINAL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

// ctx itself if live, else the current context when ctx is null.
vgpu::cuda::CuResult<CUctx_st*> named_or_current(CUcontext ctx) {
  State& st = State::get();
  if (ctx == nullptr) return st.current(true);
  if (CUresult r = st.ready(); r != CUDA_SUCCESS) return std::unexpected(r);
  if (!st.live(ctx)) return std::unexpected(CUDA_ERROR_INVALID_CONTEXT);
  return ctx;
}

}  // namespace

extern "C" {

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  auto lock = api_lock();
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  State& st = State::get();
  if (st.primary() == nullptr) {
    auto ctx = st.create_context(dev, st.primary_flags, true);
    if (!ctx) return ctx.error();
  }
  ++st.primary_refs;
  *pctx = st.primary();
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  auto lock = api_lock();
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  State& st = State::get();
  if (st.primary_refs == 0 || st.primary() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (--st.primary_refs == 0) st.destroy_context(st.primary());
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  auto lock = api_lock();
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if ((flags & ~static_cast<unsigned>(CU_CTX_FLAGS_MASK)) != 0) return CUDA_ERROR_INVALID_VALUE;
  State& st = State::get();
  st.primary_flags = flags;
  if (st.primary() != nullptr) st.primary()->flags = flags;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  auto lock = api_lock();
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  State& st = State::get();
  *flags = st.primary_flags;
  *active = st.primary() != nullptr && st.primary_refs > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  auto lock = api_lock();
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  State& st = State::get();
  st.primary_flags = 0;
  if (st.primary() == nullptr) return CUDA_SUCCESS;
  st.primary()->flags = 0;
  return st.reset_context(st.primary());
}

CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  auto lock = api_lock();
  if (pctx == nullptr || (flags & ~static_cast<unsigned>(CU_CTX_FLAGS_MASK)) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  auto ctx = State::get().create_context(dev, flags, false);
  if (!ctx) return ctx.error();
  State::stack().push_back(*ctx);
  *pctx = *ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* params, unsigned int flags, CUdevice dev) {
  if (params != nullptr && (params->numExecAffinityParams > 0 || params->cigParams != nullptr)) {
    auto lock = api_lock();
    vgpu::cuda::note_unsupported("cuCtxCreate_v4", "execution affinity and CIG parameters");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return cuCtxCreate_v2(pctx, flags, dev);
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  auto lock = api_lock();
  State& st = State::get();
  if (CUresult r = st.ready(); r != CUDA_SUCCESS) return r;
  if (ctx == nullptr || !st.live(ctx) || ctx->primary) return CUDA_ERROR_INVALID_CONTEXT;
  st.destroy_context(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  auto lock = api_lock();
  State& st = State::get();
  if (CUresult r = st.ready(); r != CUDA_SUCCESS) return r;
  if (ctx == nullptr || !st.live(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  State::stack().push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  auto lock = api_lock();
  if (CUresult r = State::get().ready(); r != CUDA_SUCCESS) return r;
  auto& s = State::stack();
  if (s.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx != nullptr) *pctx = s.back();
  s.pop_back();
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  auto lock = api_lock();
  State& st = State::get();
  if (CUresult r = st.ready(); r != CUDA_SUCCESS) return r;
  auto& s = State::stack();
  if (ctx == nullptr) {
    if (!s.empty()) s.pop_back();
    return CUDA_SUCCESS;
  }
  if (!st.live(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (s.empty())
    s.push_back(ctx);
  else
    s.back() = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  auto lock = api_lock();
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& st = State::get();
  if (CUresult r = st.ready(); r != CUDA_SUCCESS) return r;
  auto& s = State::stack();
  *pctx = !s.empty() && st.live(s.back()) ? s.back() : nullptr;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  auto lock = api_lock();
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto c = named_or_current(ctx);
  if (!c) return c.error();
  *device = (*c)->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) { return cuCtxGetDevice_v2(device, nullptr); }

CUresult cuCtxGetFlags(unsigned int* flags) {
  auto lock = api_lock();
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto c = State::get().current(true);
  if (!c) return c.error();
  *flags = (*c)->flags;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  auto lock = api_lock();
  auto c = named_or_current(ctx);
  if (!c) return c.error();
  return vgpu::cuda::synchronize(*c);
}

CUresult cuCtxSynchronize(void) { return cuCtxSynchronize_v2(nullptr); }

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  auto lock = api_lock();
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto c = named_or_current(ctx);
  if (!c) return c.error();
  *version = CTX_API_VERSION;
  return CUDA_SUCCESS;
}

}  // extern "C"
