// SPDX-License-Identifier: GPL-2.0-or-later
// conv2d through cuDNN in the worker, the in-process engine's call
// (gpu/device/cuda_engine.cu): NCHW fp32, cross-correlation, FMA math (no
// TF32), the heuristic's first deterministic FMA algorithm (not
// cudnnFind: the same shape gets the same algorithm in every process, so
// results repeat bit for bit), chosen once per shape. A handle and a
// workspace per stream, made at the stream's first conv2d.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include "common/error.h"
#include "gpu/device/cuda_engine.h"
#include "worker/cuda_api.h"
#include "worker/cudnn_api.h"
#include "worker/ipc.h"

namespace vgpu::worker::cudnn {

// The index in `perf` (cudnnGetConvolutionForwardAlgorithm_v7's answer,
// best first) of the first algorithm that ran the heuristic's check with
// SUCCESS, FMA math and a deterministic result; -1 for none.
int pick_algorithm(std::span<const FwdAlgoPerf> perf);

class Convolver {
 public:
  Convolver(const Api& dnn, const cu::Api& cuda) : dnn_(dnn), cu_(cuda) {}
  Convolver(const Convolver&) = delete;
  Convolver& operator=(const Convolver&) = delete;
  ~Convolver();

  // Queues out = conv(in, filter) on `stream` (the worker's stream `s`);
  // an error names the cuDNN or CUDA call and its status.
  Status run(uint32_t s, cu::Stream stream, const gpu::cuda::ConvShape& g, cu::Ptr in, cu::Ptr filter, cu::Ptr out);

 private:
  struct Descriptors;
  struct Choice {
    int algo;
    size_t workspace;
  };
  using Key = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                         uint32_t, uint32_t>;
  Result<Handle> handle(uint32_t s, cu::Stream stream);
  Result<Choice> choose(Handle h, const Descriptors& d, const gpu::cuda::ConvShape& g);
  Result<cu::Ptr> workspace(uint32_t s, cu::Stream stream, size_t bytes);
  Status failed(const char* call, Code st) const;

  const Api& dnn_;
  const cu::Api& cu_;
  Handle handles_[NUM_STREAMS] = {};
  struct Workspace {
    cu::Ptr ptr = 0;
    size_t bytes = 0;
  } work_[NUM_STREAMS];
  std::map<Key, Choice> choices_;
  std::optional<Error> broken_;  // cudnnCreate's failure
};

}  // namespace vgpu::worker::cudnn
