// SPDX-License-Identifier: GPL-2.0-or-later
#include "cuda/libcuda/errors.h"

#include <algorithm>
#include <iterator>

namespace vgpu::cuda {
namespace {

#define VGPU_CU_ERROR(code, text) \
  { code, #code, text }
// Sorted by value; the descriptions are vgpu's own words.
constexpr ErrorInfo ERRORS[] = {
    VGPU_CU_ERROR(CUDA_SUCCESS, "no error"),
    VGPU_CU_ERROR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    VGPU_CU_ERROR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    VGPU_CU_ERROR(CUDA_ERROR_NOT_INITIALIZED, "the driver has not been initialised: call cuInit first"),
    VGPU_CU_ERROR(CUDA_ERROR_DEINITIALIZED, "the driver is shutting down"),
    VGPU_CU_ERROR(CUDA_ERROR_PROFILER_DISABLED, "profiling is disabled"),
    VGPU_CU_ERROR(CUDA_ERROR_STUB_LIBRARY, "this library is a stub, not a driver"),
    VGPU_CU_ERROR(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "the call needs a newer driver"),
    VGPU_CU_ERROR(CUDA_ERROR_DEVICE_UNAVAILABLE, "the device is unavailable"),
    VGPU_CU_ERROR(CUDA_ERROR_NO_DEVICE, "no vgpu device was found"),
    VGPU_CU_ERROR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    VGPU_CU_ERROR(CUDA_ERROR_DEVICE_NOT_LICENSED, "the device is not licensed"),
    VGPU_CU_ERROR(CUDA_ERROR_INVALID_IMAGE, "the module image is not valid (vgpu loads PTX text)"),
    VGPU_CU_ERROR(CUDA_ERROR_INVALID_CONTEXT, "invalid context, or no context is current"),
    VGPU_CU_ERROR(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "the context is already current"),
    VGPU_CU_ERROR(CUDA_ERROR_MAP_FAILED, "mapping failed"),
    VGPU_CU_ERROR(CUDA_ERROR_UNMAP_FAILED, "unmapping failed"),
    VGPU_CU_ERROR(CUDA_ERROR_NO_BINARY_FOR_GPU, "the image has no code this device can run"),
    VGPU_CU_ERROR(CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error"),
    VGPU_CU_ERROR(CUDA_ERROR_UNSUPPORTED_LIMIT, "the limit is not supported"),
    VGPU_CU_ERROR(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "the context is in use by another thread"),
    VGPU_CU_ERROR(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access is not supported"),
    VGPU_CU_ERROR(CUDA_ERROR_INVALID_PTX, "the device refused the PTX (parse error, unsupported feature or too large)"),
    VGPU_CU_ERROR(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "no PTX compiler"),
    VGPU_CU_ERROR(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the PTX .version is newer than the device reads"),
    VGPU_CU_ERROR(CUDA_ERROR_JIT_COMPILATION_DISABLED, "PTX compilation is disabled"),
    VGPU_CU_ERROR(CUDA_ERROR_INVALID_SOURCE, "invalid source"),
    VGPU_CU_ERROR(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    VGPU_CU_ERROR(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "a shared object symbol was not found"),
    VGPU_CU_ERROR(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "a shared object failed to initialise"),
    VGPU_CU_ERROR(CUDA_ERROR_OPERATING_SYSTEM, "an operating system call failed"),
    VGPU_CU_ERROR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    VGPU_CU_ERROR(CUDA_ERROR_ILLEGAL_STATE, "the object is not in a state for this call"),
    VGPU_CU_ERROR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    VGPU_CU_ERROR(CUDA_ERROR_NOT_READY, "the work is not complete yet"),
    VGPU_CU_ERROR(CUDA_ERROR_ILLEGAL_ADDRESS,
                  "a kernel accessed an address outside its memory; the context is unusable"),
    VGPU_CU_ERROR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "the launch asked for more resources than the device has"),
    VGPU_CU_ERROR(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch ran past the device's time bound; the context is unusable"),
    VGPU_CU_ERROR(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "incompatible texturing"),
    VGPU_CU_ERROR(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "the primary context is already active"),
    VGPU_CU_ERROR(CUDA_ERROR_CONTEXT_IS_DESTROYED, "the context was destroyed"),
    VGPU_CU_ERROR(CUDA_ERROR_ASSERT, "a device-side assertion failed"),
    VGPU_CU_ERROR(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"),
    VGPU_CU_ERROR(CUDA_ERROR_ILLEGAL_INSTRUCTION, "a kernel executed an illegal instruction"),
    VGPU_CU_ERROR(CUDA_ERROR_MISALIGNED_ADDRESS, "a kernel accessed a misaligned address; the context is unusable"),
    VGPU_CU_ERROR(CUDA_ERROR_INVALID_ADDRESS_SPACE, "an operation on an address in the wrong space"),
    VGPU_CU_ERROR(CUDA_ERROR_INVALID_PC, "invalid program counter"),
    VGPU_CU_ERROR(CUDA_ERROR_LAUNCH_FAILED, "the launch failed (a trap or a device error); the context is unusable"),
    VGPU_CU_ERROR(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "the cooperative launch is too large"),
    VGPU_CU_ERROR(CUDA_ERROR_NOT_PERMITTED, "the operation is not permitted"),
    VGPU_CU_ERROR(CUDA_ERROR_NOT_SUPPORTED, "the operation is not supported by vgpu"),
    VGPU_CU_ERROR(CUDA_ERROR_SYSTEM_NOT_READY, "the system is not ready"),
    VGPU_CU_ERROR(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "driver and kernel module versions differ"),
    VGPU_CU_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "the operation is not allowed while capturing"),
    VGPU_CU_ERROR(CUDA_ERROR_TIMEOUT, "the wait timed out"),
    VGPU_CU_ERROR(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef VGPU_CU_ERROR

constexpr bool sorted() {
  for (size_t i = 1; i < std::size(ERRORS); ++i)
    if (ERRORS[i - 1].code >= ERRORS[i].code) return false;
  return true;
}
static_assert(sorted(), "ERRORS is sorted by value, without duplicates");

}  // namespace

std::span<const ErrorInfo> error_table() { return ERRORS; }

const ErrorInfo* find_error(CUresult code) {
  auto it = std::lower_bound(std::begin(ERRORS), std::end(ERRORS), code,
                             [](const ErrorInfo& e, CUresult c) { return e.code < c; });
  return it != std::end(ERRORS) && it->code == code ? &*it : nullptr;
}

CUresult result_of(const Error& e) {
  switch (e.code) {
    case Errc::invalid_argument: return CUDA_ERROR_INVALID_VALUE;
    case Errc::out_of_memory: return CUDA_ERROR_OUT_OF_MEMORY;
    case Errc::not_found: return CUDA_ERROR_NOT_FOUND;
    case Errc::device_error: return CUDA_ERROR_LAUNCH_FAILED;
    case Errc::timeout: return CUDA_ERROR_LAUNCH_TIMEOUT;
    case Errc::unsupported: return CUDA_ERROR_NOT_SUPPORTED;
    case Errc::io_error: return CUDA_ERROR_OPERATING_SYSTEM;
  }
  return CUDA_ERROR_UNKNOWN;
}

}  // namespace vgpu::cuda

// cuGetErrorName / cuGetErrorString: INVALID_VALUE, and *pStr NULL, for a
// code vgpu does not know (as CUDA does).
extern "C" CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto* e = vgpu::cuda::find_error(error);
  *pStr = e ? e->name : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

extern "C" CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto* e = vgpu::cuda::find_error(error);
  *pStr = e ? e->description : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
