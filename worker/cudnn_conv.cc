// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/cudnn_conv.h"

#include <algorithm>

namespace vgpu::worker::cudnn {

int pick_algorithm(std::span<const FwdAlgoPerf> perf) {
  for (size_t i = 0; i < perf.size(); ++i)
    if (perf[i].status == SUCCESS && perf[i].math_type == FMA_MATH && perf[i].determinism == DETERMINISTIC)
      return static_cast<int>(i);
  return -1;
}

// The four descriptors of one call, destroyed with it.
struct Convolver::Descriptors {
  const Api& api;
  TensorDesc x = nullptr, y = nullptr;
  FilterDesc w = nullptr;
  ConvDesc conv = nullptr;
  explicit Descriptors(const Api& a) : api(a) {}
  ~Descriptors() {
    if (x) api.DestroyTensorDescriptor(x);
    if (y) api.DestroyTensorDescriptor(y);
    if (w) api.DestroyFilterDescriptor(w);
    if (conv) api.DestroyConvolutionDescriptor(conv);
  }
  Code set(const gpu::cuda::ConvShape& g) {
    auto i = [](uint32_t v) { return static_cast<int>(v); };
    Code st = SUCCESS;
    auto step = [&](Code s) { return (st = s) == SUCCESS; };
    if (step(api.CreateTensorDescriptor(&x)) && step(api.CreateTensorDescriptor(&y)) &&
        step(api.CreateFilterDescriptor(&w)) && step(api.CreateConvolutionDescriptor(&conv)) &&
        step(api.SetTensor4dDescriptor(x, TENSOR_NCHW, DATA_FLOAT, i(g.n), i(g.c), i(g.h), i(g.w))) &&
        step(api.SetTensor4dDescriptor(y, TENSOR_NCHW, DATA_FLOAT, i(g.n), i(g.k), i(g.p), i(g.q))) &&
        step(api.SetFilter4dDescriptor(w, DATA_FLOAT, TENSOR_NCHW, i(g.k), i(g.c), i(g.r), i(g.s))) &&
        step(api.SetConvolution2dDescriptor(conv, i(g.pad_h), i(g.pad_w), i(g.stride_h), i(g.stride_w), 1, 1,
                                            CROSS_CORRELATION, DATA_FLOAT)))
      step(api.SetConvolutionMathType(conv, FMA_MATH));
    return st;
  }
};

Convolver::~Convolver() {
  for (Handle& h : handles_)
    if (h) dnn_.Destroy(h);
  for (Workspace& w : work_)
    if (w.ptr) cu_.MemFree(w.ptr);
}

Status Convolver::failed(const char* call, Code st) const {
  const char* why = dnn_.GetErrorString(st);
  return fail(Errc::device_error,
              std::string(call) + ": " + (why ? why : "unknown cuDNN status") + " (" + std::to_string(st) + ")");
}

// A handle that cuDNN cannot make (its other libraries missing, say) is
// not asked for again: the failure is kept.
Result<Handle> Convolver::handle(uint32_t s, cu::Stream stream) {
  if (handles_[s]) return handles_[s];
  if (broken_) return std::unexpected(*broken_);
  Handle h = nullptr;
  if (Code st = dnn_.Create(&h); st != SUCCESS) {
    broken_ = failed("cudnnCreate", st).error();
    return std::unexpected(*broken_);
  }
  if (Code st = dnn_.SetStream(h, stream); st != SUCCESS) {
    dnn_.Destroy(h);
    return std::unexpected(failed("cudnnSetStream", st).error());
  }
  return handles_[s] = h;
}

Result<Convolver::Choice> Convolver::choose(Handle h, const Descriptors& d, const gpu::cuda::ConvShape& g) {
  const Key key{g.n, g.c, g.h, g.w, g.k, g.r, g.s, g.pad_h, g.pad_w, g.stride_h, g.stride_w};
  if (auto it = choices_.find(key); it != choices_.end()) return it->second;
  FwdAlgoPerf perf[FWD_ALGO_COUNT] = {};
  int found = 0;
  if (Code st = dnn_.GetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, FWD_ALGO_COUNT, &found, perf);
      st != SUCCESS)
    return std::unexpected(failed("cudnnGetConvolutionForwardAlgorithm_v7", st).error());
  const int pick = pick_algorithm(std::span(perf, static_cast<size_t>(std::clamp(found, 0, FWD_ALGO_COUNT))));
  if (pick < 0)
    return fail(Errc::unsupported,
                "cuDNN offers no deterministic FMA algorithm for this shape (" + std::to_string(found) + " offered)");
  Choice c{perf[pick].algo, 0};
  if (Code st = dnn_.GetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, c.algo, &c.workspace); st != SUCCESS)
    return std::unexpected(failed("cudnnGetConvolutionForwardWorkspaceSize", st).error());
  return choices_[key] = c;
}

// The stream's workspace, grown when a shape needs more: the old one is
// freed after the stream's earlier work, which may still use it.
Result<cu::Ptr> Convolver::workspace(uint32_t s, cu::Stream stream, size_t bytes) {
  Workspace& w = work_[s];
  if (bytes <= w.bytes) return w.ptr;
  if (w.ptr) {
    if (cu::Result r = cu_.StreamSynchronize(stream); r != cu::SUCCESS)
      return fail(Errc::device_error, cu::describe(cu_, "cuStreamSynchronize", r));
    cu_.MemFree(w.ptr);
    w = {};
  }
  cu::Ptr p = 0;
  if (cu::Result r = cu_.MemAlloc(&p, bytes); r != cu::SUCCESS)
    return fail(Errc::device_error, cu::describe(cu_, "cuMemAlloc(cuDNN workspace)", r));
  w = {p, bytes};
  return p;
}

Status Convolver::run(uint32_t s, cu::Stream stream, const gpu::cuda::ConvShape& g, cu::Ptr in, cu::Ptr filter,
                      cu::Ptr out) {
  auto h = handle(s, stream);
  if (!h) return std::unexpected(h.error());
  Descriptors d(dnn_);
  if (Code st = d.set(g); st != SUCCESS) return failed("cuDNN descriptors", st);
  auto c = choose(*h, d, g);
  if (!c) return std::unexpected(c.error());
  cu::Ptr work = 0;
  if (c->workspace) {
    auto w = workspace(s, stream, c->workspace);
    if (!w) return std::unexpected(w.error());
    work = *w;
  }
  const float one = 1.f, zero = 0.f;
  auto ptr = [](cu::Ptr p) { return reinterpret_cast<void*>(p); };
  if (Code st = dnn_.ConvolutionForward(*h, &one, d.x, ptr(in), d.w, ptr(filter), d.conv, c->algo, ptr(work),
                                        c->workspace, &zero, d.y, ptr(out));
      st != SUCCESS)
    return failed("cudnnConvolutionForward", st);
  return {};
}

}  // namespace vgpu::worker::cudnn
