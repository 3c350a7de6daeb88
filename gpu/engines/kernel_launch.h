// SPDX-License-Identifier: GPL-2.0-or-later
// A built-in kernel launch as the compute engine runs it: the argument
// block, the buffers it touches (from kernels::footprint) and the work
// itself, which maps every buffer, runs the kernel and charges its cost.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

// A kernel's argument block as its struct (cls::FillArgs, ...); the caller
// has checked its size (the launch's arg_bytes).
template <typename Args>
[[nodiscard]] Args decode_args(std::span<const std::byte> bytes) {
  Args a;
  std::memcpy(&a, bytes.data(), sizeof(a));
  return a;
}

// Is this a kernel the device has?
[[nodiscard]] bool kernel_known(cls::Kernel kernel);

// The launch's modeled cost in ns (the kernel table's cost row; a spin's
// cost is its duration, charged by whoever runs it: 0 here). Whichever
// engine back end runs the work charges this.
[[nodiscard]] uint64_t kernel_cost_ns(const kernels::CostModel& m, const KernelLaunch& launch);

// Checks what the footprint cannot: each buffer inside the VA space and
// aligned for its element type, a spin within MAX_SPIN_NS. Returns the
// offending address (or 0) on failure.
[[nodiscard]] std::expected<void, uint64_t> check_launch(const KernelLaunch& launch);

// Runs the launch on the engine: maps each buffer (faults become
// mmu_fault at `mthd`), runs the kernel, charges its modeled cost (spin:
// sleeps for its duration on the clock).
[[nodiscard]] MethodDone run_kernel(ChannelContext& ctx, const KernelLaunch& launch, uint32_t mthd);

}  // namespace vgpu::gpu
