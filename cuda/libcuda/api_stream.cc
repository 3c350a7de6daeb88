// SPDX-License-Identifier: GPL-2.0-or-later
// Streams and events (docs/cuda-programs.md, "Streams and events"). Every
// stream of a context is the context's one channel: work runs in
// submission order whatever stream it names. An event follows the last
// work submitted before its record; its time is PTIMER (1 ns) read when
// the library sees that work done: at the record itself when the channel
// is idle, else at the first query or synchronize that finds it done.
#include "cuda/libcuda/state.h"

using vgpu::cuda::api_lock;
using vgpu::cuda::State;

namespace {

// Stamps ev once its work is done; CUDA_ERROR_NOT_READY before.
CUresult settle(CUevent_st* ev, bool block) {
  if (!ev->recorded || ev->stamp_ns) return ev->ctx->sticky;
  if (ev->fence) {
    CUresult r = block ? vgpu::cuda::wait(ev->ctx, *ev->fence) : vgpu::cuda::query(ev->ctx, *ev->fence);
    if (r != CUDA_SUCCESS) return r;
  }
  ev->stamp_ns = State::get().device().time_ns();
  return CUDA_SUCCESS;
}

CUevent_st* live_event(CUevent e) { return State::get().ready() == CUDA_SUCCESS ? State::get().find(e) : nullptr; }

// A new T{current context, flags}, owned by that context's `owned` map
// (its streams or events); *out names it.
template <typename T>
CUresult create_owned(T** out, unsigned flags, std::map<T*, std::unique_ptr<T>> CUctx_st::*owned) {
  auto c = State::get().current();
  if (!c) return c.error();
  auto o = std::make_unique<T>(T{*c, flags});
  *out = o.get();
  ((*c)->*owned).emplace(o.get(), std::move(o));
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  auto lock = api_lock();
  if (phStream == nullptr || (Flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  return create_owned(phStream, Flags, &CUctx_st::streams);
}

CUresult cuStreamQuery(CUstream hStream) {
  auto lock = api_lock();
  auto c = vgpu::cuda::stream_context(hStream);
  if (!c) return c.error();
  return (*c)->last ? vgpu::cuda::query(*c, *(*c)->last) : CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream) {
  auto lock = api_lock();
  auto c = vgpu::cuda::stream_context(hStream);
  if (!c) return c.error();
  return vgpu::cuda::synchronize(*c);
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
  auto lock = api_lock();
  if (CUresult r = State::get().ready(); r != CUDA_SUCCESS) return r;
  CUstream_st* s = State::get().find(hStream);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  s->ctx->streams.erase(s);  // its work goes on: it is the channel's
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  auto lock = api_lock();
  constexpr unsigned KNOWN = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (phEvent == nullptr || (Flags & ~KNOWN) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((Flags & CU_EVENT_INTERPROCESS) != 0) {
    vgpu::cuda::note_unsupported("cuEventCreate", "CU_EVENT_INTERPROCESS (no IPC between guests' processes)");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return create_owned(phEvent, Flags, &CUctx_st::events);
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  auto lock = api_lock();
  CUevent_st* ev = live_event(hEvent);
  if (ev == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto c = vgpu::cuda::stream_context(hStream);
  if (!c) return c.error();
  if (*c != ev->ctx) return CUDA_ERROR_INVALID_HANDLE;
  ev->recorded = true;
  ev->stamp_ns.reset();
  ev->fence.reset();
  if (ev->ctx->last && !ev->ctx->drv->done(*ev->ctx->last)) ev->fence = ev->ctx->last;
  if (!ev->fence) ev->stamp_ns = State::get().device().time_ns();
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent hEvent) {
  auto lock = api_lock();
  CUevent_st* ev = live_event(hEvent);
  return ev == nullptr ? CUDA_ERROR_INVALID_HANDLE : settle(ev, false);
}

CUresult cuEventSynchronize(CUevent hEvent) {
  auto lock = api_lock();
  CUevent_st* ev = live_event(hEvent);
  return ev == nullptr ? CUDA_ERROR_INVALID_HANDLE : settle(ev, true);
}

CUresult cuEventDestroy_v2(CUevent hEvent) {
  auto lock = api_lock();
  CUevent_st* ev = live_event(hEvent);
  if (ev == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  ev->ctx->events.erase(ev);
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  auto lock = api_lock();
  if (pMilliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUevent_st* a = live_event(hStart);
  CUevent_st* b = live_event(hEnd);
  if (a == nullptr || b == nullptr || !a->recorded || !b->recorded) return CUDA_ERROR_INVALID_HANDLE;
  if (((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) != 0) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = settle(a, false); r != CUDA_SUCCESS) return r;
  if (CUresult r = settle(b, false); r != CUDA_SUCCESS) return r;
  auto ns = static_cast<double>(static_cast<int64_t>(*b->stamp_ns - *a->stamp_ns));
  *pMilliseconds = static_cast<float>(ns / 1e6);
  return CUDA_SUCCESS;
}

}  // extern "C"
