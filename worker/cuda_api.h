// SPDX-License-Identifier: GPL-2.0-or-later
// The CUDA Driver API calls the worker makes, looked up in libcuda.so.1 at
// run time (dlopen), so that the worker builds and its tests run with no
// NVIDIA toolkit. The types are the driver ABI's (cuda.h, CUDA 12/13).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include "common/error.h"

namespace vgpu::worker::cu {

using Result = int;  // CUresult
using Device = int;
using Ptr = unsigned long long;     // CUdeviceptr
using Handle = unsigned long long;  // CUmemGenericAllocationHandle
using Context = struct Ctx*;
using Module = struct Mod*;
using Function = struct Func*;
using Stream = struct Strm*;

struct Location {
  int type;  // CU_MEM_LOCATION_TYPE_DEVICE = 1
  int id;
};
struct AllocationProp {
  int type;                    // CU_MEM_ALLOCATION_TYPE_PINNED = 1
  int requested_handle_types;  // 0: none
  Location location;
  void* win32_meta;
  unsigned char compression, rdma_capable;
  unsigned short usage;
  unsigned char reserved[4];
};
struct AccessDesc {
  Location location;
  int flags;  // CU_MEM_ACCESS_FLAGS_PROT_READ 1, _READWRITE 3
};

inline constexpr int LOCATION_DEVICE = 1;
inline constexpr int ALLOCATION_PINNED = 1;
inline constexpr int ACCESS_READ = 1;
inline constexpr int ACCESS_READWRITE = 3;
inline constexpr unsigned HOST_REGISTER_DEVICEMAP = 2;
inline constexpr unsigned STREAM_NON_BLOCKING = 1;
inline constexpr Result SUCCESS = 0;
inline constexpr Result NOT_READY = 600;
inline void* const LAUNCH_PARAM_END = nullptr;
inline void* const LAUNCH_PARAM_BUFFER_POINTER = reinterpret_cast<void*>(1);
inline void* const LAUNCH_PARAM_BUFFER_SIZE = reinterpret_cast<void*>(2);

struct Api {
  Result (*Init)(unsigned);
  Result (*DeviceGet)(Device*, int);
  Result (*DeviceGetName)(char*, int, Device);
  Result (*DevicePrimaryCtxRetain)(Context*, Device);
  Result (*CtxSetCurrent)(Context);
  Result (*StreamCreate)(Stream*, unsigned);
  Result (*StreamQuery)(Stream);
  Result (*StreamSynchronize)(Stream);
  Result (*MemAddressReserve)(Ptr*, size_t, size_t, Ptr, unsigned long long);
  Result (*MemCreate)(Handle*, size_t, const AllocationProp*, unsigned long long);
  Result (*MemMap)(Ptr, size_t, size_t, Handle, unsigned long long);
  Result (*MemUnmap)(Ptr, size_t);
  Result (*MemSetAccess)(Ptr, size_t, const AccessDesc*, size_t);
  Result (*MemsetD32Async)(Ptr, unsigned, size_t, Stream);
  Result (*MemcpyDtoDAsync)(Ptr, Ptr, size_t, Stream);
  Result (*MemcpyHtoDAsync)(Ptr, const void*, size_t, Stream);
  Result (*MemcpyDtoHAsync)(void*, Ptr, size_t, Stream);
  Result (*MemHostRegister)(void*, size_t, unsigned);
  Result (*MemHostGetDevicePointer)(Ptr*, void*, unsigned);
  Result (*StreamWriteValue32)(Stream, Ptr, uint32_t, unsigned);
  Result (*ModuleLoadData)(Module*, const void*);
  Result (*ModuleUnload)(Module);
  Result (*ModuleGetFunction)(Function*, Module, const char*);
  Result (*LaunchKernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Stream, void**,
                         void**);
  Result (*GetErrorName)(Result, const char**);
  Result (*MemAlloc)(Ptr*, size_t);
  Result (*MemFree)(Ptr);
  Result (*MemHostAlloc)(void**, size_t, unsigned);
};

// libcuda.so.1's entry points, or an error naming the library or symbol.
vgpu::Result<Api> load();

// "cuMemMap: CUDA_ERROR_INVALID_VALUE (1)".
std::string describe(const Api& api, const char* call, Result r);

}  // namespace vgpu::worker::cu
