// SPDX-License-Identifier: GPL-2.0-or-later
// A CUDA runtime program as users write it, built by nvcc with
// -cudart shared (cuda/cudart/meson.build where nvcc is installed; the test
// guest's image where nvcc is, scripts/guest-image) and run unchanged on
// vgpu's libcudart.so.13: <<<>>> launches (a template kernel and a struct
// argument included), __device__ and __constant__ variables, streams,
// events and errors.
//
//   rt_program              every check; "PASS name" or "FAIL name: why" each
//   rt_program sass-only    this program built without PTX: expects the
//                           launch refused (cudaErrorNoKernelImageForDevice)
//   rt_program static       built with the static runtime: expects the first
//                           call refused (vgpu's libcuda names the reason)
// vgpu_tests in the environment (the guest's selection): all or cudart
// runs it, anything else is not for it ("SKIP").
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace demo {
__constant__ float gain[4];
__device__ unsigned long long hits;
__device__ int table[256];
}  // namespace demo

struct Affine {
  float scale, shift;
  int n;
};

template <typename T>
__global__ void apply(Affine a, const T* x, T* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < a.n) {
    y[i] = static_cast<T>(a.scale * demo::gain[0] * x[i] + a.shift);
    atomicAdd(&demo::hits, 1ull);
  }
}

