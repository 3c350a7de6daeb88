// SPDX-License-Identifier: GPL-2.0-or-later
// The registered fat binaries, kernels and variables (registry.h).
#include "cuda/cudart/registry.h"

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cuda/cudart/runtime.h"

namespace vgpu::cudart {

struct FatBinary {
  const void* wrapper = nullptr;  // __fatBinC_Wrapper_t, as nvcc registered it
  bool registered = true;
  bool tried = false;  // loading was tried in the current primary context
  CUresult load = CUDA_SUCCESS;
  CUmodule module = nullptr;
  std::string first_kernel;  // for the message when it does not load
};

struct Kernel {
  FatBinary* fb = nullptr;
  std::string name;  // the PTX .entry name (nvcc's mangled name)
  CUfunction fn = nullptr;
};

namespace {

struct Variable {
  FatBinary* fb = nullptr;
  std::string name;
  size_t size = 0;
  bool constant = false;
};

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<FatBinary>> fatbins;
  std::map<const void*, std::unique_ptr<Kernel>> kernels;  // by host function
  std::set<const Kernel*> handles;                         // the same, as __cudaGetKernel's handles
  std::map<const void*, Variable> variables;               // by host shadow variable
};
Registry& registry() {
  static Registry r;
  return r;
}

// Loads fb in the current context (mu held). The refusal's reason (SASS
// only, damaged, too new) is libcuda's line on stderr; this adds which
// kernel it stops, once per fat binary.
CUresult load(FatBinary& fb) {
  if (fb.tried) return fb.load;
  fb.tried = true;
  fb.load = cuModuleLoadData(&fb.module, fb.wrapper);
  if (fb.load != CUDA_SUCCESS) {
    const char* name = nullptr;
    cudaError_t e = from_cu(fb.load);
    name = cudaGetErrorName(e);
    std::fprintf(stderr,
                 "libcudart (vgpu): the fat binary of kernel '%s' does not load (%s); its kernels and variables "
                 "cannot be used\n",
                 fb.first_kernel.empty() ? "?" : fb.first_kernel.c_str(), name);
    fb.module = nullptr;
  }
  return fb.load;
}

}  // namespace

FatBinary* register_fatbin(const void* wrapper) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto fb = std::make_unique<FatBinary>();
  fb->wrapper = wrapper;
  r.fatbins.push_back(std::move(fb));
  return r.fatbins.back().get();
}

void unregister_fatbin(FatBinary* fb) {
  // At exit (nvcc registers this with atexit): the process is ending, the
  // module goes with it. Its kernels stay known but refuse to run.
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (auto& f : r.fatbins)
    if (f.get() == fb) f->registered = false;
}

void register_kernel(FatBinary* fb, const void* host_fun, const char* device_name) {
  if (fb == nullptr || host_fun == nullptr || device_name == nullptr) {
    std::fprintf(stderr, "libcudart (vgpu): __cudaRegisterFunction without a fat binary, function or name\n");
    return;
  }
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (fb->first_kernel.empty()) fb->first_kernel = device_name;
  auto k = std::make_unique<Kernel>();
  k->fb = fb;
  k->name = device_name;
  r.handles.insert(k.get());
  if (auto old = r.kernels.find(host_fun); old != r.kernels.end()) r.handles.erase(old->second.get());
  r.kernels[host_fun] = std::move(k);
}

void register_var(FatBinary* fb, const void* host_var, const char* device_name, size_t size, bool constant) {
  if (fb == nullptr || host_var == nullptr || device_name == nullptr) {
    std::fprintf(stderr, "libcudart (vgpu): __cudaRegisterVar without a fat binary, variable or name\n");
    return;
  }
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.variables[host_var] = Variable{fb, device_name, size, constant};
}

Kernel* kernel_of(const void* host_fun) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.kernels.find(host_fun);
  return it == r.kernels.end() ? nullptr : it->second.get();
}

bool is_kernel(const Kernel* k) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.handles.contains(k);
}

cudaError_t function_of(Kernel* k, CUfunction* fn) {
  if (k == nullptr) return record(cudaErrorInvalidDeviceFunction);
  if (const cudaError_t e = ensure_context(); e != cudaSuccess) return e;
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (!k->fb->registered) return record(cudaErrorInvalidDeviceFunction);
  if (k->fn == nullptr) {
    if (const CUresult lr = load(*k->fb); lr != CUDA_SUCCESS) return check(lr);
    if (const CUresult gr = cuModuleGetFunction(&k->fn, k->fb->module, k->name.c_str()); gr != CUDA_SUCCESS) {
      std::fprintf(stderr, "libcudart (vgpu): kernel '%s' is not in its fat binary's PTX\n", k->name.c_str());
      return record(cudaErrorInvalidDeviceFunction);
    }
  }
  *fn = k->fn;
  return cudaSuccess;
}

cudaError_t symbol_of(const void* host_var, CUdeviceptr* address, size_t* size) {
  if (const cudaError_t e = ensure_context(); e != cudaSuccess) return e;
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.variables.find(host_var);
  if (it == r.variables.end() || !it->second.fb->registered) return record(cudaErrorInvalidSymbol);
  Variable& v = it->second;
  if (const CUresult lr = load(*v.fb); lr != CUDA_SUCCESS) return check(lr);
  size_t bytes = 0;
  if (const CUresult gr = cuModuleGetGlobal_v2(address, &bytes, v.fb->module, v.name.c_str()); gr != CUDA_SUCCESS) {
    std::fprintf(stderr, "libcudart (vgpu): variable '%s' is not in its fat binary's PTX\n", v.name.c_str());
    return record(cudaErrorInvalidSymbol);
  }
  *size = bytes;
  return cudaSuccess;
}

void forget_modules() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (auto& fb : r.fatbins) {
    fb->tried = false;
    fb->module = nullptr;
  }
  for (auto& [fun, k] : r.kernels) k->fn = nullptr;
}

}  // namespace vgpu::cudart
