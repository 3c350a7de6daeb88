// SPDX-License-Identifier: GPL-2.0-or-later
// libcuda's objects (docs/cuda-programs.md): the handles a program holds
// are these structs (CUcontext is CUctx_st*, ...), each registered in the
// process-wide State so that a stale or foreign handle is an error code,
// never a crash. One recursive mutex serialises every call (the driver's
// Device and Context are not thread-safe). Every stream of a context maps
// to the context's one channel, in submission order.
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cuda/include/cuda.h"
#include "cuda/libcuda/device_port.h"
#include "driver/runtime.h"
#include "ptx/module.h"

struct CUmod_st;
struct CUfunc_st {
  CUmod_st* module;
  uint32_t entry;  // index in the module's entries()
};

struct CUmod_st {
  CUctx_st* ctx;
  std::shared_ptr<const vgpu::ptx::Module> ptx;
  vgpu::driver::LoadedModule loaded;
  std::vector<std::unique_ptr<CUfunc_st>> functions;  // one per entry, made on first cuModuleGetFunction
};

struct CUstream_st {
  CUctx_st* ctx;
  unsigned flags;
};

struct CUevent_st {
  CUctx_st* ctx;
  unsigned flags;
  bool recorded = false;
  std::optional<vgpu::driver::Fence> fence;  // the work it follows, if any was pending
  std::optional<uint64_t> stamp_ns;          // PTIMER when the library saw that work done
};

struct CUctx_st {
  struct Alloc {
    vgpu::driver::Buffer buffer;
    uint64_t bytes;
    bool module_data = false;  // a module's data segment: copies reach it, cuMemFree does not
  };
  CUdevice device = 0;
  unsigned flags = 0;
  bool primary = false;
  std::unique_ptr<vgpu::driver::Context> drv;
  std::map<uint64_t, Alloc> allocs;          // device memory by GPU VA
  std::map<const void*, Alloc> host_allocs;  // cuMemAllocHost memory by host address
  std::map<CUmod_st*, std::unique_ptr<CUmod_st>> modules;
  std::map<CUstream_st*, std::unique_ptr<CUstream_st>> streams;
  std::map<CUevent_st*, std::unique_ptr<CUevent_st>> events;
  std::optional<vgpu::driver::Fence> last;  // the last work submitted (launch, copy, memset)
  CUresult sticky = CUDA_SUCCESS;           // a launch error that ended the channel
  std::string report;                       // the device's last message (load or launch)
};

namespace vgpu::cuda {

template <typename T>
using CuResult = std::expected<T, CUresult>;

inline constexpr CUdevice DEVICE_ORDINAL = 0;  // vgpu gives a guest one device

class State {
 public:
  static State& get();
  std::recursive_mutex& mutex() { return mu_; }

  CUresult init();  // cuInit: opens the device once; later calls return the first result
  // CUDA_SUCCESS once init succeeded; else NOT_INITIALIZED (or DEINITIALIZED at exit).
  CUresult ready() const;
  driver::Device& device() { return opened_->device(); }
  const OpenedDevice& opened() const { return *opened_; }

  CuResult<CUctx_st*> create_context(CUdevice dev, unsigned flags, bool primary);
  void destroy_context(CUctx_st* ctx);
  // cuDevicePrimaryCtxReset: the same handle, a fresh driver context.
  CUresult reset_context(CUctx_st* ctx);
  bool live(CUctx_st* ctx) const { return contexts_.contains(ctx); }
  CUctx_st* primary() { return primary_; }
  unsigned primary_refs = 0;
  unsigned primary_flags = 0;

  // The calling thread's context stack (the current context is its top).
  static std::vector<CUctx_st*>& stack();
  // The current context, if live and (unless allow_sticky) without a sticky error.
  CuResult<CUctx_st*> current(bool allow_sticky = false);

  // Handle lookups across all contexts; null when not live.
  CUstream_st* find(CUstream s);
  CUevent_st* find(CUevent e);
  CUmod_st* find(CUmodule m);
  CUfunc_st* find(CUfunction f);

  ~State();

 private:
  State() = default;
  std::recursive_mutex mu_;
  std::optional<CUresult> init_result_;
  bool exiting_ = false;
  std::unique_ptr<OpenedDevice> opened_;
  std::map<CUctx_st*, std::unique_ptr<CUctx_st>> contexts_;
  CUctx_st* primary_ = nullptr;
};

// Takes the library's lock for one call.
inline std::unique_lock<std::recursive_mutex> api_lock() { return std::unique_lock(State::get().mutex()); }

// A stream handle of ctx: null (the default stream), CU_STREAM_LEGACY,
// CU_STREAM_PER_THREAD or one of ctx's streams (all in order on one channel).
CuResult<CUctx_st*> stream_context(CUstream s);

// The CUresult of a driver error on ctx's work. A channel error
// (device_error) is the device's report of the failed launch
// (driver::Context::module_report) and sticks to the context, as CUDA's
// launch errors do; the report's message goes to stderr and ctx->report.
CUresult work_error(CUctx_st* ctx, const Error& e);
// Waits for all of ctx's work (or for one fence).
CUresult synchronize(CUctx_st* ctx);
CUresult wait(CUctx_st* ctx, driver::Fence f);
// Whether f is done: CUDA_SUCCESS, CUDA_ERROR_NOT_READY or ctx's error.
CUresult query(CUctx_st* ctx, driver::Fence f);

// Prints once per call name to stderr that `call` is not supported (what).
void note_unsupported(const char* call, const char* what);

}  // namespace vgpu::cuda
