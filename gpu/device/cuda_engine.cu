// SPDX-License-Identifier: GPL-2.0-or-later
// The CUDA engine of the cuda back end (docs/cuda.md). Compiled by nvcc.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#if VGPU_HAVE_CUDNN
#include <cudnn.h>
#endif

#include <chrono>
#include <cstring>
#include <map>
#include <thread>
#include <mutex>
#include <string>
#include <tuple>

#include "common/spin_lock.h"
#include "gpu/device/builtin_kernels.cuh"
#include "gpu/device/cuda_engine.h"

namespace vgpu::gpu::cuda {
namespace {

constexpr unsigned THREADS = BUILTIN_THREADS;

unsigned blocks_for(uint64_t n) {
  const uint64_t b = (n + THREADS - 1) / THREADS;
  return static_cast<unsigned>(b < 65535ull * 16 ? (b == 0 ? 1 : b) : 65535ull * 16);
}

// The bodies are builtin_kernels.cuh's (shared with the worker's PTX).
__global__ void fill_kernel(float* dst, uint64_t n, float v) {
  for (uint64_t i = grid_first(); i < n; i += grid_step()) dst[i] = v;
}
__global__ void saxpy_kernel(float a, const float* x, float* y, uint64_t n) { saxpy_body(a, x, y, n); }
__global__ void madd_kernel(const float* a, const float* b, float* c, uint64_t n) { madd_body(a, b, c, n); }
__global__ void mriq_kernel(uint32_t num_k, uint32_t num_x, const float* kx, const float* ky, const float* kz,
                            const float* phi, const float* x, const float* y, const float* z, float* qr, float* qi) {
  mriq_body(num_k, num_x, kx, ky, kz, phi, x, y, z, qr, qi);
}
// The fallback when cuDNN is not built in.
__global__ void conv2d_kernel(ConvShape g, const float* in, const float* f, float* out) { conv2d_body(g, in, f, out); }

__device__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// A fence word, stored after the stream's earlier work (the kernels and
// the downloads of direct-mapped results before it are complete).
__global__ void host_word_kernel(volatile uint32_t* word, uint32_t value) { *word = value; }

__global__ void spin_kernel(uint64_t ns) {
  const uint64_t end = globaltimer() + ns;
  while (globaltimer() < end) {
  }
}

constexpr size_t BLAS_WORKSPACE = size_t{32} << 20;  // what cuBLAS recommends for Hopper

// How often a completion wait also asks CUDA about the stream: a stream
// whose work failed never writes its completion word.
constexpr auto QUERY_PERIOD = std::chrono::microseconds(50);

struct StreamState {
  cudaStream_t stream = nullptr;
  // The completion word: written by the device after the stream's work
  // (a stream memory operation), polled by the host (synchronize).
  volatile uint32_t* done = nullptr;  // mapped host memory
  CUdeviceptr done_dev = 0;           // the same word as the device writes it
  uint32_t done_seq = 0;
  // A fence word write_host_word held back to go in one call with the
  // completion word (synchronize), or before the stream's next work.
  CUdeviceptr held_word = 0;
  uint32_t held_value = 0;
  bool holding = false;
  cublasHandle_t blas = nullptr;
  void* blas_workspace = nullptr;
#if VGPU_HAVE_CUDNN
  cudnnHandle_t dnn = nullptr;
#endif
};

class CudaEngine final : public Engine {
 public:
  CudaEngine(std::byte* host, uint64_t bytes) : host_(host), bytes_(bytes) {}
  ~CudaEngine() override {
    for (auto& [id, s] : streams_) {
      cudaStreamSynchronize(s.stream);
      if (s.blas) cublasDestroy(s.blas);
      if (s.blas_workspace) cudaFree(s.blas_workspace);
#if VGPU_HAVE_CUDNN
      if (s.dnn) cudnnDestroy(s.dnn);
#endif
      cudaStreamDestroy(s.stream);
      if (s.done) cudaFreeHost(const_cast<uint32_t*>(s.done));
    }
    if (xfer_) cudaStreamDestroy(xfer_);
    if (registered_) cudaHostUnregister(host_);
    if (mirror_) cudaFree(mirror_);
  }

