// SPDX-License-Identifier: GPL-2.0-or-later
// Direct CUDA in this process (the baseline beside the worker): one
// context, one stream, one module.
#pragma once
#include <string>
#include "worker/cuda_api.h"

namespace vgpu::worker::check {

class Direct {
 public:
  // Empty on success, else what failed.
  std::string init(const char* ptx);
  cu::Function function(const char* name);
  cu::Result launch(cu::Function f, unsigned grid, unsigned block, void** params) {
    return api.LaunchKernel(f, grid, 1, 1, block, 1, 1, 0, stream, params, nullptr);
  }
  cu::Result sync() { return api.StreamSynchronize(stream); }
  cu::Api api{};
  cu::Stream stream = nullptr;
  cu::Module module = nullptr;
};

// Kernels both sides run: an empty one, the worker's globaltimer spin
// (spin_ptx.h), an FMA loop.
extern const std::string BENCH_PTX;

}  // namespace vgpu::worker::check
