// SPDX-License-Identifier: GPL-2.0-or-later
#include "cuda/libcuda/state.h"

#include <cstdio>

#include "cuda/libcuda/errors.h"
#include "cuda/libcuda/module_image.h"

namespace vgpu::cuda {

State& State::get() {
  // Destroyed at exit, after which calls answer CUDA_ERROR_DEINITIALIZED.
  static State state;
  return state;
}

State::~State() {
  std::lock_guard lock(mu_);
  exiting_ = true;
  contexts_.clear();
  opened_.reset();
}

CUresult State::init() {
  if (exiting_) return CUDA_ERROR_DEINITIALIZED;
  if (init_result_) return *init_result_;
  auto opened = open_device();
  if (!opened) {
    std::fprintf(stderr, "libcuda (vgpu): no device: %s\n", opened.error().what().c_str());
    init_result_ = opened.error().code == Errc::not_found ? CUDA_ERROR_NO_DEVICE : result_of(opened.error());
    if (*init_result_ == CUDA_ERROR_LAUNCH_FAILED) init_result_ = CUDA_ERROR_NO_DEVICE;
    return *init_result_;
  }
  opened_ = std::move(*opened);
  init_result_ = CUDA_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult State::ready() const {
  if (exiting_) return CUDA_ERROR_DEINITIALIZED;
  return init_result_ == CUDA_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CuResult<CUctx_st*> State::create_context(CUdevice dev, unsigned flags, bool primary) {
  auto drv = device().create_context();
  if (!drv) {
    std::fprintf(stderr, "libcuda (vgpu): context: %s\n", drv.error().what().c_str());
    return std::unexpected(drv.error().code == Errc::out_of_memory ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_UNKNOWN);
  }
  auto ctx = std::make_unique<CUctx_st>();
  ctx->device = dev;
  ctx->flags = flags;
  ctx->primary = primary;
  ctx->drv = std::move(*drv);
  CUctx_st* p = ctx.get();
  contexts_.emplace(p, std::move(ctx));
  if (primary) primary_ = p;
  return p;
}

void State::destroy_context(CUctx_st* ctx) {
  // No thread's stack may keep it: only this thread's can be reached here;
  // other threads' stale entries fail the live() check.
  auto& s = stack();
  std::erase(s, ctx);
  if (ctx == primary_) primary_ = nullptr;
  contexts_.erase(ctx);
}

CUresult State::reset_context(CUctx_st* ctx) {
  ctx->modules.clear();
  ctx->streams.clear();
  ctx->events.clear();
  ctx->allocs.clear();
  ctx->host_allocs.clear();
  ctx->last.reset();
  ctx->sticky = CUDA_SUCCESS;
  ctx->report.clear();
  ctx->drv.reset();
  auto drv = device().create_context();
  if (!drv) {
    std::fprintf(stderr, "libcuda (vgpu): context reset: %s\n", drv.error().what().c_str());
    ctx->sticky = CUDA_ERROR_UNKNOWN;
    return CUDA_ERROR_UNKNOWN;
  }
  ctx->drv = std::move(*drv);
  return CUDA_SUCCESS;
}

std::vector<CUctx_st*>& State::stack() {
  thread_local std::vector<CUctx_st*> s;
  return s;
}

CuResult<CUctx_st*> State::current(bool allow_sticky) {
  if (CUresult r = ready(); r != CUDA_SUCCESS) return std::unexpected(r);
  auto& s = stack();
  if (s.empty() || !live(s.back())) return std::unexpected(CUDA_ERROR_INVALID_CONTEXT);
  if (!allow_sticky && s.back()->sticky != CUDA_SUCCESS) return std::unexpected(s.back()->sticky);
  return s.back();
}

CUstream_st* State::find(CUstream s) {
  for (auto& [p, c] : contexts_)
    if (auto it = c->streams.find(s); it != c->streams.end()) return it->first;
  return nullptr;
}

CUevent_st* State::find(CUevent e) {
  for (auto& [p, c] : contexts_)
    if (auto it = c->events.find(e); it != c->events.end()) return it->first;
  return nullptr;
}

CUmod_st* State::find(CUmodule m) {
  for (auto& [p, c] : contexts_)
    if (auto it = c->modules.find(m); it != c->modules.end()) return it->first;
  return nullptr;
}

CUfunc_st* State::find(CUfunction f) {
  if (f == nullptr) return nullptr;
  for (auto& [p, c] : contexts_)
    for (auto& [mp, m] : c->modules)
      for (auto& fn : m->functions)
        if (fn.get() == f) return f;
  return nullptr;
}

CuResult<CUctx_st*> stream_context(CUstream s) {
  State& st = State::get();
  if (s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) return st.current();
  if (CUresult r = st.ready(); r != CUDA_SUCCESS) return std::unexpected(r);
  CUstream_st* found = st.find(s);
  if (found == nullptr) return std::unexpected(CUDA_ERROR_INVALID_HANDLE);
  if (found->ctx->sticky != CUDA_SUCCESS) return std::unexpected(found->ctx->sticky);
  return found->ctx;
}

CUresult work_error(CUctx_st* ctx, const Error& e) {
  if (e.code != Errc::device_error) return e.code == Errc::timeout ? CUDA_ERROR_LAUNCH_TIMEOUT : result_of(e);
  CUresult r = CUDA_ERROR_LAUNCH_FAILED;
  std::string why = e.message;
  if (auto report = ctx->drv->module_report(); report && report->status != cls::PtxStatus::ok) {
    r = launch_result(report->status);
    why = report->message;
    if (report->line != 0) why += " (PTX line " + std::to_string(report->line) + ")";
  } else if (e.message.find("fault") != std::string::npos) {
    r = CUDA_ERROR_ILLEGAL_ADDRESS;  // a copy or another engine's fault
  }
  ctx->sticky = r;
  ctx->report = why;
  const ErrorInfo* info = find_error(r);
  std::fprintf(stderr, "libcuda (vgpu): %s: %s\n", info ? info->name : "error", why.c_str());
  return r;
}

CUresult synchronize(CUctx_st* ctx) {
  if (ctx->sticky != CUDA_SUCCESS) return ctx->sticky;
  if (auto s = ctx->drv->synchronize(); !s) return work_error(ctx, s.error());
  return CUDA_SUCCESS;
}

CUresult wait(CUctx_st* ctx, driver::Fence f) {
  if (ctx->sticky != CUDA_SUCCESS) return ctx->sticky;
  if (auto s = ctx->drv->wait(f); !s) return work_error(ctx, s.error());
  return CUDA_SUCCESS;
}

CUresult query(CUctx_st* ctx, driver::Fence f) {
  if (ctx->sticky != CUDA_SUCCESS) return ctx->sticky;
  if (ctx->drv->done(f)) return CUDA_SUCCESS;
  if (auto s = ctx->drv->status(); !s) return work_error(ctx, s.error());
  return CUDA_ERROR_NOT_READY;
}

void note_unsupported(const char* call, const char* what) {
  static std::set<std::string> said;
  if (said.insert(call).second) std::fprintf(stderr, "libcuda (vgpu): %s is not supported: %s\n", call, what);
}

}  // namespace vgpu::cuda
