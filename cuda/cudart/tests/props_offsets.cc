// SPDX-License-Identifier: GPL-2.0-or-later
// cudaDeviceProp's size and field offsets under whichever cuda_runtime_api.h
// the include path finds first: built once with vgpu's header and once with
// NVIDIA's (props_layout_test.cc compares them). The function's name says
// which header it was built with.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

std::vector<size_t> VGPU_PROPS_FUNCTION() {
  std::vector<size_t> v{sizeof(cudaDeviceProp)};
#define X(f) v.push_back(offsetof(cudaDeviceProp, f));
#include "cuda/cudart/tests/props_fields.h"
#undef X
  return v;
}
