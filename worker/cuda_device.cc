// SPDX-License-Identifier: GPL-2.0-or-later
// The worker's GPU (device.h) through libcuda.so.1: the VM's VRAM as
// 2 MiB cuMemCreate blocks (block k = handle k) mapped at the guest's VAs
// in the compute aperture, one stream per channel, fences written by the
// GPU into the shared region (cuStreamWriteValue32), user PTX through
// cuModuleLoadData after the %ctaid rewrite (docs/cuda-worker.md).
#include <algorithm>
#include <bitset>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>
#include "gpu/device/cuda_engine.h"
#include "gpu/kernels/kernels.h"
#include "worker/block_map.h"
#include "worker/builtin_ptx.h"
#include "worker/ctaid_rewrite.h"
#include "worker/cublas_api.h"
#include "worker/cuda_api.h"
#include "worker/cudnn_conv.h"
#include "worker/device.h"
#include "worker/module_globals.h"
#include "worker/spin_ptx.h"

namespace vgpu::worker {
namespace {

// cuBLAS's workspace per handle, fixed (what the in-process engine gives
// it, docs/cuda.md): the same kernels for the same shape every time.
constexpr size_t BLAS_WORKSPACE = size_t{32} << 20;
// The cuDNN library to open instead of cudnn::LIBRARIES; CUDNN_NONE: none
// (conv2d on the PTX kernel, as on a host without cuDNN).
constexpr const char* CUDNN_ENV = "VGPU_WORKER_CUDNN";
constexpr std::string_view CUDNN_NONE = "none";
// A grid-stride kernel's blocks for n elements (the in-process engine's).
constexpr uint64_t MAX_GRID_BLOCKS = 65535ull * 16;
unsigned blocks_for(uint64_t n) {
  const uint64_t b = (n + BUILTIN_THREADS - 1) / BUILTIN_THREADS;
  return static_cast<unsigned>(b == 0 ? 1 : std::min(b, MAX_GRID_BLOCKS));
}

struct LoadedModule {
  cu::Module module = nullptr;
  RewrittenModule text;
  std::vector<cu::Function> functions;
};

class CudaDevice final : public WorkerDevice {
 public:
  explicit CudaDevice(Region& r) : region_(r) {}

  Status init();
  std::string name() const override { return name_; }
  DeviceStatus map_block(uint64_t va, uint32_t block, bool writable) override;
  DeviceStatus unmap_block(uint64_t va) override;
  DeviceStatus fill32(uint32_t s, uint64_t va, uint32_t value, uint64_t words) override {
    return check("cuMemsetD32Async", api_.MemsetD32Async(va, value, words, stream(s)), s);
  }
  DeviceStatus copy(uint32_t s, uint64_t dst, uint64_t src, uint64_t bytes) override {
    return check("cuMemcpyDtoDAsync", api_.MemcpyDtoDAsync(dst, src, bytes, stream(s)), s);
  }
  DeviceStatus write(uint32_t s, uint64_t va, const std::byte* host, uint64_t bytes) override {
    return check("cuMemcpyHtoDAsync", api_.MemcpyHtoDAsync(va, host, bytes, stream(s)), s);
  }
  DeviceStatus read(uint32_t s, uint64_t va, std::byte* host, uint64_t bytes) override {
    return check("cuMemcpyDtoHAsync", api_.MemcpyDtoHAsync(host, va, bytes, stream(s)), s);
  }
  DeviceStatus spin(uint32_t s, uint64_t ns) override {
    void* params[] = {&ns};
    return check("cuLaunchKernel(spin)", api_.LaunchKernel(spin_, 1, 1, 1, 1, 1, 1, 0, stream(s), params, nullptr), s);
  }
  DeviceStatus load_module(uint32_t slot, const char* text, uint64_t bytes, uint64_t data_va) override;
  DeviceStatus launch(uint32_t s, const LaunchArgs& args, const std::byte* params) override;
  DeviceStatus kernel(uint32_t s, const KernelCall& call) override;
  DeviceStatus fence(uint32_t s, std::atomic<uint32_t>* word, uint32_t seq) override {
    cu::Ptr at = fence_dev_ + static_cast<cu::Ptr>(word - region_.fence) * sizeof(uint32_t);
    return check("cuStreamWriteValue32", api_.StreamWriteValue32(stream(s), at, seq, 0), s);
  }
  DeviceStatus poll_error() override;
  bool busy() override { return pending_.any(); }
  uint64_t phys_window() const override { return phys_window_; }

