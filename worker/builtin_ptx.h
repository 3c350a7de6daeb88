// SPDX-License-Identifier: GPL-2.0-or-later
// The worker's built-in kernels as PTX text (builtin_kernels.ptx, generated
// by scripts/gen-worker-ptx from builtin_kernels.cu, made a string at build
// time by embed_text.py): entries vgpu_saxpy,
// vgpu_madd, vgpu_mriq and vgpu_conv2d, loaded with cuModuleLoadData.
#pragma once

namespace vgpu::worker {
extern const char* const BUILTIN_PTX;
// The block size the kernels are written for (gpu/device/builtin_kernels.cuh).
inline constexpr unsigned BUILTIN_THREADS = 256;
// mriq's threads per block: one x each, k in shared tiles.
inline constexpr unsigned MRIQ_THREADS = 256;
}  // namespace vgpu::worker
