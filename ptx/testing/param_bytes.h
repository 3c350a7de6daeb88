// SPDX-License-Identifier: GPL-2.0-or-later
// Test support: a value read back from a packed parameter buffer (ptx/params.h,
// libcuda's pack_params) at a byte offset, to check where each parameter landed.
#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

namespace vgpu::ptx::testing {

template <typename T>
T at(const std::vector<std::byte>& b, size_t off) {
  T v;
  std::memcpy(&v, b.data() + off, sizeof v);
  return v;
}

}  // namespace vgpu::ptx::testing