  bool init(std::string* error) {
    int count = 0;
    if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
      *error = e != cudaSuccess ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e) : "no CUDA device";
      cudaGetLastError();
      return false;
    }
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    name_ = prop.name;
    if (cudaError_t e = cudaMalloc(&mirror_, bytes_); e != cudaSuccess) {
      *error = "cudaMalloc of the VRAM mirror (" + std::to_string(bytes_) + " bytes): " + cudaGetErrorString(e);
      mirror_ = nullptr;
      return false;
    }
    cudaMemset(mirror_, 0, bytes_);
    registered_ = cudaHostRegister(host_, bytes_, cudaHostRegisterDefault) == cudaSuccess;
    cudaGetLastError();  // an unregistered VRAM still works (pageable copies)
    map_host();
    // Stream memory operations (a 4-byte store after a stream's work) are
    // the driver API's: reached through the runtime, no link to libcuda.
    cudaDriverEntryPointQueryResult found{};
    void* fn = nullptr;
    if (cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, CUDA_VERSION, cudaEnableDefault, &found) ==
            cudaSuccess &&
        found == cudaDriverEntryPointSuccess)
      write_value_ = reinterpret_cast<PFN_cuStreamWriteValue32_v11070>(fn);
    cudaGetLastError();
    if (write_value_ != nullptr &&
        cudaGetDriverEntryPointByVersion("cuStreamBatchMemOp", &fn, CUDA_VERSION, cudaEnableDefault, &found) ==
            cudaSuccess &&
        found == cudaDriverEntryPointSuccess)
      batch_ = reinterpret_cast<PFN_cuStreamBatchMemOp_v11070>(fn);
    cudaGetLastError();
    cudaStreamCreateWithFlags(&xfer_, cudaStreamNonBlocking);
    return cudaDeviceSynchronize() == cudaSuccess;
  }

  std::string name() const override { return name_ + (registered_ ? "" : " (VRAM not registered)"); }
  std::string conv2d_library() const override {
#if VGPU_HAVE_CUDNN
    return "cudnn " + std::to_string(cudnnGetVersion()) + " (fp32 FMA math, heuristic algorithm)";
#else
    return "direct cuda kernel";
#endif
  }
  std::string error() const override {
    std::lock_guard l(mutex_);
    return error_;
  }

  void upload(uint64_t addr, uint64_t len) override {
    check(cudaMemcpyAsync(mirror_ + addr, host_ + addr, len, cudaMemcpyHostToDevice, xfer_), "upload");
    check(cudaStreamSynchronize(xfer_), "upload");
  }
  void download(uint64_t addr, uint64_t len) override {
    check(cudaMemcpyAsync(host_ + addr, mirror_ + addr, len, cudaMemcpyDeviceToHost, xfer_), "download");
    check(cudaStreamSynchronize(xfer_), "download");
  }
  void upload_on(uint32_t id, uint64_t addr, uint64_t len) override {
    check(cudaMemcpyAsync(mirror_ + addr, host_ + addr, len, cudaMemcpyHostToDevice, get(id).stream), "upload");
  }
  void download_on(uint32_t id, uint64_t addr, uint64_t len) override {
    check(cudaMemcpyAsync(host_ + addr, mirror_ + addr, len, cudaMemcpyDeviceToHost, get(id).stream), "download");
  }
  void host_remapped(uint64_t, uint64_t) override {
    // Pinned pages of the old mapping would be stale: pin the new ones.
    std::lock_guard l(mutex_);
    if (registered_) cudaHostUnregister(host_);
    registered_ = cudaHostRegister(host_, bytes_, cudaHostRegisterDefault) == cudaSuccess;
    cudaGetLastError();
    map_host();
  }

  bool register_host(std::byte* base, uint64_t bytes) override {
    const bool ok = cudaHostRegister(base, bytes, cudaHostRegisterDefault) == cudaSuccess;
    cudaGetLastError();  // unregistered memory still works (pageable copies)
    return ok;
  }
  void unregister_host(std::byte* base) override {
    cudaHostUnregister(base);
    cudaGetLastError();
  }
  void copy_host(uint32_t id, bool to_device, std::byte* dst, uint64_t dp, const std::byte* src, uint64_t sp,
                 uint64_t width, uint64_t height) override {
    const cudaMemcpyKind kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    if (height == 1 || (dp == width && sp == width)) {
      check(cudaMemcpyAsync(dst, src, width * height, kind, get(id).stream), "copy_host");
      return;
    }
    check(cudaMemcpy2DAsync(dst, dp, src, sp, width, height, kind, get(id).stream), "copy_host 2d");
  }

  std::byte* mirror(uint64_t phys) override { return mirror_ + phys; }
  std::byte* alloc(uint32_t id, uint64_t bytes) override {
    void* p = nullptr;
    if (cudaMallocAsync(&p, bytes, get(id).stream) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return static_cast<std::byte*>(p);
  }
  void free(uint32_t id, std::byte* p) override { check(cudaFreeAsync(p, get(id).stream), "free"); }
  void copy(uint32_t id, std::byte* dst, const std::byte* src, uint64_t bytes) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, get(id).stream), "copy");
  }
  void copy_2d(uint32_t id, std::byte* dst, uint64_t dp, const std::byte* src, uint64_t sp, uint64_t width,
               uint64_t height) override {
    if (height == 1 || (dp == width && sp == width)) {
      copy(id, dst, src, width * height);
      return;
    }
    check(cudaMemcpy2DAsync(dst, dp, src, sp, width, height, cudaMemcpyDeviceToDevice, get(id).stream), "copy_2d");
  }
  void fill(uint32_t id, float* dst, uint64_t n, float v) override {
    if (n) fill_kernel<<<blocks_for(n), THREADS, 0, get(id).stream>>>(dst, n, v);
  }
  void saxpy(uint32_t id, float a, const float* x, float* y, uint64_t n) override {
    if (n) saxpy_kernel<<<blocks_for(n), THREADS, 0, get(id).stream>>>(a, x, y, n);
  }
  void madd(uint32_t id, const float* a, const float* b, float* c, uint64_t n) override {
    if (n) madd_kernel<<<blocks_for(n), THREADS, 0, get(id).stream>>>(a, b, c, n);
  }
  void sgemm(uint32_t id, const SgemmShape& g, const float* a, const float* b, float* c) override {
    if (g.m == 0 || g.n == 0) return;
    StreamState& s = get(id);
    // Row-major C = A B is column-major C^T = B^T A^T.
    const int m = int(g.m), n = int(g.n), k = int(g.k);
    const cublasStatus_t st =
        cublasSgemm(blas(s), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &g.alpha, b, n, a, k > 0 ? k : 1, &g.beta, c, n);
    if (st != CUBLAS_STATUS_SUCCESS) fail("cublasSgemm status " + std::to_string(int(st)));
  }
  void conv2d(uint32_t id, const ConvShape& g, const float* in, const float* f, float* out) override {
    StreamState& s = get(id);
#if VGPU_HAVE_CUDNN
    if (conv_cudnn(s, g, in, f, out)) return;
#endif
    const uint64_t total = uint64_t{g.n} * g.k * g.p * g.q;
    conv2d_kernel<<<blocks_for(total), THREADS, 0, s.stream>>>(g, in, f, out);
  }
  void mriq(uint32_t id, uint32_t num_k, uint32_t num_x, const float* kx, const float* ky, const float* kz,
            const float* phi, const float* x, const float* y, const float* z, float* qr, float* qi) override {
    if (num_x == 0) return;
    mriq_kernel<<<unsigned((num_x + THREADS - 1) / THREADS), THREADS, 0, get(id).stream>>>(num_k, num_x, kx, ky, kz,
                                                                                          phi, x, y, z, qr, qi);
  }
  void spin(uint32_t id, uint64_t ns) override { spin_kernel<<<1, 1, 0, get(id).stream>>>(ns); }
  // With batched memory operations the word is held and queued in one call
  // with the completion word that synchronize queues after it (a stream
  // memory operation costs 0.9-1.3 us of host time on an H100; the fence
  // comes no later, as the engine synchronizes right after it). Any other
  // work queued on the stream first queues the word (get()).
  bool write_host_word(uint32_t id, uint64_t phys, uint32_t value) override {
    std::byte* host;
    {
      std::lock_guard l(mutex_);
      host = host_dev_;
    }
    if (host == nullptr) return false;
    StreamState& s = get(id);  // queues an earlier held word
    const auto word = reinterpret_cast<CUdeviceptr>(host + phys);
    if (batch_ != nullptr && s.done != nullptr) {
      s.held_word = word;
      s.held_value = value;
      s.holding = true;
      return true;
    }
    if (store_after(s.stream, word, value)) return true;
    host_word_kernel<<<1, 1, 0, s.stream>>>(reinterpret_cast<volatile uint32_t*>(host + phys), value);
    return true;
  }
  // The stream's work is done when its completion word, written by the
  // device after it, turns up: 2 us sooner than cudaStreamSynchronize
  // learns it on an H100, whose call alone costs 2.1 us when the work is
  // long done (docs/cuda.md, "Fences"). A failed stream never writes the
  // word; CUDA is asked about it every QUERY_PERIOD.
  bool synchronize(uint32_t id) override {
    StreamState& s = state(id);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) {
      if (s.done != nullptr) {
        e = await_completion(s);
      } else {
        release_held(s);
        e = cudaStreamSynchronize(s.stream);
      }
    }
    s.holding = false;
    if (e != cudaSuccess) fail(std::string("stream ") + std::to_string(id) + ": " + cudaGetErrorString(e));
    std::lock_guard l(mutex_);
    const bool ok = error_.empty();
    error_.clear();
    return ok;
  }

 private:
  void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) fail(std::string(what) + ": " + cudaGetErrorString(e));
  }
  void fail(const std::string& why) {
    std::lock_guard l(mutex_);
    if (error_.empty()) error_ = why;
  }

  // The device's address of the registered host VRAM (mutex_ held or
  // during init): none when it is not registered.
  void map_host() {
    void* p = nullptr;
    host_dev_ = registered_ && cudaHostGetDevicePointer(&p, host_, 0) == cudaSuccess ? static_cast<std::byte*>(p)
                                                                                     : nullptr;
    cudaGetLastError();
  }

  // The stream, made on first use; get() is for queuing work on it, and
  // queues a held fence word first so that it follows only earlier work.
  StreamState& get(uint32_t id) {
    StreamState& s = state(id);
    release_held(s);
    return s;
  }
  void release_held(StreamState& s) {
    if (!s.holding) return;
    s.holding = false;
    if (!store_after(s.stream, s.held_word, s.held_value)) fail("a fence word could not be queued");
  }

  StreamState& state(uint32_t id) {
    std::lock_guard l(mutex_);
    auto [it, fresh] = streams_.try_emplace(id);
    if (fresh) {
      StreamState& s = it->second;
      cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking);
      void* word = nullptr;
      void* dev = nullptr;
      if (write_value_ != nullptr && cudaHostAlloc(&word, sizeof(uint32_t), cudaHostAllocMapped) == cudaSuccess) {
        if (cudaHostGetDevicePointer(&dev, word, 0) == cudaSuccess) {
          s.done = static_cast<volatile uint32_t*>(word);
          *s.done = 0;
          s.done_dev = reinterpret_cast<CUdeviceptr>(dev);
        } else {
          cudaFreeHost(word);
        }
      }
      cudaGetLastError();  // without a word, synchronize is cudaStreamSynchronize
    }
    return it->second;
  }

  // A 4-byte store to `word` after the stream's earlier work, as a stream
  // memory operation (with its memory barrier). false: none queued.
  bool store_after(cudaStream_t stream, CUdeviceptr word, uint32_t value) {
    return write_value_ != nullptr && write_value_(reinterpret_cast<CUstream>(stream), word, value,
                                                   CU_STREAM_WRITE_VALUE_DEFAULT) == CUDA_SUCCESS;
  }

  // Queues the held fence word (if any) and then the completion word, in
  // one call where the driver batches memory operations.
  bool store_completion(StreamState& s, uint32_t seq) {
    if (s.holding && batch_ != nullptr) {
      CUstreamBatchMemOpParams ops[2]{};
      const CUdeviceptr words[2] = {s.held_word, s.done_dev};
      const uint32_t values[2] = {s.held_value, seq};
      for (int i = 0; i < 2; ++i) {
        ops[i].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
        ops[i].writeValue.address = words[i];
        ops[i].writeValue.value = values[i];
        ops[i].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
      }
      if (batch_(reinterpret_cast<CUstream>(s.stream), 2, ops, 0) == CUDA_SUCCESS) {
        s.holding = false;
        return true;
      }
    }
    release_held(s);
    return store_after(s.stream, s.done_dev, seq);
  }

  // Polls the completion word (relax_poll: CPU pauses at first on a host
  // with cores to spare, then yields).
  cudaError_t await_completion(StreamState& s) {
    const uint32_t seq = ++s.done_seq;
    if (!store_completion(s, seq)) return cudaStreamSynchronize(s.stream);
    const auto start = std::chrono::steady_clock::now();
    auto next_query = start + QUERY_PERIOD;
    while (*s.done != seq) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= next_query) {
        const cudaError_t q = cudaStreamQuery(s.stream);
        if (q != cudaErrorNotReady) return q;  // done (the word is on its way), or failed
        next_query = now + QUERY_PERIOD;
      }
      relax_poll(start, now);
    }
    return cudaSuccess;
  }

  // Library handles are made on a stream's first use of the library
  // (cuDNN's takes long: a channel that only fills should not pay it).
  cublasHandle_t blas(StreamState& s) {
    std::lock_guard l(mutex_);
    if (s.blas == nullptr) {
      cublasCreate(&s.blas);
      cublasSetStream(s.blas, s.stream);
      cublasSetMathMode(s.blas, CUBLAS_DEFAULT_MATH);  // fp32, no TF32
      // A fixed workspace per handle: cuBLAS picks the same kernels for the
      // same shape on every stream, so results are bitwise repeatable.
      if (cudaMalloc(&s.blas_workspace, BLAS_WORKSPACE) == cudaSuccess)
        cublasSetWorkspace(s.blas, s.blas_workspace, BLAS_WORKSPACE);
    }
    return s.blas;
  }
