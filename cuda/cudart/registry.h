// SPDX-License-Identifier: GPL-2.0-or-later
// What nvcc's generated code registers at start-up (__cudaRegisterFatBinary,
// __cudaRegisterFunction, __cudaRegisterVar): fat binaries, the kernels and
// variables in each, found by their host-side address. A fat binary loads
// (cuModuleLoadData of its wrapper: libcuda takes the PTX out) the first
// time one of its kernels or variables is used, in the primary context.
#pragma once

#include <cstddef>

#include "cuda/include/cuda_runtime_api.h"

namespace vgpu::cudart {

struct FatBinary;
struct Kernel;

// Registration (each returns nothing to nvcc's code: bad input is noted
// on stderr and the entry left out, so its use later fails with a reason).
FatBinary* register_fatbin(const void* wrapper);
void unregister_fatbin(FatBinary* fb);
void register_kernel(FatBinary* fb, const void* host_fun, const char* device_name);
void register_var(FatBinary* fb, const void* host_var, const char* device_name, size_t size, bool constant);

// The kernel registered for host_fun, or nullptr.
Kernel* kernel_of(const void* host_fun);
// Whether k is a registered kernel (a handle from __cudaGetKernel).
bool is_kernel(const Kernel* k);

// The kernel's CUfunction in the current context, loading its fat binary
// on first use: cudaErrorInvalidDeviceFunction when not registered, the
// module's refusal (cudaErrorNoKernelImageForDevice for SASS only, ...)
// when its fat binary does not load.
cudaError_t function_of(Kernel* k, CUfunction* fn);

// A registered variable's device address and size.
cudaError_t symbol_of(const void* host_var, CUdeviceptr* address, size_t* size);

// After cudaDeviceReset: every module is gone; they load again on need.
void forget_modules();

}  // namespace vgpu::cudart
