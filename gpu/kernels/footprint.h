// SPDX-License-Identifier: GPL-2.0-or-later
// The memory a built-in kernel touches, derived from its arguments with
// overflow checks, so that the compute engine can validate and map every
// buffer before a kernel runs. nullopt means the arguments are invalid:
// a size overflows 64 bits, a conv2d shape is invalid (conv2d_out_h), or
// a dimension exceeds what the BLAS interface takes (int).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "vgpu/classes.h"

namespace vgpu::gpu::kernels {

enum class Access : uint8_t { read, write, read_write };

struct BufferUse {
  const char* name;  // the argument field, e.g. "a", "phi_mag"
  uint64_t va;       // GPU virtual address from the arguments
  uint64_t bytes;    // 0 for a degenerate (empty) launch
  Access access;

  [[nodiscard]] bool writable() const { return access != Access::read; }
};

struct KernelFootprint {
  static constexpr size_t MAX_BUFFERS = 9;  // mriq: kx ky kz phi_mag x y z qr qi
  std::array<BufferUse, MAX_BUFFERS> items{};
  size_t count = 0;

  [[nodiscard]] std::span<const BufferUse> buffers() const { return {items.data(), count}; }
  // Bytes moved through memory: read_write buffers count twice (saturating).
  [[nodiscard]] uint64_t traffic_bytes() const;
};

[[nodiscard]] std::optional<KernelFootprint> footprint(const cls::FillArgs& a);
[[nodiscard]] std::optional<KernelFootprint> footprint(const cls::SaxpyArgs& a);
[[nodiscard]] std::optional<KernelFootprint> footprint(const cls::MaddArgs& a);
[[nodiscard]] std::optional<KernelFootprint> footprint(const cls::SgemmArgs& a);
[[nodiscard]] std::optional<KernelFootprint> footprint(const cls::Conv2dArgs& a);
[[nodiscard]] std::optional<KernelFootprint> footprint(const cls::MriqArgs& a);
[[nodiscard]] std::optional<KernelFootprint> footprint(const cls::SpinArgs& a);  // no buffers

// Decodes the argument block of `kernel` (the bytes of constant buffer
// ARG_CB_SLOT) and returns its footprint; nullopt for an unknown kernel, a
// block shorter than the kernel's argument struct, or invalid arguments.
[[nodiscard]] std::optional<KernelFootprint> footprint(cls::Kernel kernel, std::span<const std::byte> args);
// Size of the argument struct of `kernel`; 0 for an unknown kernel.
[[nodiscard]] size_t args_size(cls::Kernel kernel);

// The shape checks sgemm()/conv2d() apply before running (also used by
// footprint): dimensions within int for cblas, conv2d shape valid.
[[nodiscard]] bool sgemm_args_valid(const cls::SgemmArgs& a);
[[nodiscard]] bool conv2d_args_valid(const cls::Conv2dArgs& a);

}  // namespace vgpu::gpu::kernels