 private:
  cu::Stream stream(uint32_t s) {
    if (!streams_[s]) api_.StreamCreate(&streams_[s], cu::STREAM_NON_BLOCKING);
    return streams_[s];
  }
  DeviceStatus check(const char* call, cu::Result r, uint32_t s) {
    if (r != cu::SUCCESS) return std::unexpected(DeviceFault{static_cast<uint32_t>(r), 0, cu::describe(api_, call, r)});
    pending_.set(s);
    return {};
  }
  DeviceStatus sync_all();
  DeviceStatus run(uint32_t s, const char* what, cu::Function f, unsigned blocks, unsigned threads, void** params) {
    return check(what, api_.LaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, stream(s), params, nullptr), s);
  }
  DeviceStatus load_builtins();
  DeviceStatus sgemm(uint32_t s, const cls::SgemmArgs& g);
  Result<cublas::Handle> blas(uint32_t s);
  DeviceStatus conv2d(uint32_t s, cls::Conv2dArgs a);
  std::string open_cudnn();

  Region& region_;
  cu::Api api_{};
  cu::Device dev_ = 0;
  cu::Context ctx_ = nullptr;
  std::string name_;
  cu::Stream streams_[NUM_STREAMS] = {};
  std::bitset<NUM_STREAMS> pending_;
  std::map<uint32_t, cu::Handle> handles_;  // VRAM block -> its allocation
  cu::Ptr fence_dev_ = 0;
  cu::Ptr phys_window_ = 0;
  cu::Module spin_module_ = nullptr;
  cu::Function spin_ = nullptr;
  cu::Module builtins_ = nullptr;  // BUILTIN_PTX
  cu::Function saxpy_ = nullptr, madd_ = nullptr, mriq_ = nullptr, conv2d_ = nullptr;
  // cuBLAS, opened at the first sgemm; a handle per stream.
  bool blas_tried_ = false;
  Result<cublas::Api> blas_api_ = fail(Errc::not_found, "not loaded");
  cublas::Handle blas_[NUM_STREAMS] = {};
  // cuDNN, opened at start (its small front library; the rest loads at the
  // first conv2d's handle); absent or failed: conv2d on our PTX kernel.
  std::optional<cudnn::Api> dnn_api_;
  std::unique_ptr<cudnn::Convolver> conv_;
  bool dnn_failed_ = false;  // a failure was logged
  std::map<uint32_t, LoadedModule> modules_;
};

Status CudaDevice::init() {
  auto api = cu::load();
  if (!api) return std::unexpected(api.error());
  api_ = *api;
  auto need = [&](const char* call, cu::Result r) -> Status {
    if (r != cu::SUCCESS) return fail(Errc::device_error, cu::describe(api_, call, r));
    return {};
  };
  if (auto s = need("cuInit", api_.Init(0)); !s) return s;
  if (auto s = need("cuDeviceGet", api_.DeviceGet(&dev_, 0)); !s) return s;
  char name[96] = {};
  if (auto s = need("cuDeviceGetName", api_.DeviceGetName(name, sizeof name - 1, dev_)); !s) return s;
  name_ = std::string(name) + " (cuda worker; conv2d " + open_cudnn() + ")";
  if (auto s = need("cuDevicePrimaryCtxRetain", api_.DevicePrimaryCtxRetain(&ctx_, dev_)); !s) return s;
  if (auto s = need("cuCtxSetCurrent", api_.CtxSetCurrent(ctx_)); !s) return s;
  cu::Ptr got = 0;
  if (auto s = need("cuMemAddressReserve",
                    api_.MemAddressReserve(&got, APERTURE_END - APERTURE_BASE, BLOCK_BYTES, APERTURE_BASE, 0));
      !s)
    return s;
  if (got != APERTURE_BASE)
    return fail(Errc::device_error, "the driver did not reserve the compute aperture where asked");
  // The physical window wherever the driver puts it (PHYS_BASE is a hint
  // it did not honour on the H200: it gave PHYS_BASE + 64 MiB); commands
  // name it at PHYS_BASE and the loop moves them (phys_window()).
  if (auto s = need("cuMemAddressReserve(physical window)",
                    api_.MemAddressReserve(&phys_window_, PHYS_BYTES, BLOCK_BYTES, PHYS_BASE, 0));
      !s)
    return s;
  if (auto s = need("cuMemHostRegister(fences)",
                    api_.MemHostRegister(region_.fence, PAGE_BYTES, cu::HOST_REGISTER_DEVICEMAP));
      !s)
    return s;
  if (auto s = need("cuMemHostGetDevicePointer", api_.MemHostGetDevicePointer(&fence_dev_, region_.fence, 0)); !s)
    return s;
  if (auto s = need("cuMemHostRegister(bulk)", api_.MemHostRegister(region_.bulk, BULK_BYTES, 0)); !s) return s;
  if (auto s = need("cuModuleLoadData(spin)", api_.ModuleLoadData(&spin_module_, SPIN_PTX.c_str())); !s) return s;
  return need("cuModuleGetFunction(spin)", api_.ModuleGetFunction(&spin_, spin_module_, SPIN_ENTRY));
}

// The built-in kernels' module (BUILTIN_PTX), loaded at the first built-in
// so that a worker that runs none pays no JIT, and so that a driver that
// cannot load it (its PTX is ISA 9.0: CUDA 13's nvcc) fails the built-ins
// with the driver's reason, not the worker's start.
DeviceStatus CudaDevice::load_builtins() {
  if (builtins_ != nullptr) return {};
  auto refused = [&](const char* call, cu::Result r) {
    return std::unexpected(
        DeviceFault{static_cast<uint32_t>(r), 0,
                    "the built-in kernels' PTX (worker/builtin_kernels.ptx): " + cu::describe(api_, call, r)});
  };
  cu::Module m = nullptr;
  if (cu::Result r = api_.ModuleLoadData(&m, BUILTIN_PTX); r != cu::SUCCESS) return refused("cuModuleLoadData", r);
  const std::pair<cu::Function*, const char*> entries[] = {{&saxpy_, "vgpu_saxpy"},
                                                           {&madd_, "vgpu_madd"},
                                                           {&mriq_, "vgpu_mriq"},
                                                           {&conv2d_, "vgpu_conv2d"}};
  for (auto [fn, entry] : entries)
    if (cu::Result r = api_.ModuleGetFunction(fn, m, entry); r != cu::SUCCESS) {
      api_.ModuleUnload(m);
      return refused("cuModuleGetFunction", r);
    }
  builtins_ = m;
  return {};
}

// The built-ins as the in-process engine launches them (cuda_engine.cu):
// the same bodies (gpu/device/builtin_kernels.cuh), grids and cuBLAS call.
DeviceStatus CudaDevice::kernel(uint32_t s, const KernelCall& call) {
  if (call.kernel != cls::Kernel::sgemm && call.kernel != cls::Kernel::conv2d)
    if (auto st = load_builtins(); !st) return st;
  switch (call.kernel) {
    case cls::Kernel::saxpy: {
      auto a = kernel_args<cls::SaxpyArgs>(call.args);
      uint64_t n = a.n;
      void* p[] = {&a.a, &a.x, &a.y, &n};
      return n == 0 ? DeviceStatus{} : run(s, "cuLaunchKernel(saxpy)", saxpy_, blocks_for(n), BUILTIN_THREADS, p);
    }
    case cls::Kernel::madd: {
      auto a = kernel_args<cls::MaddArgs>(call.args);
      uint64_t n = uint64_t{a.rows} * a.cols;
      void* p[] = {&a.a, &a.b, &a.c, &n};
      return n == 0 ? DeviceStatus{} : run(s, "cuLaunchKernel(madd)", madd_, blocks_for(n), BUILTIN_THREADS, p);
    }
    case cls::Kernel::sgemm: return sgemm(s, kernel_args<cls::SgemmArgs>(call.args));
    case cls::Kernel::conv2d: return conv2d(s, kernel_args<cls::Conv2dArgs>(call.args));
    case cls::Kernel::mriq: {
      auto a = kernel_args<cls::MriqArgs>(call.args);
      void* p[] = {&a.num_k, &a.num_x, &a.kx, &a.ky, &a.kz, &a.phi_mag, &a.x, &a.y, &a.z, &a.qr, &a.qi};
      const auto blocks = static_cast<unsigned>((uint64_t{a.num_x} + MRIQ_THREADS - 1) / MRIQ_THREADS);
      return a.num_x == 0 ? DeviceStatus{} : run(s, "cuLaunchKernel(mriq)", mriq_, blocks, MRIQ_THREADS, p);
    }
    default: return std::unexpected(DeviceFault{0, 0, "not a built-in of the worker"});
  }
}

// cuDNN's front library (libcudnn.so.9, or the file VGPU_WORKER_CUDNN
// names; "none": no cuDNN) and its version, or why conv2d will run on the
// worker's PTX kernel (said once on stderr, where the mediator's log gets
// it). What conv2d runs on, for the worker's name.
std::string CudaDevice::open_cudnn() {
  const char* chosen = getenv(CUDNN_ENV);
  const std::string_view asked = chosen ? chosen : "";
  Result<cudnn::Api> api = fail(Errc::not_found, std::string(CUDNN_ENV) + "=" + std::string(CUDNN_NONE));
  if (asked != CUDNN_NONE)
    api = asked.empty() ? cudnn::load() : cudnn::load(std::vector<std::string>{std::string(asked)});
  if (!api) {
    fprintf(stderr, "vgpu-worker: conv2d runs on the worker's own PTX kernel: %s\n", api.error().what().c_str());
    return "PTX, no cuDNN";
  }
  dnn_api_ = *api;
  conv_ = std::make_unique<cudnn::Convolver>(*dnn_api_, api_);
  return cudnn::version_text(dnn_api_->GetVersion());
}

// conv2d as the in-process engine runs it: cuDNN where the worker has it,
// else (or where cuDNN fails the call: the first reason goes to stderr)
// the direct kernel (builtin_kernels.cu).
DeviceStatus CudaDevice::conv2d(uint32_t s, cls::Conv2dArgs a) {
  gpu::cuda::ConvShape g{a.n,
                         a.c,
                         a.h,
                         a.w,
                         a.k,
                         a.r,
                         a.s,
                         a.pad_h,
                         a.pad_w,
                         a.stride_h,
                         a.stride_w,
                         gpu::kernels::conv2d_out_h(a),
                         gpu::kernels::conv2d_out_w(a)};
  const uint64_t total = uint64_t{g.n} * g.k * g.p * g.q;
  if (total == 0) return {};
  if (conv_) {
    Status st = conv_->run(s, stream(s), g, a.input, a.filter, a.output);
    if (st) {
      pending_.set(s);
      return {};
    }
    if (!dnn_failed_)
      fprintf(stderr, "vgpu-worker: cuDNN failed a conv2d, the PTX kernel runs it (said once): %s\n",
              st.error().what().c_str());
    dnn_failed_ = true;
  }
  if (auto st = load_builtins(); !st) return st;
  void* p[] = {&g, &a.input, &a.filter, &a.output};
  return run(s, "cuLaunchKernel(conv2d)", conv2d_, blocks_for(total), BUILTIN_THREADS, p);
}

// The stream's cuBLAS handle (fp32 math, a fixed workspace), made at its
// first sgemm; cuBLAS itself is opened at the worker's first.
Result<cublas::Handle> CudaDevice::blas(uint32_t s) {
  if (!blas_tried_) {
    blas_tried_ = true;
    blas_api_ = cublas::load();
  }
  if (!blas_api_) return std::unexpected(blas_api_.error());
  if (blas_[s] != nullptr) return blas_[s];
  const cublas::Api& b = *blas_api_;
  cublas::Handle h = nullptr;
  if (cublas::Status st = b.Create(&h); st != cublas::SUCCESS)
    return fail(Errc::device_error, "cublasCreate (" + b.library + "): status " + std::to_string(st));
  cu::Ptr work = 0;
  if (api_.MemAlloc(&work, BLAS_WORKSPACE) != cu::SUCCESS ||
      b.SetWorkspace(h, reinterpret_cast<void*>(work), BLAS_WORKSPACE) != cublas::SUCCESS ||
      b.SetStream(h, stream(s)) != cublas::SUCCESS || b.SetMathMode(h, cublas::DEFAULT_MATH) != cublas::SUCCESS) {
    b.Destroy(h);
    return fail(Errc::device_error, "cuBLAS handle setup (workspace, stream, math mode) failed");
  }
  blas_[s] = h;
  return h;
}

// Row-major C = A B is column-major C^T = B^T A^T (the engine's call).
DeviceStatus CudaDevice::sgemm(uint32_t s, const cls::SgemmArgs& g) {
  if (g.m == 0 || g.n == 0) return {};
  auto h = blas(s);
  if (!h) return std::unexpected(DeviceFault{0, 0, h.error().message});
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const auto* a = reinterpret_cast<const float*>(g.a);
  const auto* b = reinterpret_cast<const float*>(g.b);
  auto* c = reinterpret_cast<float*>(g.c);
  const cublas::Status st = blas_api_->Sgemm(*h, cublas::OP_N, cublas::OP_N, n, m, k, &g.alpha, b, n, a, k > 0 ? k : 1,
                                             &g.beta, c, n);
  if (st != cublas::SUCCESS) return std::unexpected(DeviceFault{0, 0, "cublasSgemm: status " + std::to_string(st)});
  pending_.set(s);
  return {};
}

DeviceStatus CudaDevice::sync_all() {
  for (uint32_t s = 0; s < NUM_STREAMS; s++) {
    if (!pending_.test(s)) continue;
    cu::Result r = api_.StreamSynchronize(streams_[s]);
    if (r != cu::SUCCESS)
      return std::unexpected(DeviceFault{static_cast<uint32_t>(r), 0, cu::describe(api_, "cuStreamSynchronize", r)});
    pending_.reset(s);
  }
  return {};
}

DeviceStatus CudaDevice::map_block(uint64_t va, uint32_t block, bool writable) {
  auto fault = [&](const char* call, cu::Result r) {
    return std::unexpected(DeviceFault{static_cast<uint32_t>(r), va, cu::describe(api_, call, r)});
  };
  bool fresh = !handles_.count(block);
  if (fresh) {
    cu::AllocationProp prop{};
    prop.type = cu::ALLOCATION_PINNED;
    prop.location = {cu::LOCATION_DEVICE, dev_};
    cu::Handle h = 0;
    if (cu::Result r = api_.MemCreate(&h, BLOCK_BYTES, &prop, 0); r != cu::SUCCESS) return fault("cuMemCreate", r);
    handles_[block] = h;
  }
  if (cu::Result r = api_.MemMap(va, BLOCK_BYTES, 0, handles_[block], 0); r != cu::SUCCESS) return fault("cuMemMap", r);
  cu::AccessDesc d{{cu::LOCATION_DEVICE, dev_}, writable ? cu::ACCESS_READWRITE : cu::ACCESS_READ};
  if (cu::Result r = api_.MemSetAccess(va, BLOCK_BYTES, &d, 1); r != cu::SUCCESS) return fault("cuMemSetAccess", r);
  // New VRAM reads as zeros, as the model's memfd does.
  if (fresh && writable) return fill32(0, va, 0, BLOCK_BYTES / sizeof(uint32_t));
  return {};
}

DeviceStatus CudaDevice::unmap_block(uint64_t va) {
  if (auto s = sync_all(); !s) return s;  // no work may use a range being unmapped
  cu::Result r = api_.MemUnmap(va, BLOCK_BYTES);
  if (r != cu::SUCCESS)
    return std::unexpected(DeviceFault{static_cast<uint32_t>(r), va, cu::describe(api_, "cuMemUnmap", r)});
  return {};
}

DeviceStatus CudaDevice::load_module(uint32_t slot, const char* text, uint64_t bytes, uint64_t data_va) {
  std::string why;
  auto placed = module_for_device(std::string_view(text, strnlen(text, bytes)), data_va, why);
  if (!placed) return std::unexpected(DeviceFault{0, 0, why, true});
  LoadedModule m;
  m.text = rewrite_ctaid(*placed);
  // A module the driver refuses leaves the context as it was: refused, not
  // a device error, unless the context itself failed (a sticky error of
  // earlier work, which the synchronize finds).
  auto refused = [&](const char* call, cu::Result r) -> DeviceStatus {
    if (m.module != nullptr) api_.ModuleUnload(m.module);
    if (auto s = sync_all(); !s) return s;
    return std::unexpected(DeviceFault{static_cast<uint32_t>(r), 0, cu::describe(api_, call, r), true});
  };
  cu::Result r = api_.ModuleLoadData(&m.module, m.text.text.c_str());
  if (r != cu::SUCCESS) {
    m.module = nullptr;
    return refused("cuModuleLoadData", r);
  }
  for (const std::string& e : m.text.entries) {
    cu::Function f = nullptr;
    r = api_.ModuleGetFunction(&f, m.module, e.c_str());
    if (r != cu::SUCCESS) return refused("cuModuleGetFunction", r);
    m.functions.push_back(f);
  }
  if (auto old = modules_.find(slot); old != modules_.end()) {
    if (auto s = sync_all(); !s) return s;
    api_.ModuleUnload(old->second.module);
  }
  modules_[slot] = std::move(m);
  return {};
}

DeviceStatus CudaDevice::launch(uint32_t s, const LaunchArgs& a, const std::byte* params) {
  auto it = modules_.find(a.slot);
  if (it == modules_.end() || a.entry >= it->second.functions.size())
    return std::unexpected(DeviceFault{0, 0, "launch of an empty slot or a missing entry"});
  const LoadedModule& m = it->second;
  std::vector<std::byte> buf(params, params + a.param_bytes);
  uint32_t at = slice_params_offset(a.param_bytes);
  if (m.text.sliceable) buf.resize(at + SLICE_PARAM_WORDS * sizeof(uint32_t));
  size_t size = buf.size();
  void* extra[] = {cu::LAUNCH_PARAM_BUFFER_POINTER, buf.data(), cu::LAUNCH_PARAM_BUFFER_SIZE, &size,
                   cu::LAUNCH_PARAM_END};
  std::vector<GridPiece> pieces = grid_pieces(a.grid, m.text.sliceable ? a.piece_blocks : 0);
  for (const GridPiece& p : pieces) {
    if (m.text.sliceable) {
      uint32_t words[SLICE_PARAM_WORDS] = {p.offset[0], p.offset[1], p.offset[2], a.grid[0], a.grid[1], a.grid[2]};
      memcpy(buf.data() + at, words, sizeof words);
    }
    cu::Result r = api_.LaunchKernel(m.functions[a.entry], p.grid[0], p.grid[1], p.grid[2], a.block[0], a.block[1],
                                     a.block[2], a.shared_bytes, stream(s), nullptr, extra);
    if (auto st = check("cuLaunchKernel", r, s); !st) return st;
  }
  return {};
}

DeviceStatus CudaDevice::poll_error() {
  for (uint32_t s = 0; s < NUM_STREAMS; s++) {
    if (!pending_.test(s)) continue;
    cu::Result r = api_.StreamQuery(streams_[s]);
    if (r == cu::SUCCESS)
      pending_.reset(s);
    else if (r != cu::NOT_READY)
      return std::unexpected(DeviceFault{static_cast<uint32_t>(r), 0, cu::describe(api_, "cuStreamQuery", r)});
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<WorkerDevice>> make_cuda_device(Region& region) {
  auto d = std::make_unique<CudaDevice>(region);
  if (auto s = d->init(); !s) return std::unexpected(s.error());
  return std::unique_ptr<WorkerDevice>(std::move(d));
}

}  // namespace vgpu::worker