__global__ void block_sum(const int* in, int* out, int n) {
  __shared__ int part[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  part[threadIdx.x] = i < n ? in[i] + demo::table[threadIdx.x] : 0;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

__global__ void poke(int* p) { *p = 42; }

namespace {

int g_failed = 0;

#define CHECK(name, cond, ...)        \
  do {                                \
    if (!(cond)) {                    \
      std::printf("FAIL %s: ", name); \
      std::printf(__VA_ARGS__);       \
      std::printf("\n");              \
      ++g_failed;                     \
      return;                         \
    }                                 \
  } while (0)
#define RT(name, call) CHECK(name, (call) == cudaSuccess, "%s: %s", #call, cudaGetErrorName(cudaGetLastError()))

void launches_and_variables() {
  const char* t = "rt_launch_template_struct";
  const int n = 3000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i % 97);
  float *dx = nullptr, *dy = nullptr;
  RT(t, cudaMalloc(&dx, n * sizeof(float)));
  RT(t, cudaMalloc(&dy, n * sizeof(float)));
  RT(t, cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  const float gain[4] = {0.5f, 0, 0, 0};
  const unsigned long long zero = 0;
  RT(t, cudaMemcpyToSymbol(demo::gain, gain, sizeof gain));
  RT(t, cudaMemcpyToSymbol(demo::hits, &zero, sizeof zero));
  apply<float><<<(n + 255) / 256, 256>>>(Affine{4.0f, 1.0f, n}, dx, dy);
  RT(t, cudaGetLastError());
  RT(t, cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  unsigned long long hits = 0;
  RT(t, cudaMemcpyFromSymbol(&hits, demo::hits, sizeof hits));
  for (int i = 0; i < n; ++i) CHECK(t, y[i] == 2.0f * x[i] + 1.0f, "y[%d] = %g, expected %g", i, y[i], 2 * x[i] + 1);
  CHECK(t, hits == n, "hits = %llu, expected %d", hits, n);
  RT(t, cudaFree(dx));
  RT(t, cudaFree(dy));
  std::printf("PASS %s (%d floats, a template kernel, a struct argument, __constant__ and __device__)\n", t, n);
}

void shared_memory_streams_events() {
  const char* t = "rt_streams_events_shared";
  const int n = 4096, block = 256, blocks = n / block;
  std::vector<int> in(n), out(blocks), table(256);
  for (int i = 0; i < n; ++i) in[i] = i;
  for (int i = 0; i < 256; ++i) table[i] = 1;
  int *din = nullptr, *dout = nullptr;
  cudaStream_t s;
  cudaEvent_t start, stop;
  RT(t, cudaStreamCreate(&s));
  RT(t, cudaEventCreate(&start));
  RT(t, cudaEventCreate(&stop));
  RT(t, cudaMalloc(&din, n * sizeof(int)));
  RT(t, cudaMalloc(&dout, blocks * sizeof(int)));
  RT(t, cudaMemcpyToSymbolAsync(demo::table, table.data(), 256 * sizeof(int), 0, cudaMemcpyHostToDevice, s));
  RT(t, cudaMemcpyAsync(din, in.data(), n * sizeof(int), cudaMemcpyHostToDevice, s));
  RT(t, cudaMemsetAsync(dout, 0xff, blocks * sizeof(int), s));
  RT(t, cudaEventRecord(start, s));
  block_sum<<<blocks, block, 0, s>>>(din, dout, n);
  RT(t, cudaEventRecord(stop, s));
  RT(t, cudaMemcpyAsync(out.data(), dout, blocks * sizeof(int), cudaMemcpyDeviceToHost, s));
  RT(t, cudaStreamSynchronize(s));
  RT(t, cudaEventSynchronize(stop));
  float ms = -1;
  RT(t, cudaEventElapsedTime(&ms, start, stop));
  for (int b = 0; b < blocks; ++b) {
    long want = 0;
    for (int i = b * block; i < (b + 1) * block; ++i) want += in[i] + 1;
    CHECK(t, out[b] == want, "block %d: %d, expected %ld", b, out[b], want);
  }
  RT(t, cudaStreamDestroy(s));
  RT(t, cudaEventDestroy(start));
  RT(t, cudaEventDestroy(stop));
  RT(t, cudaFree(din));
  RT(t, cudaFree(dout));
  std::printf("PASS %s (%d blocks of shared-memory sums, %.3f ms between events)\n", t, blocks, ms);
}

void device_and_errors() {
  const char* t = "rt_device_errors";
  int count = 0, dev = -1;
  RT(t, cudaGetDeviceCount(&count));
  CHECK(t, count == 1, "%d devices", count);
  cudaDeviceProp p;
  RT(t, cudaGetDeviceProperties(&p, 0));
  CHECK(t, std::strncmp(p.name, "vgpu", 4) == 0 && p.warpSize == 32 && p.maxThreadsPerBlock == 1024,
        "properties: '%s', warp %d, %d threads", p.name, p.warpSize, p.maxThreadsPerBlock);
  RT(t, cudaSetDevice(0));
  RT(t, cudaGetDevice(&dev));
  CHECK(t, cudaSetDevice(3) == cudaErrorInvalidDevice, "cudaSetDevice(3) accepted");
  CHECK(t, cudaPeekAtLastError() == cudaErrorInvalidDevice, "peek");
  CHECK(t, cudaGetLastError() == cudaErrorInvalidDevice && cudaGetLastError() == cudaSuccess, "get clears");
  CHECK(t, std::strcmp(cudaGetErrorName(cudaErrorIllegalAddress), "cudaErrorIllegalAddress") == 0, "name");
  CHECK(t, std::strlen(cudaGetErrorString(cudaErrorInvalidValue)) > 0, "string");
  // A launch with too many threads is refused before it runs.
  poke<<<1, 4096>>>(nullptr);
  CHECK(t, cudaGetLastError() == cudaErrorInvalidValue, "a 4096-thread block launched");
  // A managed allocation: not supported, named on stderr.
  void* m = nullptr;
  CHECK(t, cudaMallocManaged(&m, 64) == cudaErrorNotSupported, "cudaMallocManaged");
  cudaGetLastError();
  // A faulting kernel: the error sticks until cudaDeviceReset.
  poke<<<1, 1>>>(nullptr);
  CHECK(t, cudaDeviceSynchronize() == cudaErrorIllegalAddress, "a null store did not fault");
  RT(t, cudaDeviceReset());
  cudaGetLastError();
  int* d = nullptr;
  int v = 0;
  RT(t, cudaMalloc(&d, sizeof(int)));
  poke<<<1, 1>>>(d);
  RT(t, cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost));
  CHECK(t, v == 42, "after reset: %d", v);
  RT(t, cudaFree(d));
  std::printf("PASS %s (one device '%s', errors named, sticky fault cleared by cudaDeviceReset)\n", t, p.name);
}

// Built without PTX or with the static runtime: the refusal, not a crash.
int expect_refusal(const std::string& how) {
  int* d = nullptr;
  if (how == "static") {
    const cudaError_t e = cudaMalloc(&d, 4);
    std::printf("%s rt_static_runtime_refused (cudaMalloc: %s)\n", e != cudaSuccess ? "PASS" : "FAIL",
                cudaGetErrorName(e));
    return e != cudaSuccess ? 0 : 1;
  }
  if (cudaMalloc(&d, 4) != cudaSuccess) return 1;
  poke<<<1, 1>>>(d);
  const cudaError_t e = cudaGetLastError();
  const bool ok = e == cudaErrorNoKernelImageForDevice;
  std::printf("%s rt_sass_only_refused (launch: %s)\n", ok ? "PASS" : "FAIL", cudaGetErrorName(e));
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const char* sel = std::getenv("vgpu_tests");
  if (sel != nullptr && std::strcmp(sel, "all") != 0 && std::strcmp(sel, "cudart") != 0) {
    std::printf("SKIP %s: vgpu_tests=%s does not select it\n", argv[0], sel);
    return 0;
  }
  if (argc > 1) return expect_refusal(argv[1]);
  launches_and_variables();
  shared_memory_streams_events();
  device_and_errors();
  return g_failed == 0 ? 0 : 1;
}
