// SPDX-License-Identifier: GPL-2.0-or-later
// A CUDA Driver API program as a guest's user writes it: <cuda.h> and
// libcuda.so.1, nothing of vgpu. Built twice (cuda/meson.build): against
// vgpu's cuda.h and, where a toolkit is installed, against NVIDIA's
// (VGPU_E2E_NVIDIA_HEADER), so CUDA 13's versioned names must all resolve
// in vgpu's library. VGPU_CUDA_PORT picks the device (one test per mode).
// The kernels are clang-14's PTX (e2e_kernels.ptx, e2e_global.ptx), each
// file with the CUDA C it was compiled from.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

// A file's bytes, empty when it cannot be read.
std::vector<char> read_file(const std::string& path) {
  std::vector<char> bytes;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) bytes.insert(bytes.end(), buf, buf + n);
    std::fclose(f);
  }
  return bytes;
}

// The kernels' PTX text, from the files beside this one (each with its CUDA C).
std::string ptx(const char* name) {
  const std::vector<char> bytes = read_file(std::string(VGPU_E2E_PTX_DIR) + "/" + name);
  return {bytes.begin(), bytes.end()};
}
const std::string KERNELS_PTX = ptx("e2e_kernels.ptx");
const std::string GLOBAL_PTX = ptx("e2e_global.ptx");

#define ASSERT_CU(call) ASSERT_EQ((call), CUDA_SUCCESS) << #call
#define EXPECT_CU(call) EXPECT_EQ((call), CUDA_SUCCESS) << #call

// Each test in a context of its own (an error that sticks to one ends only it).
class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_CU(cuInit(0));
    ASSERT_CU(cuDeviceGet(&dev_, 0));
    ASSERT_CU(cuCtxCreate(&ctx_, nullptr, 0, dev_));
  }
  void TearDown() override {
    if (ctx_ != nullptr) {
      EXPECT_CU(cuCtxDestroy(ctx_));
    }
  }
  CUdeviceptr alloc_floats(const std::vector<float>& v) {
    CUdeviceptr p = 0;
    EXPECT_CU(cuMemAlloc(&p, v.size() * sizeof(float)));
    EXPECT_CU(cuMemcpyHtoD(p, v.data(), v.size() * sizeof(float)));
    return p;
  }
  // e2e_kernels.ptx loaded into m, and its kernel `name` into f.
  void load_kernel(CUmodule& m, CUfunction& f, const char* name) {
    ASSERT_CU(cuModuleLoadData(&m, KERNELS_PTX.c_str()));
    ASSERT_CU(cuModuleGetFunction(&f, m, name));
  }
  std::vector<float> read_floats(CUdeviceptr p, size_t n) {
    std::vector<float> v(n);
    EXPECT_CU(cuMemcpyDtoH(v.data(), p, n * sizeof(float)));
    return v;
  }
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
};

TEST_F(Cuda, DeviceQueries) {
  int count = 0, version = 0, major = 0, minor = 0, warp = 0, threads = 0;
  ASSERT_CU(cuDeviceGetCount(&count));
  EXPECT_EQ(count, 1);
  ASSERT_CU(cuDriverGetVersion(&version));
  EXPECT_GE(version, 12000);
  char name[128] = {};
  ASSERT_CU(cuDeviceGetName(name, sizeof name, dev_));
  EXPECT_EQ(std::string(name).rfind("vgpu", 0), 0u) << name;
  ASSERT_CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_));
  ASSERT_CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_));
  EXPECT_EQ(major, 7);
  EXPECT_EQ(minor, 0);
#ifndef VGPU_E2E_NVIDIA_HEADER  // deprecated there
  ASSERT_CU(cuDeviceComputeCapability(&major, &minor, dev_));
  EXPECT_EQ(major, 7);
#endif
  ASSERT_CU(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev_));
  EXPECT_EQ(warp, 32);
  ASSERT_CU(cuDeviceGetAttribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev_));
  EXPECT_EQ(threads, 1024);
  size_t total = 0, free_bytes = 0;
  ASSERT_CU(cuDeviceTotalMem(&total, dev_));
  EXPECT_GT(total, 0u);
  ASSERT_CU(cuMemGetInfo(&free_bytes, &total));
  EXPECT_LE(free_bytes, total);
  CUdevice other = 0;
  EXPECT_EQ(cuDeviceGet(&other, 1), CUDA_ERROR_INVALID_DEVICE);
  const char* s = nullptr;
  ASSERT_CU(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &s));
  EXPECT_STREQ(s, "CUDA_ERROR_ILLEGAL_ADDRESS");
}

