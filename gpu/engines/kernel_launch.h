// SPDX-License-Identifier: GPL-2.0-or-later
// A built-in kernel launch as the compute engine runs it: the argument
// block, the buffers it touches (from kernels::footprint) and the work
// itself, which maps every buffer, runs the kernel and charges its cost.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <span>

#include "gpu/engines/class_object.h"
#include "gpu/kernels/footprint.h"
#include "vgpu/classes.h"

namespace vgpu::gpu {

// ext: the longest spin kernel a launch may ask for. A longer one is
// bad_argument: engines are not preemptive, so this bounds how long one
// launch can hold the compute engine by request.
using cls::MAX_SPIN_NS;  // the contract's limit (vgpu/classes.h)

struct KernelLaunch {
  static constexpr size_t MAX_ARG_BYTES = sizeof(cls::MriqArgs);  // the largest argument block

  cls::Kernel kernel;
  std::array<std::byte, MAX_ARG_BYTES> args{};
  size_t arg_bytes = 0;
  kernels::KernelFootprint footprint;

  std::span<const std::byte> arg_span() const { return {args.data(), arg_bytes}; }
};

// Is this a kernel the device has?
[[nodiscard]] bool kernel_known(cls::Kernel kernel);

// Checks what the footprint cannot: each buffer inside the VA space and
// aligned for its element type, a spin within MAX_SPIN_NS. Returns the
// offending address (or 0) on failure.
[[nodiscard]] std::expected<void, uint64_t> check_launch(const KernelLaunch& launch);

// Runs the launch on the engine: maps each buffer (faults become
// mmu_fault at `mthd`), runs the kernel, charges its modeled cost (spin:
// sleeps for its duration on the clock).
[[nodiscard]] MethodDone run_kernel(ChannelContext& ctx, const KernelLaunch& launch, uint32_t mthd);

}  // namespace vgpu::gpu
