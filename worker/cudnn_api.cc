// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/cudnn_api.h"

#include <dlfcn.h>

namespace vgpu::worker::cudnn {
namespace {

template <typename F>
bool find(void* lib, F& fn, const char* name, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (fn == nullptr) missing = name;
  return fn != nullptr;
}

// cudnnGetVersion's encoding since cuDNN 9: major * 10000 + minor * 100 + patch.
constexpr size_t MAJOR = 10000, MINOR = 100;

}  // namespace

vgpu::Result<Api> load(std::span<const std::string> names) {
  std::string tried;
  void* lib = nullptr;
  Api a{};
  for (const std::string& name : names) {
    lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      a.library = name;
      break;
    }
    tried += std::string(tried.empty() ? "" : "; ") + dlerror();
  }
  if (lib == nullptr) return fail(Errc::not_found, "no cuDNN on this host: " + tried);
  std::string m;
  const bool ok = find(lib, a.GetVersion, "cudnnGetVersion", m) &&
                  find(lib, a.GetErrorString, "cudnnGetErrorString", m) && find(lib, a.Create, "cudnnCreate", m) &&
                  find(lib, a.Destroy, "cudnnDestroy", m) && find(lib, a.SetStream, "cudnnSetStream", m) &&
                  find(lib, a.CreateTensorDescriptor, "cudnnCreateTensorDescriptor", m) &&
                  find(lib, a.SetTensor4dDescriptor, "cudnnSetTensor4dDescriptor", m) &&
                  find(lib, a.DestroyTensorDescriptor, "cudnnDestroyTensorDescriptor", m) &&
                  find(lib, a.CreateFilterDescriptor, "cudnnCreateFilterDescriptor", m) &&
                  find(lib, a.SetFilter4dDescriptor, "cudnnSetFilter4dDescriptor", m) &&
                  find(lib, a.DestroyFilterDescriptor, "cudnnDestroyFilterDescriptor", m) &&
                  find(lib, a.CreateConvolutionDescriptor, "cudnnCreateConvolutionDescriptor", m) &&
                  find(lib, a.SetConvolution2dDescriptor, "cudnnSetConvolution2dDescriptor", m) &&
                  find(lib, a.SetConvolutionMathType, "cudnnSetConvolutionMathType", m) &&
                  find(lib, a.DestroyConvolutionDescriptor, "cudnnDestroyConvolutionDescriptor", m) &&
                  find(lib, a.GetConvolutionForwardAlgorithm_v7, "cudnnGetConvolutionForwardAlgorithm_v7", m) &&
                  find(lib, a.GetConvolutionForwardWorkspaceSize, "cudnnGetConvolutionForwardWorkspaceSize", m) &&
                  find(lib, a.ConvolutionForward, "cudnnConvolutionForward", m);
  if (!ok) {
    dlclose(lib);
    return fail(Errc::unsupported, a.library + " has no " + m);
  }
  return a;
}

std::string version_text(size_t v) {
  return "cuDNN " + std::to_string(v / MAJOR) + "." + std::to_string(v % MAJOR / MINOR) + "." +
         std::to_string(v % MINOR);
}

}  // namespace vgpu::worker::cudnn
