// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu's cudaDeviceProp has NVIDIA's CUDA 13 layout, field for field: the
// size and every field's offset under each header (props_offsets.cc built
// twice), where NVIDIA's header is installed.
#include <cstddef>
#include <cstdio>
#include <vector>

std::vector<size_t> props_vgpu();
std::vector<size_t> props_nvidia();

int main() {
  const char* const names[] = {
      "sizeof",
#define X(f) #f,
#include "cuda/cudart/tests/props_fields.h"
#undef X
  };
  const auto ours = props_vgpu(), theirs = props_nvidia();
  int bad = 0;
  for (size_t i = 0; i < ours.size() && i < theirs.size(); ++i)
    if (ours[i] != theirs[i]) {
      std::printf("FAIL %s: vgpu %zu, NVIDIA %zu\n", names[i], ours[i], theirs[i]);
      ++bad;
    }
  if (ours.size() != theirs.size()) ++bad;
  if (bad == 0)
    std::printf("PASS cudaDeviceProp: %zu bytes, %zu fields at NVIDIA's offsets\n", ours[0], ours.size() - 1);
  return bad == 0 ? 0 : 1;
}
