// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/cublas_api.h"

#include <dlfcn.h>

namespace vgpu::worker::cublas {
namespace {

// The sonames CUDA 13 and 12 install (the toolkit's lib64 or the
// nvidia-cublas wheel, found through the loader's path).
constexpr const char* LIBRARIES[] = {"libcublas.so.13", "libcublas.so.12"};

template <typename F>
bool find(void* lib, F& fn, const char* name, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (fn == nullptr) missing = name;
  return fn != nullptr;
}

}  // namespace

vgpu::Result<Api> load() {
  std::string tried;
  void* lib = nullptr;
  Api a{};
  for (const char* name : LIBRARIES) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      a.library = name;
      break;
    }
    tried += std::string(tried.empty() ? "" : "; ") + dlerror();
  }
  if (lib == nullptr) return fail(Errc::not_found, "sgemm needs cuBLAS, which this host lacks: " + tried);
  std::string m;
  const bool ok = find(lib, a.Create, "cublasCreate_v2", m) && find(lib, a.Destroy, "cublasDestroy_v2", m) &&
                  find(lib, a.SetStream, "cublasSetStream_v2", m) && find(lib, a.SetMathMode, "cublasSetMathMode", m) &&
                  find(lib, a.SetWorkspace, "cublasSetWorkspace_v2", m) &&
                  find(lib, a.GetVersion, "cublasGetVersion_v2", m) && find(lib, a.Sgemm, "cublasSgemm_v2", m);
  if (!ok) return fail(Errc::unsupported, a.library + " has no " + m);
  return a;
}

}  // namespace vgpu::worker::cublas