#if VGPU_HAVE_CUDNN
  cudnnHandle_t dnn(StreamState& s) {
    std::lock_guard l(mutex_);
    if (s.dnn == nullptr) {
      cudnnCreate(&s.dnn);
      cudnnSetStream(s.dnn, s.stream);
    }
    return s.dnn;
  }
#endif

#if VGPU_HAVE_CUDNN
  bool conv_cudnn(StreamState& s, const ConvShape& g, const float* in, const float* f, float* out) {
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnCreateTensorDescriptor(&xd);
    cudnnCreateTensorDescriptor(&yd);
    cudnnCreateFilterDescriptor(&wd);
    cudnnCreateConvolutionDescriptor(&cd);
    bool ok = cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, int(g.n), int(g.c), int(g.h),
                                         int(g.w)) == CUDNN_STATUS_SUCCESS &&
              cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, int(g.n), int(g.k), int(g.p),
                                         int(g.q)) == CUDNN_STATUS_SUCCESS &&
              cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, int(g.k), int(g.c), int(g.r),
                                         int(g.s)) == CUDNN_STATUS_SUCCESS &&
              cudnnSetConvolution2dDescriptor(cd, int(g.pad_h), int(g.pad_w), int(g.stride_h), int(g.stride_w), 1, 1,
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) == CUDNN_STATUS_SUCCESS &&
              cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH) == CUDNN_STATUS_SUCCESS;
    if (ok) {
      const auto key = std::make_tuple(g.n, g.c, g.h, g.w, g.k, g.r, g.s, g.pad_h, g.pad_w, g.stride_h, g.stride_w);
      cudnnConvolutionFwdAlgo_t algo{};
      size_t ws = 0;
      {
        std::lock_guard l(algo_mutex_);
        auto it = algos_.find(key);
        if (it == algos_.end()) {
          // The heuristic, not cudnnFind: the same shape gets the same
          // algorithm in every process, so results are bitwise repeatable.
          cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
          int found = 0;
          ok = cudnnGetConvolutionForwardAlgorithm_v7(dnn(s), xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found,
                                                      perf) == CUDNN_STATUS_SUCCESS;
          int pick = -1;
          for (int i = 0; ok && i < found && pick < 0; ++i)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType == CUDNN_FMA_MATH &&
                perf[i].determinism == CUDNN_DETERMINISTIC)
              pick = i;
          ok = ok && pick >= 0;
          if (ok)
            ok = cudnnGetConvolutionForwardWorkspaceSize(dnn(s), xd, wd, cd, yd, perf[pick].algo, &perf[pick].memory) ==
                 CUDNN_STATUS_SUCCESS;
          if (ok) it = algos_.emplace(key, std::make_pair(perf[pick].algo, perf[pick].memory)).first;
        }
        if (ok) std::tie(algo, ws) = it->second;
      }
      void* work = nullptr;
      if (ok && ws) ok = cudaMallocAsync(&work, ws, s.stream) == cudaSuccess;
      const float one = 1.f, zero = 0.f;
      ok = ok && cudnnConvolutionForward(dnn(s), &one, xd, in, wd, f, cd, algo, work, ws, &zero, yd, out) ==
                     CUDNN_STATUS_SUCCESS;
      if (work) cudaFreeAsync(work, s.stream);
    }
    cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(cd);
    cudaGetLastError();
    return ok;
  }
  std::mutex algo_mutex_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                      uint32_t, uint32_t>,
           std::pair<cudnnConvolutionFwdAlgo_t, size_t>>
      algos_;
#endif

  std::byte* host_;
  uint64_t bytes_;
  std::byte* mirror_ = nullptr;
  bool registered_ = false;
  std::byte* host_dev_ = nullptr;  // host_ as the device reaches it (map_host)
  PFN_cuStreamWriteValue32_v11070 write_value_ = nullptr;  // none: kernels write words, synchronize waits
  PFN_cuStreamBatchMemOp_v11070 batch_ = nullptr;          // none: one call per memory operation
  cudaStream_t xfer_ = nullptr;
  std::string name_;
  mutable std::mutex mutex_;
  std::map<uint32_t, StreamState> streams_;
  std::string error_;
};

}  // namespace

std::unique_ptr<Engine> Engine::create(std::byte* host_vram, uint64_t bytes, std::string* error) {
  auto e = std::make_unique<CudaEngine>(host_vram, bytes);
  if (!e->init(error)) return nullptr;
  return e;
}

}  // namespace vgpu::gpu::cuda
