// SPDX-License-Identifier: GPL-2.0-or-later
// conv2d through cuDNN in the worker (cudnn_api.h, cudnn_conv.h) with no
// GPU: the loader's answers for a missing library and for one that is not
// cuDNN, the algorithm rule, and the Convolver's calls against a cuDNN and
// a libcuda made of recording functions (descriptors from the shape, one
// algorithm choice per shape, a handle per stream, the workspace grown
// after the stream's work, a failed cudnnCreate kept).
#include <gtest/gtest.h>

#include <string>
#include <vector>
#include "worker/cudnn_conv.h"

namespace vgpu::worker::cudnn {
namespace {

FwdAlgoPerf perf(int algo, Code status, int math, int determinism) {
  FwdAlgoPerf p{};
  p.algo = algo;
  p.status = status;
  p.math_type = math;
  p.determinism = determinism;
  return p;
}

TEST(CudnnPick, FirstDeterministicFmaAlgorithmThatSucceeded) {
  constexpr int TENSOR_OP_MATH = 1, NON_DETERMINISTIC = 0, NOT_SUPPORTED = 9;
  const FwdAlgoPerf list[] = {perf(6, NOT_SUPPORTED, FMA_MATH, DETERMINISTIC),
                              perf(7, SUCCESS, TENSOR_OP_MATH, DETERMINISTIC),
                              perf(4, SUCCESS, FMA_MATH, NON_DETERMINISTIC), perf(1, SUCCESS, FMA_MATH, DETERMINISTIC),
                              perf(0, SUCCESS, FMA_MATH, DETERMINISTIC)};
  EXPECT_EQ(pick_algorithm(list), 3);
  EXPECT_EQ(pick_algorithm(std::span(list, 3)), -1);
  EXPECT_EQ(pick_algorithm({}), -1);
}

TEST(CudnnLoad, AMissingLibraryIsNamed) {
  const std::vector<std::string> names = {"libvgpu-no-such-cudnn.so.9"};
  auto api = load(names);
  ASSERT_FALSE(api);
  EXPECT_EQ(api.error().code, Errc::not_found);
  EXPECT_NE(api.error().message.find("no cuDNN on this host"), std::string::npos) << api.error().message;
  EXPECT_NE(api.error().message.find("libvgpu-no-such-cudnn.so.9"), std::string::npos) << api.error().message;
}

TEST(CudnnLoad, ALibraryThatIsNotCudnnNamesTheMissingEntry) {
  const std::vector<std::string> names = {"libvgpu-no-such-cudnn.so.9", "libc.so.6"};
  auto api = load(names);
  ASSERT_FALSE(api);
  EXPECT_EQ(api.error().code, Errc::unsupported);
  EXPECT_EQ(api.error().message, "libc.so.6 has no cudnnGetVersion");
}

TEST(CudnnLoad, VersionText) {
  EXPECT_EQ(version_text(91900), "cuDNN 9.19.0");
  EXPECT_EQ(version_text(90102), "cuDNN 9.1.2");
}

// What the fake libraries saw.
struct Seen {
  int creates = 0, created_descs = 0, destroyed_descs = 0, heuristics = 0, syncs = 0;
  Code create_answer = SUCCESS;
  std::vector<int> tensor4d, filter4d, conv2d;  // the last Set*'s arguments
  int math = -1;
  std::vector<cu::Ptr> allocs, frees;
  struct Forward {
    Handle h;
    int algo;
    const void *x, *w;
    void* work;
    size_t work_bytes;
    void* y;
  };
  std::vector<Forward> forwards;
  std::vector<cu::Stream> stream_of_handle;
};
Seen seen;
size_t workspace_bytes = 0;  // what the next shape's algorithm needs

Handle handle_at(size_t i) { return reinterpret_cast<Handle>(i + 1); }

Api fake_cudnn() {
  Api a{};
  a.GetVersion = [] { return size_t{91900}; };
  a.GetErrorString = [](Code) { return "CUDNN_STATUS_FAKE"; };
  a.Create = [](Handle* h) {
    seen.creates++;
    if (seen.create_answer != SUCCESS) return seen.create_answer;
    *h = handle_at(seen.stream_of_handle.size());
    seen.stream_of_handle.push_back(nullptr);
    return SUCCESS;
  };
  a.Destroy = [](Handle) { return SUCCESS; };
  a.SetStream = [](Handle h, cu::Stream s) {
    seen.stream_of_handle[reinterpret_cast<size_t>(h) - 1] = s;
    return SUCCESS;
  };
  a.CreateTensorDescriptor = [](TensorDesc* d) {
    return *d = reinterpret_cast<TensorDesc>(++seen.created_descs), SUCCESS;
  };
  a.CreateFilterDescriptor = [](FilterDesc* d) {
    return *d = reinterpret_cast<FilterDesc>(++seen.created_descs), SUCCESS;
  };
  a.CreateConvolutionDescriptor = [](ConvDesc* d) {
    return *d = reinterpret_cast<ConvDesc>(++seen.created_descs), SUCCESS;
  };
  a.DestroyTensorDescriptor = [](TensorDesc) { return seen.destroyed_descs++, SUCCESS; };
  a.DestroyFilterDescriptor = [](FilterDesc) { return seen.destroyed_descs++, SUCCESS; };
  a.DestroyConvolutionDescriptor = [](ConvDesc) { return seen.destroyed_descs++, SUCCESS; };
  a.SetTensor4dDescriptor = [](TensorDesc, int f, int t, int n, int c, int h, int w) {
    seen.tensor4d.insert(seen.tensor4d.end(), {f, t, n, c, h, w});
    return SUCCESS;
  };
  a.SetFilter4dDescriptor = [](FilterDesc, int t, int f, int k, int c, int r, int s) {
    seen.filter4d = {t, f, k, c, r, s};
    return SUCCESS;
  };
  a.SetConvolution2dDescriptor = [](ConvDesc, int ph, int pw, int u, int v, int dh, int dw, int mode, int type) {
    seen.conv2d = {ph, pw, u, v, dh, dw, mode, type};
    return SUCCESS;
  };
  a.SetConvolutionMathType = [](ConvDesc, int m) { return seen.math = m, SUCCESS; };
  a.GetConvolutionForwardAlgorithm_v7 = [](Handle, TensorDesc, FilterDesc, ConvDesc, TensorDesc, int want, int* found,
                                           FwdAlgoPerf* p) {
    seen.heuristics++;
    EXPECT_EQ(want, FWD_ALGO_COUNT);
    p[0] = perf(5, SUCCESS, FMA_MATH, 0);  // fastest, not deterministic
    p[1] = perf(2, SUCCESS, FMA_MATH, DETERMINISTIC);
    *found = 2;
    return SUCCESS;
  };
  a.GetConvolutionForwardWorkspaceSize = [](Handle, TensorDesc, FilterDesc, ConvDesc, TensorDesc, int algo,
                                            size_t* bytes) {
    EXPECT_EQ(algo, 2);
    *bytes = workspace_bytes;
    return SUCCESS;
  };
  a.ConvolutionForward = [](Handle h, const void* alpha, TensorDesc, const void* x, FilterDesc, const void* w, ConvDesc,
                            int algo, void* work, size_t bytes, const void* beta, TensorDesc, void* y) {
    EXPECT_EQ(*static_cast<const float*>(alpha), 1.f);
    EXPECT_EQ(*static_cast<const float*>(beta), 0.f);
    seen.forwards.push_back({h, algo, x, w, work, bytes, y});
    return SUCCESS;
  };
  return a;
}

constexpr cu::Ptr WORK_BASE = 0x7000'0000;
cu::Api fake_cuda() {
  cu::Api a{};
  a.MemAlloc = [](cu::Ptr* p, size_t) {
    *p = WORK_BASE + seen.allocs.size();
    seen.allocs.push_back(*p);
    return cu::SUCCESS;
  };
  a.MemFree = [](cu::Ptr p) { return seen.frees.push_back(p), cu::SUCCESS; };
  a.StreamSynchronize = [](cu::Stream) { return seen.syncs++, cu::SUCCESS; };
  return a;
}

class CudnnConvolver : public ::testing::Test {
 protected:
  void SetUp() override {
    seen = {};
    workspace_bytes = 0;
  }
  Api dnn = fake_cudnn();
  cu::Api cuda = fake_cuda();
  // conv2's shape: N1 C3 224x224, K64 7x7, pad 3, stride 2 -> 112x112.
  gpu::cuda::ConvShape g{1, 3, 224, 224, 64, 7, 7, 3, 3, 2, 2, 112, 112};
  cu::Stream stream_a = reinterpret_cast<cu::Stream>(0xa), stream_b = reinterpret_cast<cu::Stream>(0xb);
  static constexpr cu::Ptr IN = 0x10'0000, FILTER = 0x20'0000, OUT = 0x30'0000;
};

TEST_F(CudnnConvolver, DescribesTheShapeAndRunsTheChosenAlgorithm) {
  {
    Convolver c(dnn, cuda);
    workspace_bytes = 4096;
    ASSERT_TRUE(c.run(3, stream_a, g, IN, FILTER, OUT));
    EXPECT_EQ(seen.tensor4d,
              (std::vector<int>{TENSOR_NCHW, DATA_FLOAT, 1, 3, 224, 224, TENSOR_NCHW, DATA_FLOAT, 1, 64, 112, 112}));
    EXPECT_EQ(seen.filter4d, (std::vector<int>{DATA_FLOAT, TENSOR_NCHW, 64, 3, 7, 7}));
    EXPECT_EQ(seen.conv2d, (std::vector<int>{3, 3, 2, 2, 1, 1, CROSS_CORRELATION, DATA_FLOAT}));
    EXPECT_EQ(seen.math, FMA_MATH);
    ASSERT_EQ(seen.forwards.size(), 1u);
    const auto& f = seen.forwards[0];
    EXPECT_EQ(f.algo, 2);  // the deterministic one, not the fastest
    EXPECT_EQ(f.x, reinterpret_cast<const void*>(IN));
    EXPECT_EQ(f.w, reinterpret_cast<const void*>(FILTER));
    EXPECT_EQ(f.y, reinterpret_cast<void*>(OUT));
    EXPECT_EQ(f.work, reinterpret_cast<void*>(WORK_BASE));
    EXPECT_EQ(f.work_bytes, 4096u);
    EXPECT_EQ(seen.stream_of_handle, std::vector<cu::Stream>{stream_a});
    EXPECT_EQ(seen.created_descs, seen.destroyed_descs);
  }
  EXPECT_EQ(seen.frees, std::vector<cu::Ptr>{WORK_BASE});  // the workspace goes with the Convolver
}

TEST_F(CudnnConvolver, OneChoicePerShapeAHandlePerStream) {
  Convolver c(dnn, cuda);
  ASSERT_TRUE(c.run(1, stream_a, g, IN, FILTER, OUT));
  ASSERT_TRUE(c.run(1, stream_a, g, IN, FILTER, OUT));
  ASSERT_TRUE(c.run(2, stream_b, g, IN, FILTER, OUT));
  EXPECT_EQ(seen.heuristics, 1);
  EXPECT_EQ(seen.creates, 2);
  EXPECT_EQ(seen.stream_of_handle, (std::vector<cu::Stream>{stream_a, stream_b}));
  ASSERT_EQ(seen.forwards.size(), 3u);
  EXPECT_EQ(seen.forwards[1].h, handle_at(0));
  EXPECT_EQ(seen.forwards[2].h, handle_at(1));
  EXPECT_EQ(seen.forwards[0].work, nullptr);  // no workspace asked, none made
  EXPECT_TRUE(seen.allocs.empty());
  gpu::cuda::ConvShape other = g;
  other.stride_h = other.stride_w = 1;
  other.p = other.q = 224;
  ASSERT_TRUE(c.run(1, stream_a, other, IN, FILTER, OUT));
  EXPECT_EQ(seen.heuristics, 2);
}

TEST_F(CudnnConvolver, TheWorkspaceGrowsAfterTheStreamsWork) {
  Convolver c(dnn, cuda);
  workspace_bytes = 1000;
  ASSERT_TRUE(c.run(1, stream_a, g, IN, FILTER, OUT));
  gpu::cuda::ConvShape bigger = g;
  bigger.n = 2;
  workspace_bytes = 2000;
  ASSERT_TRUE(c.run(1, stream_a, bigger, IN, FILTER, OUT));
  ASSERT_TRUE(c.run(1, stream_a, g, IN, FILTER, OUT));  // 1000 fits in 2000
  EXPECT_EQ(seen.allocs, (std::vector<cu::Ptr>{WORK_BASE, WORK_BASE + 1}));
  EXPECT_EQ(seen.syncs, 1);
  EXPECT_EQ(seen.frees, std::vector<cu::Ptr>{WORK_BASE});
  ASSERT_EQ(seen.forwards.size(), 3u);
  EXPECT_EQ(seen.forwards[2].work, reinterpret_cast<void*>(WORK_BASE + 1));
  EXPECT_EQ(seen.forwards[2].work_bytes, 1000u);
}

TEST_F(CudnnConvolver, AFailedCreateIsReportedAndKept) {
  constexpr Code NOT_INITIALIZED = 1;
  seen.create_answer = NOT_INITIALIZED;
  Convolver c(dnn, cuda);
  auto first = c.run(1, stream_a, g, IN, FILTER, OUT);
  auto second = c.run(2, stream_b, g, IN, FILTER, OUT);
  ASSERT_FALSE(first);
  ASSERT_FALSE(second);
  EXPECT_EQ(first.error().message, "cudnnCreate: CUDNN_STATUS_FAKE (1)");
  EXPECT_EQ(second.error().message, first.error().message);
  EXPECT_EQ(seen.creates, 1);
  EXPECT_TRUE(seen.forwards.empty());
}

}  // namespace
}  // namespace vgpu::worker::cudnn
