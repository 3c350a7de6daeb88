// SPDX-License-Identifier: GPL-2.0-or-later
// The typed launches of the built-in kernels: buffers are checked against
// the bytes each kernel touches, then turned into GPU addresses.
#include <algorithm>

#include "driver/msg.h"
#include "driver/runtime.h"

namespace vgpu::driver {

namespace {
constexpr uint32_t THREADS = 256;  // 1-D block size
constexpr uint32_t TILE = 16;      // 2-D block edge (sgemm)
constexpr uint64_t F32 = sizeof(float);
// A spin's thread blocks each spin this long (the device divides a spin's
// duration over its blocks, docs/spec/vgpu.md §10.5): what a host slicing
// kernels can cut a spin at.
constexpr uint64_t SPIN_BLOCK_NS = 100'000;

uint32_t ceil_div(uint64_t a, uint64_t b) { return static_cast<uint32_t>((a + b - 1) / b); }

// `blocks` 1-D blocks: x up to MAX_GRID_DIM, the rest in y.
LaunchShape linear_blocks(uint64_t blocks) {
  blocks = std::max<uint64_t>(1, blocks);
  const uint32_t gx = static_cast<uint32_t>(std::min<uint64_t>(blocks, cls::compute::MAX_GRID_DIM));
  return {{gx, std::max<uint32_t>(1, ceil_div(blocks, gx)), 1}, {THREADS, 1, 1}};
}

// 1-D work of n items, THREADS to a block.
LaunchShape linear(uint64_t n) { return linear_blocks((n + THREADS - 1) / THREADS); }
}  // namespace

#define VGPU_TRY_VA(var, buf, bytes, role) \
  auto var = va_checked(buf, bytes, role); \
  if (!var) return std::unexpected(var.error())

Result<Fence> Context::fill(const FillParams& p) {
  VGPU_TRY_VA(dst, p.dst, p.count * F32, "fill dst");
  return launch_args(cls::Kernel::fill, cls::FillArgs{*dst, p.count, p.value}, linear(p.count));
}

Result<Fence> Context::saxpy(const SaxpyParams& p) {
  VGPU_TRY_VA(x, p.x, p.n * F32, "saxpy x");
  VGPU_TRY_VA(y, p.y, p.n * F32, "saxpy y");
  return launch_args(cls::Kernel::saxpy, cls::SaxpyArgs{*x, *y, p.n, p.a}, linear(p.n));
}

Result<Fence> Context::madd(const MaddParams& p) {
  const uint64_t bytes = uint64_t{p.rows} * p.cols * F32;
  VGPU_TRY_VA(a, p.a, bytes, "madd a");
  VGPU_TRY_VA(b, p.b, bytes, "madd b");
  VGPU_TRY_VA(c, p.c, bytes, "madd c");
  return launch_args(cls::Kernel::madd, cls::MaddArgs{*a, *b, *c, p.rows, p.cols}, linear(uint64_t{p.rows} * p.cols));
}

Result<Fence> Context::sgemm(const SgemmParams& p) {
  VGPU_TRY_VA(a, p.a, uint64_t{p.m} * p.k * F32, "sgemm a");
  VGPU_TRY_VA(b, p.b, uint64_t{p.k} * p.n * F32, "sgemm b");
  VGPU_TRY_VA(c, p.c, uint64_t{p.m} * p.n * F32, "sgemm c");
  const LaunchShape shape{{std::max(1u, ceil_div(p.n, TILE)), std::max(1u, ceil_div(p.m, TILE)), 1}, {TILE, TILE, 1}};
  return launch_args(cls::Kernel::sgemm, cls::SgemmArgs{*a, *b, *c, p.m, p.n, p.k, p.alpha, p.beta, 0}, shape);
}

Result<Fence> Context::conv2d(const Conv2dParams& p) {
  if (p.stride_h == 0 || p.stride_w == 0 || uint64_t{p.h} + 2 * p.pad_h < p.r || uint64_t{p.w} + 2 * p.pad_w < p.s)
    return fail(Errc::invalid_argument, msg("conv2d: filter {}x{} does not fit input {}x{} (pad {},{} stride {},{})",
                                            p.r, p.s, p.h, p.w, p.pad_h, p.pad_w, p.stride_h, p.stride_w));
  const uint64_t out_h = (uint64_t{p.h} + 2 * p.pad_h - p.r) / p.stride_h + 1;
  const uint64_t out_w = (uint64_t{p.w} + 2 * p.pad_w - p.s) / p.stride_w + 1;
  const uint64_t outputs = uint64_t{p.n} * p.k * out_h * out_w;
  VGPU_TRY_VA(in, p.input, uint64_t{p.n} * p.c * p.h * p.w * F32, "conv2d input");
  VGPU_TRY_VA(filter, p.filter, uint64_t{p.k} * p.c * p.r * p.s * F32, "conv2d filter");
  VGPU_TRY_VA(out, p.output, outputs * F32, "conv2d output");
  const cls::Conv2dArgs args{*in, *filter, *out,    p.n,     p.c,        p.h,        p.w, p.k,
                             p.r, p.s,     p.pad_h, p.pad_w, p.stride_h, p.stride_w, 0};
  return launch_args(cls::Kernel::conv2d, args, linear(outputs));
}

Result<Fence> Context::mriq(const MriqParams& p) {
  const uint64_t kb = uint64_t{p.num_k} * F32, xb = uint64_t{p.num_x} * F32;
  VGPU_TRY_VA(kx, p.kx, kb, "mriq kx");
  VGPU_TRY_VA(ky, p.ky, kb, "mriq ky");
  VGPU_TRY_VA(kz, p.kz, kb, "mriq kz");
  VGPU_TRY_VA(phi, p.phi_mag, kb, "mriq phi_mag");
  VGPU_TRY_VA(x, p.x, xb, "mriq x");
  VGPU_TRY_VA(y, p.y, xb, "mriq y");
  VGPU_TRY_VA(z, p.z, xb, "mriq z");
  VGPU_TRY_VA(qr, p.qr, xb, "mriq qr");
  VGPU_TRY_VA(qi, p.qi, xb, "mriq qi");
  return launch_args(cls::Kernel::mriq, cls::MriqArgs{*kx, *ky, *kz, *phi, *x, *y, *z, *qr, *qi, p.num_k, p.num_x},
                     linear(p.num_x));
}

Result<Fence> Context::spin(const SpinParams& p) {
  return launch_args(cls::Kernel::spin, cls::SpinArgs{p.duration_ns},
                     linear_blocks(ceil_div(p.duration_ns, SPIN_BLOCK_NS)));
}

#undef VGPU_TRY_VA

}  // namespace vgpu::driver
