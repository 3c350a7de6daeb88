// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/cudnn_api.h"

#include "worker/dl_library.h"

namespace vgpu::worker::cudnn {
namespace {

// cudnnGetVersion's encoding since cuDNN 9: major * 10000 + minor * 100 + patch.
constexpr size_t MAJOR = 10000, MINOR = 100;

}  // namespace

// Api's field F is the library's entry point cudnnF: each is named once.
#define VGPU_CUDNN_ENTRY(F) find(a.F, "cudnn" #F)

vgpu::Result<Api> load(std::span<const std::string> names) {
  return dl::load<Api>(names, "no cuDNN on this host: ", [](dl::Symbols& find, Api& a) {
    return VGPU_CUDNN_ENTRY(GetVersion) && VGPU_CUDNN_ENTRY(GetErrorString) && VGPU_CUDNN_ENTRY(Create) &&
           VGPU_CUDNN_ENTRY(Destroy) && VGPU_CUDNN_ENTRY(SetStream) && VGPU_CUDNN_ENTRY(CreateTensorDescriptor) &&
           VGPU_CUDNN_ENTRY(SetTensor4dDescriptor) && VGPU_CUDNN_ENTRY(DestroyTensorDescriptor) &&
           VGPU_CUDNN_ENTRY(CreateFilterDescriptor) && VGPU_CUDNN_ENTRY(SetFilter4dDescriptor) &&
           VGPU_CUDNN_ENTRY(DestroyFilterDescriptor) && VGPU_CUDNN_ENTRY(CreateConvolutionDescriptor) &&
           VGPU_CUDNN_ENTRY(SetConvolution2dDescriptor) && VGPU_CUDNN_ENTRY(SetConvolutionMathType) &&
           VGPU_CUDNN_ENTRY(DestroyConvolutionDescriptor) && VGPU_CUDNN_ENTRY(GetConvolutionForwardAlgorithm_v7) &&
           VGPU_CUDNN_ENTRY(GetConvolutionForwardWorkspaceSize) && VGPU_CUDNN_ENTRY(ConvolutionForward);
  });
}

#undef VGPU_CUDNN_ENTRY

std::string version_text(size_t v) {
  return "cuDNN " + std::to_string(v / MAJOR) + "." + std::to_string(v % MAJOR / MINOR) + "." +
         std::to_string(v % MINOR);
}

}  // namespace vgpu::worker::cudnn
