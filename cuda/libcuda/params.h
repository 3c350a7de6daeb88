// SPDX-License-Identifier: GPL-2.0-or-later
// cuLaunchKernel's arguments as the device reads them: one packed buffer
// laid out as the entry's .param list says (ptx::EntryInfo: offsets and
// sizes in natural alignment, docs/ptx.md), built from kernelParams (one
// pointer per parameter) or taken whole from the `extra` form
// (CU_LAUNCH_PARAM_BUFFER_POINTER, CU_LAUNCH_PARAM_BUFFER_SIZE, END).
#pragma once

#include <cstddef>
#include <expected>
#include <vector>

#include "cuda/include/cuda.h"
#include "ptx/module.h"

namespace vgpu::cuda {

// The most key/value pairs read from `extra` before END.
inline constexpr size_t MAX_EXTRA_PAIRS = 16;

// The parameter buffer (entry.param_bytes bytes), or CUDA_ERROR_INVALID_VALUE:
// both forms given; an entry with parameters and neither; a null parameter
// pointer; an `extra` without END (within MAX_EXTRA_PAIRS), with an unknown
// key, without both pointer and size, or with a size below param_bytes.
std::expected<std::vector<std::byte>, CUresult> pack_params(const ptx::EntryInfo& entry, void** kernel_params,
                                                            void** extra);

}  // namespace vgpu::cuda
