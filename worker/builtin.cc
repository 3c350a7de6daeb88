// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/builtin.h"

namespace vgpu::worker {

bool kernel_in_command(cls::Kernel k) { return pointer_fields(k) != 0; }

const char* kernel_name(cls::Kernel k) {
  switch (k) {
    case cls::Kernel::saxpy: return "saxpy";
    case cls::Kernel::madd: return "madd";
    case cls::Kernel::sgemm: return "sgemm";
    case cls::Kernel::conv2d: return "conv2d";
    case cls::Kernel::mriq: return "mriq";
    default: return "not a built-in of the worker";
  }
}

uint32_t pointer_fields(cls::Kernel k) {
  switch (k) {
    case cls::Kernel::saxpy: return 2;   // x, y
    case cls::Kernel::madd: return 3;    // a, b, c
    case cls::Kernel::sgemm: return 3;   // a, b, c
    case cls::Kernel::conv2d: return 3;  // input, filter, output
    case cls::Kernel::mriq: return 9;    // kx, ky, kz, phi_mag, x, y, z, qr, qi
    default: return 0;
  }
}

Result<KernelCall> kernel_call(const Command& c) {
  const auto k = static_cast<cls::Kernel>(c.a);
  if (c.a > UINT32_MAX || !kernel_in_command(k))
    return fail(Errc::invalid_argument, "kernel " + std::to_string(c.a) + " is not a built-in the worker runs");
  const size_t want = gpu::kernels::args_size(k);
  if (c.c != want || want > KERNEL_ARGS_BYTES)
    return fail(Errc::invalid_argument, std::string(kernel_name(k)) + "'s argument block of " + std::to_string(c.c) +
                                            " bytes (" + std::to_string(want) + " expected)");
  const std::span<const std::byte> args(c.args, want);
  auto fp = gpu::kernels::footprint(k, args);
  if (!fp)
    return fail(Errc::invalid_argument,
                std::string(kernel_name(k)) + " arguments the model refuses (a size overflows or a shape is invalid)");
  return KernelCall{k, *fp, args};
}

}  // namespace vgpu::worker
