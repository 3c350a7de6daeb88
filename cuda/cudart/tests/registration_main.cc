// SPDX-License-Identifier: GPL-2.0-or-later
// The CUDA runtime as nvcc's generated code drives it, without nvcc: each
// fat binary of ../testdata (our kernels in every compression nvcc writes,
// and one with SASS only) is registered at start-up as nvcc's constructor
// does (__cudaRegisterFatBinary, __cudaRegisterFunction, __cudaRegisterVar,
// __cudaRegisterFatBinaryEnd), and `kernel<<<grid, block, 0, stream>>>(...)`
// is what nvcc makes of it: __cudaPushCallConfiguration, then the kernel's
// host stub, which pops the configuration and launches (CUDA 13's
// __cudaGetKernel + __cudaLaunchKernel, or cudaLaunchKernel). The host code
// is ordinary C++, so this runs where no NVIDIA toolkit is: in CI on every
// in-process port (VGPU_CUDA_PORT) and in the test guest (scripts/run-guest
// --tests cudart), where it is /guest-tests/bin/vgpu-cudart-registration.
//
//   registration_main [FATBIN_DIR]   (default: /guest-tests/fatbin)
// One line per test, "PASS name (...)" or "FAIL name: why"; exit 0 when all
// passed. vgpu_tests (the guest's selection): all or cudart runs every
// test, a test's name that one, anything else is not for it ("SKIP").
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "cuda/include/cuda_runtime_api.h"

// Not in vgpu's header (vgpu does not support it); declared as CUDA does.
extern "C" cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags);

