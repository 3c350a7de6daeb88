// SPDX-License-Identifier: GPL-2.0-or-later
// The cuBLAS calls the worker's sgemm makes, looked up at run time
// (dlopen of libcublas.so.13, else .12) as libcuda is (cuda_api.h), so the
// worker builds with no toolkit; a host without cuBLAS runs every other
// built-in and fails sgemm with the loader's reason. Types are cublas_v2.h's.
#pragma once
#include <cstddef>
#include <string>
#include "common/error.h"
#include "worker/cuda_api.h"

namespace vgpu::worker::cublas {

using Handle = struct Ctx*;
using Status = int;  // cublasStatus_t
inline constexpr Status SUCCESS = 0;
inline constexpr int OP_N = 0;          // CUBLAS_OP_N
inline constexpr int DEFAULT_MATH = 0;  // CUBLAS_DEFAULT_MATH: fp32, no TF32

struct Api {
  Status (*Create)(Handle*);
  Status (*Destroy)(Handle);
  Status (*SetStream)(Handle, cu::Stream);
  Status (*SetMathMode)(Handle, int);
  Status (*SetWorkspace)(Handle, void*, size_t);
  Status (*GetVersion)(Handle, int*);
  Status (*Sgemm)(Handle, int, int, int, int, int, const float*, const float*, int, const float*, int, const float*,
                  float*, int);
  std::string library;  // the file that was opened
};

// The library's entry points, or an error naming the files tried and why.
vgpu::Result<Api> load();

}  // namespace vgpu::worker::cublas