TEST_F(Cuda, ContextStackAndPrimaryContext) {
  CUcontext cur = nullptr, primary = nullptr, popped = nullptr;
  ASSERT_CU(cuCtxGetCurrent(&cur));
  EXPECT_EQ(cur, ctx_);
  ASSERT_CU(cuDevicePrimaryCtxRetain(&primary, dev_));
  ASSERT_CU(cuCtxPushCurrent(primary));
  ASSERT_CU(cuCtxGetCurrent(&cur));
  EXPECT_EQ(cur, primary);
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAlloc(&p, 4096));
  ASSERT_CU(cuMemFree(p));
  ASSERT_CU(cuCtxPopCurrent(&popped));
  EXPECT_EQ(popped, primary);
  unsigned flags = 0;
  int active = 0;
  ASSERT_CU(cuDevicePrimaryCtxGetState(dev_, &flags, &active));
  EXPECT_EQ(active, 1);
  ASSERT_CU(cuDevicePrimaryCtxRelease(dev_));
  unsigned api = 0;
  ASSERT_CU(cuCtxGetApiVersion(ctx_, &api));
  EXPECT_GT(api, 0u);
  EXPECT_CU(cuCtxSynchronize());
}

TEST_F(Cuda, MemoryRoundTripsAndRanges) {
  std::vector<float> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f;
  CUdeviceptr a = alloc_floats(v);
  EXPECT_EQ(read_floats(a, v.size()), v);
  // An interior pointer copies from its offset.
  std::vector<float> tail(10);
  ASSERT_CU(cuMemcpyDtoH(tail.data(), a + 990 * sizeof(float), tail.size() * sizeof(float)));
  EXPECT_EQ(tail[0], 495.0f);
  CUdeviceptr base = 0;
  size_t size = 0;
  ASSERT_CU(cuMemGetAddressRange(&base, &size, a + 100));
  EXPECT_EQ(base, a);
  EXPECT_EQ(size, v.size() * sizeof(float));
  // Device to device, then past the end.
  CUdeviceptr b = 0;
  ASSERT_CU(cuMemAlloc(&b, v.size() * sizeof(float)));
  ASSERT_CU(cuMemcpyDtoD(b, a, v.size() * sizeof(float)));
  EXPECT_EQ(read_floats(b, v.size()), v);
  EXPECT_EQ(cuMemcpyDtoH(tail.data(), a + 995 * sizeof(float), tail.size() * sizeof(float)), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemFree(a));
  ASSERT_CU(cuMemFree(b));
  EXPECT_EQ(cuMemFree(a), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Cuda, MemsetsSmallAndLarge) {
  constexpr size_t N = 256 * 1024;  // words: past the GPU fill threshold
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAlloc(&p, N * 4));
  ASSERT_CU(cuMemsetD32(p, 0x3f800000u, N));
  std::vector<uint32_t> w(N);
  ASSERT_CU(cuMemcpyDtoH(w.data(), p, N * 4));
  EXPECT_EQ(w[0], 0x3f800000u);
  EXPECT_EQ(w[N - 1], 0x3f800000u);
  ASSERT_CU(cuMemsetD8(p + 1, 0xab, N * 4 - 3));  // unaligned head and tail
  ASSERT_CU(cuMemcpyDtoH(w.data(), p, N * 4));
  EXPECT_EQ(w[0], 0xabababu << 8 | 0x00u);
  EXPECT_EQ(w[N / 2], 0xababababu);
  EXPECT_EQ(w[N - 1], 0x3f80ababu);
  ASSERT_CU(cuMemsetD16(p, 0x1234, 3));
  ASSERT_CU(cuMemcpyDtoH(w.data(), p, 8));
  EXPECT_EQ(w[0], 0x12341234u);
  EXPECT_EQ(w[1], 0xabab1234u);
  ASSERT_CU(cuMemsetD32Async(p, 7, 4, nullptr));
  ASSERT_CU(cuStreamSynchronize(nullptr));
  EXPECT_EQ(cuMemsetD32(p + 2, 0, 1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemFree(p));
}

TEST_F(Cuda, StreamsAndEvents) {
  CUstream s = nullptr;
  ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent start = nullptr, stop = nullptr;
  ASSERT_CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
  ASSERT_CU(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAlloc(&p, 1 << 20));
  ASSERT_CU(cuEventRecord(start, s));
  ASSERT_CU(cuMemsetD32Async(p, 1, (1 << 20) / 4, s));
  ASSERT_CU(cuEventRecord(stop, s));
  ASSERT_CU(cuEventSynchronize(stop));
  EXPECT_CU(cuEventQuery(stop));
  float ms = -1;
  ASSERT_CU(cuEventElapsedTime(&ms, start, stop));
  EXPECT_GE(ms, 0.0f);
  EXPECT_CU(cuStreamQuery(s));
  ASSERT_CU(cuStreamSynchronize(s));
  ASSERT_CU(cuEventDestroy(start));
  ASSERT_CU(cuEventDestroy(stop));
  ASSERT_CU(cuStreamDestroy(s));
  EXPECT_EQ(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_CU(cuMemFree(p));
}

// A fat binary as nvcc 13 writes it (cuda/libcuda/testdata/README.md):
// fb_scale's PTX zstd-compressed beside its sm_75 SASS.
std::vector<char> testdata(const char* name) { return read_file(std::string(VGPU_CUDA_TESTDATA) + "/" + name); }

TEST_F(Cuda, FatBinaryLoadsAndRuns) {
  const std::vector<char> fatbin = testdata("scale_zstd.fatbin");
  ASSERT_FALSE(fatbin.empty());
  CUmodule m = nullptr;
  ASSERT_CU(cuModuleLoadData(&m, fatbin.data()));
  CUmodule again = nullptr;
  ASSERT_CU(cuModuleLoadFatBinary(&again, fatbin.data()));
  ASSERT_CU(cuModuleUnload(again));
  CUfunction f = nullptr;
  ASSERT_CU(cuModuleGetFunction(&f, m, "fb_scale"));
  constexpr int N = 1000;
  std::vector<float> y(N);
  for (int i = 0; i < N; ++i) y[static_cast<size_t>(i)] = static_cast<float>(i);
  CUdeviceptr dy = alloc_floats(y);
  int n = N;
  float a = 2.5f;
  void* args[] = {&n, &a, &dy};
  ASSERT_CU(cuLaunchKernel(f, (N + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_CU(cuCtxSynchronize());
  auto out = read_floats(dy, N);
  for (int i = 0; i < N; ++i) ASSERT_EQ(out[static_cast<size_t>(i)], 2.5f * static_cast<float>(i)) << i;
  ASSERT_CU(cuMemFree(dy));
  ASSERT_CU(cuModuleUnload(m));
}

TEST_F(Cuda, SassOnlyFatBinaryIsNoBinaryForGpuNamingTheFlag) {
  const std::vector<char> sass = testdata("scale_sass.fatbin");
  ASSERT_FALSE(sass.empty());
  CUmodule m = nullptr;
  char log[512] = {};
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[] = {log, reinterpret_cast<void*>(uintptr_t{sizeof log})};
  EXPECT_EQ(cuModuleLoadDataEx(&m, sass.data(), 2, opts, vals), CUDA_ERROR_NO_BINARY_FOR_GPU);
  EXPECT_NE(std::string(log).find("-gencode arch=compute_75,code=compute_75"), std::string::npos) << log;
  EXPECT_EQ(cuModuleLoadData(&m, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Cuda, VectorAdd) {
  CUmodule m = nullptr;
  CUfunction vadd = nullptr;
  ASSERT_NO_FATAL_FAILURE(load_kernel(m, vadd, "vadd"));
  constexpr unsigned N = 1000;
  std::vector<float> a(N), b(N);
  for (unsigned i = 0; i < N; ++i) a[i] = static_cast<float>(i), b[i] = 2.0f * static_cast<float>(i);
  CUdeviceptr da = alloc_floats(a), db = alloc_floats(b), dc = alloc_floats(std::vector<float>(N));
  unsigned n = N;
  void* args[] = {&da, &db, &dc, &n};
  ASSERT_CU(cuLaunchKernel(vadd, (N + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_CU(cuCtxSynchronize());
  auto c = read_floats(dc, N);
  for (unsigned i = 0; i < N; ++i) ASSERT_EQ(c[i], 3.0f * static_cast<float>(i)) << i;
  int max_threads = 0;
  ASSERT_CU(cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, vadd));
  EXPECT_GE(max_threads, 128);
  EXPECT_EQ(cuLaunchKernel(vadd, 1, 1, 1, 2048, 1, 1, 0, nullptr, args, nullptr), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuModuleUnload(m));
}

TEST_F(Cuda, ExtraFormAndStructParameters) {
  CUmodule m = nullptr;
  CUfunction axpb = nullptr;
  ASSERT_NO_FATAL_FAILURE(load_kernel(m, axpb, "axpb"));
  constexpr unsigned N = 64;
  CUdeviceptr y = alloc_floats(std::vector<float>(N, 2.0f));
  // The packed buffer as the .param list lays it out: y @0, flag @8, Pair @16 (align 8), n @32.
  struct Pair {
    float scale;
    unsigned char tag;
    double bias;
  };
  unsigned char packed[36] = {};
  char flag = 1;
  Pair p{3.0f, 4, 0.5};
  unsigned n = N;
  std::memcpy(packed, &y, 8);
  std::memcpy(packed + 8, &flag, 1);
  std::memcpy(packed + 16, &p, 16);
  std::memcpy(packed + 32, &n, 4);
  size_t size = sizeof packed;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  ASSERT_CU(cuLaunchKernel(axpb, 1, 1, 1, N, 1, 1, 0, nullptr, nullptr, extra));
  auto out = read_floats(y, N);
  EXPECT_EQ(out[0], 2.0f * 3.0f + 0.5f + 1.0f + 4.0f);
  EXPECT_EQ(out[N - 1], out[0]);
  ASSERT_CU(cuModuleUnload(m));
}

TEST_F(Cuda, ModuleGlobalIsReadableAndWritable) {
  CUmodule m = nullptr;
  ASSERT_CU(cuModuleLoadData(&m, GLOBAL_PTX.c_str()));
  CUdeviceptr gain = 0;
  size_t bytes = 0;
  ASSERT_CU(cuModuleGetGlobal(&gain, &bytes, m, "gain"));
  EXPECT_EQ(bytes, 4u);
  EXPECT_EQ(read_floats(gain, 1)[0], 3.0f);
  float two = 2.0f;
  ASSERT_CU(cuMemcpyHtoD(gain, &two, 4));
  CUfunction scale = nullptr;
  ASSERT_CU(cuModuleGetFunction(&scale, m, "scale"));
  CUdeviceptr y = alloc_floats(std::vector<float>(32, 5.0f));
  unsigned n = 32;
  void* args[] = {&y, &n};
  ASSERT_CU(cuLaunchKernel(scale, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(read_floats(y, 32)[31], 10.0f);
  EXPECT_EQ(cuModuleGetGlobal(&gain, &bytes, m, "missing"), CUDA_ERROR_NOT_FOUND);
}

TEST_F(Cuda, BadPtxThenAGoodModuleStillLoads) {
  CUmodule m = nullptr;
  char log[512] = {};
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[] = {log, reinterpret_cast<void*>(uintptr_t{sizeof log})};
  const char* bad = ".version 6.0\n.target sm_70\n.address_size 64\n.visible .entry k() { frobnicate.u32 %r1; }\n";
  EXPECT_EQ(cuModuleLoadDataEx(&m, bad, 2, opts, vals), CUDA_ERROR_INVALID_PTX);
  EXPECT_GT(std::strlen(log), 0u);
  EXPECT_EQ(cuModuleLoadData(&m, ".target sm_70\n.address_size 64\n"), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(cuModuleLoadData(&m, ".version 99.0\n.target sm_70\n.address_size 64\n"),
            CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
  ASSERT_CU(cuModuleLoadData(&m, KERNELS_PTX.c_str()));
  CUfunction f = nullptr;
  EXPECT_EQ(cuModuleGetFunction(&f, m, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
  ASSERT_CU(cuModuleGetFunction(&f, m, "vadd"));
  ASSERT_CU(cuModuleUnload(m));
}

TEST_F(Cuda, FaultingKernelIsIllegalAddressAndSticks) {
  CUmodule m = nullptr;
  CUfunction poke = nullptr;
  ASSERT_NO_FATAL_FAILURE(load_kernel(m, poke, "poke"));
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAlloc(&p, 4096));
  unsigned long long off = 1ull << 36;  // 256 GiB past a 4 KiB buffer
  void* args[] = {&p, &off};
  CUresult launched = cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr);
  CUresult r = launched == CUDA_SUCCESS ? cuCtxSynchronize() : launched;
  EXPECT_EQ(r, CUDA_ERROR_ILLEGAL_ADDRESS);
  CUdeviceptr q = 0;
  EXPECT_EQ(cuMemAlloc(&q, 4096), CUDA_ERROR_ILLEGAL_ADDRESS);  // sticky
  // Another context is untouched.
  CUcontext other = nullptr;
  ASSERT_CU(cuCtxCreate(&other, nullptr, 0, dev_));
  ASSERT_CU(cuMemAlloc(&q, 4096));
  ASSERT_CU(cuCtxDestroy(other));
}

}  // namespace