namespace {

constexpr uint32_t WRAPPER_MAGIC = 0x466243B1;  // __fatBinC_Wrapper_t (crt/host_runtime.h)
constexpr int WRAPPER_VERSION = 1;

struct Wrapper {  // nvcc's __fatBinC_Wrapper_t
  uint32_t magic;
  int version;
  const void* data;
  const void* filename_or_fatbins;
};

// One registered fat binary: its bytes, its wrapper, and the host-side
// names nvcc would give its kernels and variables (one set per input, as
// each translation unit of a program has its own).
struct Module {
  std::string file;
  std::vector<uint64_t> bytes;  // 8-byte aligned, as nvcc's .nv_fatbin section
  Wrapper wrapper{};
  void** handle = nullptr;
};

template <int I>
struct Slot {
  static float coef[2];   // host shadows of __constant__ rt_coef and
  static unsigned count;  // __device__ rt_count
  // The host stubs of the kernels, as nvcc generates them.
  static void axpb(int n, float* y) {
    void* args[] = {&n, &y};
    static cudaKernel_t handle = nullptr;
    static const bool found = __cudaGetKernel(&handle, reinterpret_cast<const void*>(&axpb)) == cudaSuccess;
    (void)found;
    dim3 grid, block;
    size_t shared = 0;
    cudaStream_t stream = nullptr;
    if (__cudaPopCallConfiguration(&grid, &block, &shared, &stream) != cudaSuccess) return;
    (void)__cudaLaunchKernel(handle, grid, block, args, shared, stream);
  }
  static void store(int* p, int v) {  // the older form: cudaLaunchKernel by host function
    void* args[] = {&p, &v};
    dim3 grid, block;
    size_t shared = 0;
    cudaStream_t stream = nullptr;
    if (__cudaPopCallConfiguration(&grid, &block, &shared, &stream) != cudaSuccess) return;
    (void)cudaLaunchKernel(reinterpret_cast<const void*>(&store), grid, block, args, shared, stream);
  }
};
template <int I>
float Slot<I>::coef[2];
template <int I>
unsigned Slot<I>::count;

enum { ZSTD, LZ, PLAIN, ALL, SASS, SLOTS };
const char* const FILES[SLOTS] = {"rt_zstd.fatbin", "rt_lz.fatbin", "rt_plain.fatbin", "rt_all.fatbin",
                                  "rt_sass.fatbin"};
Module g_modules[SLOTS];

bool read_file(const std::string& path, std::vector<uint64_t>& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::vector<char> raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  out.assign((raw.size() + sizeof(uint64_t) - 1) / sizeof(uint64_t), 0);
  std::memcpy(out.data(), raw.data(), raw.size());
  return !raw.empty();
}

template <int I>
bool register_module(const std::string& dir) {
  Module& m = g_modules[I];
  m.file = FILES[I];
  if (!read_file(dir + "/" + m.file, m.bytes)) return false;
  m.wrapper = Wrapper{WRAPPER_MAGIC, WRAPPER_VERSION, m.bytes.data(), nullptr};
  m.handle = __cudaRegisterFatBinary(&m.wrapper);
  char axpb[] = "rt_axpb", store[] = "rt_store", coef[] = "rt_coef", count[] = "rt_count";
  __cudaRegisterFunction(m.handle, reinterpret_cast<const char*>(&Slot<I>::axpb), axpb, axpb, -1, nullptr, nullptr,
                         nullptr, nullptr, nullptr);
  __cudaRegisterFunction(m.handle, reinterpret_cast<const char*>(&Slot<I>::store), store, store, -1, nullptr, nullptr,
                         nullptr, nullptr, nullptr);
  __cudaRegisterVar(m.handle, reinterpret_cast<char*>(Slot<I>::coef), coef, coef, 0, sizeof Slot<I>::coef, 1, 0);
  __cudaRegisterVar(m.handle, reinterpret_cast<char*>(&Slot<I>::count), count, count, 0, sizeof Slot<I>::count, 0, 0);
  __cudaRegisterFatBinaryEnd(m.handle);
  return true;
}

// A test: empty when it passed, else why not.
using Check = std::function<std::string()>;
#define EXPECT_RT(call, want)                                                                            \
  do {                                                                                                   \
    const cudaError_t got_ = (call);                                                                     \
    if (got_ != (want))                                                                                  \
      return std::string(#call) + " returned " + cudaGetErrorName(got_) + ", expected " + #want + " (" + \
             cudaGetErrorString(got_) + ")";                                                             \
  } while (0)

// y = 2 * y + 1 over n floats with `<<<blocks, 128, 0, stream>>>` on
// slot I's fat binary; checks every value and the device-side count.
template <int I>
std::string axpb_checked(cudaStream_t stream) {
  constexpr int N = 1000, BLOCK = 128;
  const float coef[2] = {2.0f, 1.0f};
  const unsigned zero = 0;
  std::vector<float> y(N);
  for (int i = 0; i < N; ++i) y[i] = static_cast<float>(i);
  float* d = nullptr;
  EXPECT_RT(cudaMalloc(reinterpret_cast<void**>(&d), N * sizeof(float)), cudaSuccess);
  EXPECT_RT(cudaMemcpyToSymbol(Slot<I>::coef, coef, sizeof coef, 0, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_RT(cudaMemcpyToSymbol(&Slot<I>::count, &zero, sizeof zero, 0, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_RT(cudaMemcpyAsync(d, y.data(), N * sizeof(float), cudaMemcpyHostToDevice, stream), cudaSuccess);
  __cudaPushCallConfiguration(dim3((N + BLOCK - 1) / BLOCK), dim3(BLOCK), 0, stream);  // <<<>>>
  Slot<I>::axpb(N, d);
  EXPECT_RT(cudaGetLastError(), cudaSuccess);
  EXPECT_RT(cudaMemcpyAsync(y.data(), d, N * sizeof(float), cudaMemcpyDeviceToHost, stream), cudaSuccess);
  EXPECT_RT(cudaStreamSynchronize(stream), cudaSuccess);
  unsigned count = 0;
  EXPECT_RT(cudaMemcpyFromSymbol(&count, &Slot<I>::count, sizeof count, 0, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_RT(cudaFree(d), cudaSuccess);
  for (int i = 0; i < N; ++i)
    if (y[i] != 2.0f * static_cast<float>(i) + 1.0f)
      return "y[" + std::to_string(i) + "] = " + std::to_string(y[i]) + ", expected " + std::to_string(2 * i + 1);
  if (count != N) return "rt_count = " + std::to_string(count) + ", expected " + std::to_string(N);
  return "";
}

// What a call prints on stderr (fd 2 into a file meanwhile).
std::string stderr_of(const std::function<void()>& f) {
  char path[] = "/tmp/vgpu-cudart-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "";
  std::fflush(stderr);
  const int saved = dup(2);
  dup2(fd, 2);
  f();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  unlink(path);
  std::fputs(text.c_str(), stderr);  // still shown
  return text;
}

std::string device_and_errors() {
  int count = 0, device = -1;
  EXPECT_RT(cudaGetDeviceCount(&count), cudaSuccess);
  if (count != 1) return "cudaGetDeviceCount: " + std::to_string(count) + ", expected 1";
  cudaDeviceProp prop{};
  EXPECT_RT(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  if (std::strncmp(prop.name, "vgpu", 4) != 0 || prop.major != 7 || prop.warpSize != 32 || prop.totalGlobalMem == 0 ||
      prop.maxThreadsPerBlock != 1024)
    return std::string("cudaGetDeviceProperties: name '") + prop.name + "', " + std::to_string(prop.major) + "." +
           std::to_string(prop.minor) + ", warp " + std::to_string(prop.warpSize);
  EXPECT_RT(cudaSetDevice(0), cudaSuccess);
  EXPECT_RT(cudaGetDevice(&device), cudaSuccess);
  if (device != 0) return "cudaGetDevice: " + std::to_string(device);
  EXPECT_RT(cudaSetDevice(1), cudaErrorInvalidDevice);  // one vGPU
  EXPECT_RT(cudaPeekAtLastError(), cudaErrorInvalidDevice);
  EXPECT_RT(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_RT(cudaGetLastError(), cudaSuccess);  // read and cleared
  if (std::strcmp(cudaGetErrorName(cudaErrorInvalidDevice), "cudaErrorInvalidDevice") != 0 ||
      std::strcmp(cudaGetErrorName(cudaErrorNoKernelImageForDevice), "cudaErrorNoKernelImageForDevice") != 0 ||
      std::strcmp(cudaGetErrorString(cudaErrorMissingConfiguration), "__global__ function call is not configured"))
    return "cudaGetErrorName/String: wrong text";
  // A call vgpu does not have: cudaErrorNotSupported, named on stderr.
  void* managed = nullptr;
  const std::string said = stderr_of([&] { (void)cudaMallocManaged(&managed, 64, 1); });
  EXPECT_RT(cudaGetLastError(), cudaErrorNotSupported);
  if (said.find("cudaMallocManaged is not supported") == std::string::npos)
    return "stderr does not name cudaMallocManaged: '" + said + "'";
  // A host function nobody registered, a stub run without <<<>>>.
  int not_a_kernel = 0;
  EXPECT_RT(cudaLaunchKernel(&not_a_kernel, dim3(1), dim3(1), nullptr, 0, nullptr), cudaErrorInvalidDeviceFunction);
  dim3 g, b;
  size_t shared = 0;
  cudaStream_t s = nullptr;
  EXPECT_RT(__cudaPopCallConfiguration(&g, &b, &shared, &s), cudaErrorMissingConfiguration);
  EXPECT_RT(cudaMemcpyToSymbol(&not_a_kernel, &count, sizeof count, 0, cudaMemcpyHostToDevice), cudaErrorInvalidSymbol);
  cudaGetLastError();
  return "";
}

std::string streams_and_events() {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  EXPECT_RT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_RT(cudaEventCreate(&start), cudaSuccess);
  EXPECT_RT(cudaEventCreateWithFlags(&stop, cudaEventBlockingSync), cudaSuccess);
  EXPECT_RT(cudaEventRecord(start, stream), cudaSuccess);
  if (std::string why = axpb_checked<ZSTD>(stream); !why.empty()) return why;
  EXPECT_RT(cudaEventRecord(stop, stream), cudaSuccess);
  EXPECT_RT(cudaStreamWaitEvent(nullptr, stop, 0), cudaSuccess);
  EXPECT_RT(cudaEventSynchronize(stop), cudaSuccess);
  EXPECT_RT(cudaEventQuery(stop), cudaSuccess);
  EXPECT_RT(cudaStreamQuery(stream), cudaSuccess);
  float ms = -1.0f;
  EXPECT_RT(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
  if (!(ms >= 0.0f)) return "cudaEventElapsedTime: " + std::to_string(ms) + " ms";
  EXPECT_RT(cudaEventDestroy(start), cudaSuccess);
  EXPECT_RT(cudaEventDestroy(stop), cudaSuccess);
  EXPECT_RT(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_RT(cudaDeviceSynchronize(), cudaSuccess);
  return "";
}

// SASS only: refused when first used, the nvcc option that adds PTX named.
std::string sass_only() {
  int* d = nullptr;
  EXPECT_RT(cudaMalloc(reinterpret_cast<void**>(&d), sizeof(int)), cudaSuccess);
  cudaError_t launched = cudaSuccess;
  const std::string said = stderr_of([&] {
    __cudaPushCallConfiguration(dim3(1), dim3(1), 0, nullptr);
    Slot<SASS>::store(d, 1);
    launched = cudaGetLastError();
  });
  EXPECT_RT(launched, cudaErrorNoKernelImageForDevice);
  if (said.find("code=compute_75") == std::string::npos || said.find("rt_axpb") == std::string::npos)
    return "stderr does not name the nvcc option and the kernel: '" + said + "'";
  const float coef[2] = {1, 0};
  EXPECT_RT(cudaMemcpyToSymbol(Slot<SASS>::coef, coef, sizeof coef, 0, cudaMemcpyHostToDevice),
            cudaErrorNoKernelImageForDevice);
  cudaGetLastError();
  EXPECT_RT(cudaFree(d), cudaSuccess);  // the context is unharmed
  return "";
}

// A faulting launch sticks to the context, as CUDA's do, until
// cudaDeviceReset; the fat binaries load again after it.
std::string fault_then_reset() {
  __cudaPushCallConfiguration(dim3(1), dim3(1), 0, nullptr);
  Slot<PLAIN>::store(nullptr, 1);
  EXPECT_RT(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  void* p = nullptr;
  EXPECT_RT(cudaMalloc(&p, 16), cudaErrorIllegalAddress);
  EXPECT_RT(cudaDeviceReset(), cudaSuccess);
  cudaGetLastError();
  return axpb_checked<PLAIN>(nullptr);
}

struct Test {
  const char* name;
  Check run;
};
const Test TESTS[] = {
    {"cudart_zstd", [] { return axpb_checked<ZSTD>(nullptr); }},
    {"cudart_lz4", [] { return axpb_checked<LZ>(nullptr); }},
    {"cudart_plain", [] { return axpb_checked<PLAIN>(nullptr); }},
    {"cudart_all_compressed", [] { return axpb_checked<ALL>(nullptr); }},
    {"cudart_device_errors", device_and_errors},
    {"cudart_streams_events", streams_and_events},
    {"cudart_sass_only", sass_only},
    {"cudart_fault_reset", fault_then_reset},
};

}  // namespace

int main(int argc, char** argv) {
  const char* selection = std::getenv("vgpu_tests");
  const std::string sel = selection ? selection : "all";
  const std::string dir = argc > 1 ? argv[1] : "/guest-tests/fatbin";
  bool any = sel == "all" || sel == "cudart";
  for (const auto& t : TESTS) any = any || sel == t.name;
  if (!any) {
    std::printf("SKIP vgpu-cudart-registration: vgpu_tests=%s selects none of its tests\n", sel.c_str());
    return 0;
  }
  const bool loaded = register_module<ZSTD>(dir) && register_module<LZ>(dir) && register_module<PLAIN>(dir) &&
                      register_module<ALL>(dir) && register_module<SASS>(dir);
  if (!loaded) {
    std::printf("FAIL cudart_registration: cannot read the fat binaries rt_*.fatbin in %s\n", dir.c_str());
    return 1;
  }
  int failed = 0;
  for (const auto& t : TESTS) {
    if (sel != "all" && sel != "cudart" && sel != t.name) continue;
    const std::string why = t.run();
    if (why.empty()) {
      std::printf("PASS %s\n", t.name);
    } else {
      std::printf("FAIL %s: %s\n", t.name, why.c_str());
      ++failed;
    }
    std::fflush(stdout);
  }
  return failed == 0 ? 0 : 1;
}
