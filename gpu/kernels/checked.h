// SPDX-License-Identifier: GPL-2.0-or-later
// Overflow-checked and saturating integer arithmetic for sizes and costs
// derived from guest-controlled kernel arguments (internal to kernels/).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace vgpu::gpu::kernels::checked {

[[nodiscard]] inline std::optional<uint64_t> mul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

[[nodiscard]] inline std::optional<uint64_t> mul(std::optional<uint64_t> a, uint64_t b) {
  if (!a) return std::nullopt;
  return mul(*a, b);
}

[[nodiscard]] inline uint64_t add_sat(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::numeric_limits<uint64_t>::max();
  return r;
}

}  // namespace vgpu::gpu::kernels::checked
