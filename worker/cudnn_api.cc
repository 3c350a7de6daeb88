// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/cudnn_api.h"

#include "worker/dl_library.h"

namespace vgpu::worker::cudnn {
namespace {

// cudnnGetVersion's encoding since cuDNN 9: major * 10000 + minor * 100 + patch.
constexpr size_t MAJOR = 10000, MINOR = 100;

}  // namespace

vgpu::Result<Api> load(std::span<const std::string> names) {
  return dl::load<Api>(names, "no cuDNN on this host: ", [](dl::Symbols& find, Api& a) {
    return find(a.GetVersion, "cudnnGetVersion") && find(a.GetErrorString, "cudnnGetErrorString") &&
           find(a.Create, "cudnnCreate") && find(a.Destroy, "cudnnDestroy") && find(a.SetStream, "cudnnSetStream") &&
           find(a.CreateTensorDescriptor, "cudnnCreateTensorDescriptor") &&
           find(a.SetTensor4dDescriptor, "cudnnSetTensor4dDescriptor") &&
           find(a.DestroyTensorDescriptor, "cudnnDestroyTensorDescriptor") &&
           find(a.CreateFilterDescriptor, "cudnnCreateFilterDescriptor") &&
           find(a.SetFilter4dDescriptor, "cudnnSetFilter4dDescriptor") &&
           find(a.DestroyFilterDescriptor, "cudnnDestroyFilterDescriptor") &&
           find(a.CreateConvolutionDescriptor, "cudnnCreateConvolutionDescriptor") &&
           find(a.SetConvolution2dDescriptor, "cudnnSetConvolution2dDescriptor") &&
           find(a.SetConvolutionMathType, "cudnnSetConvolutionMathType") &&
           find(a.DestroyConvolutionDescriptor, "cudnnDestroyConvolutionDescriptor") &&
           find(a.GetConvolutionForwardAlgorithm_v7, "cudnnGetConvolutionForwardAlgorithm_v7") &&
           find(a.GetConvolutionForwardWorkspaceSize, "cudnnGetConvolutionForwardWorkspaceSize") &&
           find(a.ConvolutionForward, "cudnnConvolutionForward");
  });
}

std::string version_text(size_t v) {
  return "cuDNN " + std::to_string(v / MAJOR) + "." + std::to_string(v % MAJOR / MINOR) + "." +
         std::to_string(v % MINOR);
}

}  // namespace vgpu::worker::cudnn
