// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/cuda_api.h"

#include <dlfcn.h>

namespace vgpu::worker::cu {

namespace {

// The first of the names libcuda exports (a versioned one first).
template <typename F>
bool find(void* lib, F& fn, std::initializer_list<const char*> names, std::string& missing) {
  for (const char* n : names) {
    if (void* p = dlsym(lib, n)) {
      fn = reinterpret_cast<F>(p);
      return true;
    }
  }
  missing = *names.begin();
  return false;
}

}  // namespace

vgpu::Result<Api> load() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fail(Errc::not_found, std::string("cannot open libcuda.so.1 (no NVIDIA driver?): ") + dlerror());
  Api a{};
  std::string m;
  bool ok = find(lib, a.Init, {"cuInit"}, m) && find(lib, a.DeviceGet, {"cuDeviceGet"}, m) &&
            find(lib, a.DeviceGetName, {"cuDeviceGetName"}, m) &&
            find(lib, a.DevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, m) &&
            find(lib, a.CtxSetCurrent, {"cuCtxSetCurrent"}, m) && find(lib, a.StreamCreate, {"cuStreamCreate"}, m) &&
            find(lib, a.StreamQuery, {"cuStreamQuery"}, m) &&
            find(lib, a.StreamSynchronize, {"cuStreamSynchronize"}, m) &&
            find(lib, a.MemAddressReserve, {"cuMemAddressReserve"}, m) && find(lib, a.MemCreate, {"cuMemCreate"}, m) &&
            find(lib, a.MemMap, {"cuMemMap"}, m) && find(lib, a.MemUnmap, {"cuMemUnmap"}, m) &&
            find(lib, a.MemSetAccess, {"cuMemSetAccess"}, m) && find(lib, a.MemsetD32Async, {"cuMemsetD32Async"}, m) &&
            find(lib, a.MemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync"}, m) &&
            find(lib, a.MemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync"}, m) &&
            find(lib, a.MemcpyDtoHAsync, {"cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync"}, m) &&
            find(lib, a.MemHostRegister, {"cuMemHostRegister_v2", "cuMemHostRegister"}, m) &&
            find(lib, a.MemHostGetDevicePointer, {"cuMemHostGetDevicePointer_v2", "cuMemHostGetDevicePointer"}, m) &&
            find(lib, a.StreamWriteValue32, {"cuStreamWriteValue32_v2", "cuStreamWriteValue32"}, m) &&
            find(lib, a.ModuleLoadData, {"cuModuleLoadData"}, m) && find(lib, a.ModuleUnload, {"cuModuleUnload"}, m) &&
            find(lib, a.ModuleGetFunction, {"cuModuleGetFunction"}, m) &&
            find(lib, a.LaunchKernel, {"cuLaunchKernel"}, m) && find(lib, a.GetErrorName, {"cuGetErrorName"}, m) &&
            find(lib, a.MemAlloc, {"cuMemAlloc_v2", "cuMemAlloc"}, m) &&
            find(lib, a.MemFree, {"cuMemFree_v2", "cuMemFree"}, m) && find(lib, a.MemHostAlloc, {"cuMemHostAlloc"}, m);
  if (!ok) return fail(Errc::unsupported, "libcuda.so.1 has no " + m);
  return a;
}

std::string describe(const Api& api, const char* call, Result r) {
  const char* name = nullptr;
  if (api.GetErrorName(r, &name) != SUCCESS || !name) name = "unknown CUDA error";
  return std::string(call) + ": " + name + " (" + std::to_string(r) + ")";
}

}  // namespace vgpu::worker::cu
