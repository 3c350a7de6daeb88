// SPDX-License-Identifier: GPL-2.0-or-later
// What cuModuleLoadData was given, and the CUresult of a module the
// parser or the device refused, or of a launch the device stopped
// (docs/cuda-programs.md, "Errors").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cuda/include/cuda.h"
#include "ptx/module.h"
#include "vgpu/classes.h"

namespace vgpu::cuda {

// The compute capability the device reports (cuDeviceComputeCapability);
// a fat binary's PTX is chosen for it (fatbin::choose_ptx).
inline constexpr int CC_MAJOR = 7, CC_MINOR = 0;

struct ImageCheck {
  CUresult result = CUDA_SUCCESS;      // CUDA_SUCCESS: `text` is the PTX
  std::string_view text;               // up to the NUL: in the image, or in `owned`
  std::string message;                 // why not, for the error log
  std::unique_ptr<std::string> owned;  // the PTX taken out of a fat binary
  bool fat_binary = false;             // the image was one (its refusals also go to stderr)
};

// A NUL-terminated PTX text is CUDA_SUCCESS; null is INVALID_VALUE; a fat
// binary (first word 0xBA55ED50) or the runtime's wrapper of one
// (0x466243B1) gives the PTX fatbin::extract_ptx chooses, or its Error;
// an ELF (cubin) or other bytes that are not text INVALID_IMAGE; text
// longer than max_bytes INVALID_PTX. Reads a text only up to its NUL, or
// max_bytes + 1 bytes; a fat binary only within the size its header gives.
ImageCheck check_image(const void* image, uint64_t max_bytes);

// Whether the text has a .version directive (NVIDIA: none is INVALID_IMAGE).
bool has_version_directive(std::string_view text);

// A refused load: parse_error, unsupported, too_large -> INVALID_PTX;
// bad_version -> UNSUPPORTED_PTX_VERSION, or INVALID_IMAGE without a
// .version line.
CUresult load_result(ptx::ParseStatus s, bool has_version);
CUresult load_result(cls::PtxStatus s, bool has_version);
// A launch the device stopped (cls::PtxReport after a channel error):
// mmu_fault -> ILLEGAL_ADDRESS, misaligned -> MISALIGNED_ADDRESS, trap ->
// LAUNCH_FAILED, timeout -> LAUNCH_TIMEOUT, resource ->
// LAUNCH_OUT_OF_RESOURCES, illegal -> ILLEGAL_INSTRUCTION; others LAUNCH_FAILED.
CUresult launch_result(cls::PtxStatus s);

}  // namespace vgpu::cuda
