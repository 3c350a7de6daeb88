// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/cublas_api.h"

#include "worker/dl_library.h"

namespace vgpu::worker::cublas {
namespace {

// The sonames CUDA 13 and 12 install (the toolkit's lib64 or the
// nvidia-cublas wheel, found through the loader's path).
constexpr const char* LIBRARIES[] = {"libcublas.so.13", "libcublas.so.12"};

}  // namespace

vgpu::Result<Api> load() {
  return dl::load<Api>(LIBRARIES, "sgemm needs cuBLAS, which this host lacks: ", [](dl::Symbols& find, Api& a) {
    return find(a.Create, "cublasCreate_v2") && find(a.Destroy, "cublasDestroy_v2") &&
           find(a.SetStream, "cublasSetStream_v2") && find(a.SetMathMode, "cublasSetMathMode") &&
           find(a.SetWorkspace, "cublasSetWorkspace_v2") && find(a.GetVersion, "cublasGetVersion_v2") &&
           find(a.Sgemm, "cublasSgemm_v2");
  });
}

}  // namespace vgpu::worker::cublas
