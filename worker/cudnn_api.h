// SPDX-License-Identifier: GPL-2.0-or-later
// The cuDNN calls the worker's conv2d makes, looked up at run time (dlopen
// of libcudnn.so.9) as cuBLAS is (cublas_api.h), so the worker builds with
// no toolkit; a host without cuDNN runs conv2d on the worker's own PTX
// kernel (builtin_kernels.cu) and says so once on stderr. The types and
// values are cudnn.h's (cuDNN 9's legacy convolution API, which the
// in-process engine calls: gpu/device/cuda_engine.cu); cudnn_abi_test.cc
// checks them against the header where one is installed.
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <vector>
#include "common/error.h"
#include "worker/cuda_api.h"

namespace vgpu::worker::cudnn {

using Handle = struct Ctx*;
using TensorDesc = struct Tensor*;
using FilterDesc = struct Filter*;
using ConvDesc = struct Conv*;
using Code = int;  // cudnnStatus_t
inline constexpr Code SUCCESS = 0;
inline constexpr int TENSOR_NCHW = 0;        // cudnnTensorFormat_t
inline constexpr int DATA_FLOAT = 0;         // cudnnDataType_t
inline constexpr int CROSS_CORRELATION = 1;  // cudnnConvolutionMode_t
inline constexpr int FMA_MATH = 3;           // cudnnMathType_t: fp32 FMA, no tensor cores
inline constexpr int DETERMINISTIC = 1;      // cudnnDeterminism_t
inline constexpr int FWD_ALGO_COUNT = 8;     // CUDNN_CONVOLUTION_FWD_ALGO_COUNT

// cudnnConvolutionFwdAlgoPerf_t.
struct FwdAlgoPerf {
  int algo;  // cudnnConvolutionFwdAlgo_t
  Code status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

struct Api {
  size_t (*GetVersion)();
  const char* (*GetErrorString)(Code);
  Code (*Create)(Handle*);
  Code (*Destroy)(Handle);
  Code (*SetStream)(Handle, cu::Stream);
  Code (*CreateTensorDescriptor)(TensorDesc*);
  Code (*SetTensor4dDescriptor)(TensorDesc, int, int, int, int, int, int);
  Code (*DestroyTensorDescriptor)(TensorDesc);
  Code (*CreateFilterDescriptor)(FilterDesc*);
  Code (*SetFilter4dDescriptor)(FilterDesc, int, int, int, int, int, int);
  Code (*DestroyFilterDescriptor)(FilterDesc);
  Code (*CreateConvolutionDescriptor)(ConvDesc*);
  Code (*SetConvolution2dDescriptor)(ConvDesc, int, int, int, int, int, int, int, int);
  Code (*SetConvolutionMathType)(ConvDesc, int);
  Code (*DestroyConvolutionDescriptor)(ConvDesc);
  Code (*GetConvolutionForwardAlgorithm_v7)(Handle, TensorDesc, FilterDesc, ConvDesc, TensorDesc, int, int*,
                                            FwdAlgoPerf*);
  Code (*GetConvolutionForwardWorkspaceSize)(Handle, TensorDesc, FilterDesc, ConvDesc, TensorDesc, int, size_t*);
  Code (*ConvolutionForward)(Handle, const void*, TensorDesc, const void*, FilterDesc, const void*, ConvDesc, int,
                             void*, size_t, const void*, TensorDesc, void*);
  std::string library;  // the file that was opened
};

// The sonames tried, in order (cuDNN 9, as the toolkit's lib64, the
// distribution's package or the nvidia-cudnn wheel installs it).
inline const std::vector<std::string> LIBRARIES = {"libcudnn.so.9"};

// The library's entry points, or an error naming the files tried and why
// (not found) or the first missing entry point (unsupported).
vgpu::Result<Api> load(std::span<const std::string> names = LIBRARIES);

// "cuDNN 9.19.0" from cudnnGetVersion's 91900.
std::string version_text(size_t version);

}  // namespace vgpu::worker::cudnn
