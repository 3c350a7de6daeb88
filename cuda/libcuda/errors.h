// SPDX-License-Identifier: GPL-2.0-or-later
// The CUresult codes vgpu's libcuda knows: one table of value, name and
// description (errors.cc) behind cuGetErrorName and cuGetErrorString, and
// the mapping of driver errors (vgpu::Error) onto them.
#pragma once

#include <span>

#include "common/error.h"
#include "cuda/include/cuda.h"

namespace vgpu::cuda {

struct ErrorInfo {
  CUresult code;
  const char* name;         // "CUDA_ERROR_INVALID_VALUE"
  const char* description;  // one sentence
};

std::span<const ErrorInfo> error_table();
// The row of `code`, or null for a value vgpu does not know.
const ErrorInfo* find_error(CUresult code);

// The CUresult of a driver error outside a launch: invalid_argument ->
// INVALID_VALUE, out_of_memory -> OUT_OF_MEMORY, not_found -> NOT_FOUND,
// unsupported -> NOT_SUPPORTED, timeout -> LAUNCH_TIMEOUT (a wait ran out),
// device_error -> LAUNCH_FAILED, io_error -> OPERATING_SYSTEM.
CUresult result_of(const Error& e);

}  // namespace vgpu::cuda
