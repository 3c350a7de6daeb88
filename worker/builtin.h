// SPDX-License-Identifier: GPL-2.0-or-later
// The built-in kernels' command (docs/cuda-worker.md, "Built-in kernels in
// the worker"): Op::kernel carries the kernel's argument block as the
// model reads it (cls::SaxpyArgs, cls::MaddArgs, cls::SgemmArgs,
// cls::Conv2dArgs, cls::MriqArgs) with device VAs in its pointer fields.
// The worker checks the block with the model's footprint() (a block the
// model would refuse is a bad command: the worker reports it and exits),
// moves its pointers into the physical window and runs the kernel: on the
// GPU as PTX of our own (builtin_kernels.cu) or cuBLAS (sgemm), on the
// fake device as the model's own kernels (gpu/kernels) over its blocks.
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include "common/error.h"
#include "gpu/kernels/footprint.h"
#include "vgpu/classes.h"
#include "worker/ipc.h"

namespace vgpu::worker {

static_assert(sizeof(cls::MriqArgs) <= KERNEL_ARGS_BYTES && sizeof(cls::Conv2dArgs) <= KERNEL_ARGS_BYTES);

// The kernels Op::kernel runs (fill and spin have ops of their own).
bool kernel_in_command(cls::Kernel k);
// "sgemm", ...
const char* kernel_name(cls::Kernel k);
// How many of the block's leading 8-byte fields are device VAs (its buffers).
uint32_t pointer_fields(cls::Kernel k);

// A kernel command for `args` (device VAs in its pointer fields).
template <class Args>
Command kernel_command(cls::Kernel k, uint32_t stream, const Args& args) {
  static_assert(sizeof(Args) <= KERNEL_ARGS_BYTES);
  Command c = make_command(Op::kernel, stream, static_cast<uint64_t>(k), 0, sizeof(Args));
  std::memcpy(c.args, &args, sizeof(Args));
  return c;
}

// The command's kernel and footprint, or why the block is refused: an
// unknown kernel, a size that is not the kernel's argument struct's, or
// arguments the model's footprint() refuses.
struct KernelCall {
  cls::Kernel kernel;
  gpu::kernels::KernelFootprint footprint;
  std::span<const std::byte> args;
};
Result<KernelCall> kernel_call(const Command& c);

// The argument struct in a checked block.
template <class Args>
Args kernel_args(std::span<const std::byte> block) {
  Args a;
  std::memcpy(&a, block.data(), sizeof a);
  return a;
}

}  // namespace vgpu::worker
