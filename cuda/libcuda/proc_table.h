// SPDX-License-Identifier: GPL-2.0-or-later
// cuGetProcAddress's table: one row per (name, CUDA version the signature
// appeared in, function), as NVIDIA's cudaTypedefs.h numbers them
// (PFN_cuMemAlloc_v3020 is cuMemAlloc_v2). A lookup of a name for a CUDA
// version gets the newest row not newer than that version.
#pragma once

#include <span>
#include <string_view>

#include "cuda/include/cuda.h"

namespace vgpu::cuda {

struct ProcRow {
  const char* name;  // the plain name a caller asks for
  int version;       // 3020 for CUDA 3.2
  void* fn;
  const char* symbol;  // the exported symbol fn is (cuMemAlloc_v2)
};

std::span<const ProcRow> proc_table();

// The row for `name` at `cuda_version`: null and *status set when none.
const ProcRow* find_proc(std::string_view name, int cuda_version, CUdriverProcAddressQueryResult* status);

}  // namespace vgpu::cuda
