// SPDX-License-Identifier: GPL-2.0-or-later
// Modules and launches (docs/cuda-programs.md, "Modules"): the guest
// parses the PTX itself (ptx::parse_module, the parser the device runs) to
// learn each entry's parameter layout and the variables' offsets, then has
// the device load the text into a slot of the context's channel.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cuda/libcuda/errors.h"
#include "cuda/libcuda/module_image.h"
#include "cuda/libcuda/params.h"
#include "cuda/libcuda/state.h"

using vgpu::cuda::api_lock;
using vgpu::cuda::CuResult;
using vgpu::cuda::State;
namespace cls = vgpu::cls;
namespace driver = vgpu::driver;
namespace ptx = vgpu::ptx;

namespace {

// cuModuleLoadDataEx's log options: where the error and info logs go.
struct JitLogs {
  char* error = nullptr;
  size_t error_size = 0;
  int error_size_index = -1;
  char* info = nullptr;
  size_t info_size = 0;
  int info_size_index = -1;
};

JitLogs read_options(unsigned n, const CUjit_option* options, void** values) {
  JitLogs logs;
  for (unsigned i = 0; options != nullptr && values != nullptr && i < n; ++i) {
    auto as_size = reinterpret_cast<uintptr_t>(values[i]);
    switch (options[i]) {
      case CU_JIT_ERROR_LOG_BUFFER: logs.error = static_cast<char*>(values[i]); break;
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
        logs.error_size = as_size;
        logs.error_size_index = static_cast<int>(i);
        break;
      case CU_JIT_INFO_LOG_BUFFER: logs.info = static_cast<char*>(values[i]); break;
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
        logs.info_size = as_size;
        logs.info_size_index = static_cast<int>(i);
        break;
      default: break;  // optimisation and target hints: the device has no JIT to tune
    }
  }
  return logs;
}

// Writes text (NUL-terminated, cut to fit) and the bytes written back into the size option, as CUDA does.
void write_log(char* buf, size_t size, int size_index, void** values, const std::string& text) {
  if (buf == nullptr || size == 0) return;
  size_t n = std::min(text.size(), size - 1);
  std::memcpy(buf, text.data(), n);
  buf[n] = '\0';
  if (size_index >= 0) values[size_index] = reinterpret_cast<void*>(static_cast<uintptr_t>(n + 1));
}

CUresult refuse(CUctx_st* ctx, CUresult r, const std::string& why, const JitLogs& logs, void** values) {
  ctx->report = why;
  write_log(logs.error, logs.error_size, logs.error_size_index, values, why);
  return r;
}

// The device's load: the report's status when it refused the module.
CuResult<driver::LoadedModule> device_load(CUctx_st* ctx, std::string_view text, uint64_t data_bytes,
                                           std::string& why) {
  auto loaded = ctx->drv->load_module(text, data_bytes);
  if (loaded) return *loaded;
  why = loaded.error().what();
  auto report = ctx->drv->module_report();
  if (loaded.error().code == vgpu::Errc::invalid_argument && report && report->status != cls::PtxStatus::ok) {
    why = report->message;
    if (report->line != 0) why = "line " + std::to_string(report->line) + ": " + why;
    return std::unexpected(vgpu::cuda::load_result(report->status, vgpu::cuda::has_version_directive(text)));
  }
  if (loaded.error().code == vgpu::Errc::device_error)
    return std::unexpected(vgpu::cuda::work_error(ctx, loaded.error()));
  return std::unexpected(vgpu::cuda::result_of(loaded.error()));
}

CUresult check_geometry(const ptx::EntryInfo& e, const driver::LaunchShape& s, unsigned shared) {
  const auto& g = s.grid;
  const auto& b = s.block;
  if (g.x == 0 || g.y == 0 || g.z == 0 || b.x == 0 || b.y == 0 || b.z == 0) return CUDA_ERROR_INVALID_VALUE;
  if (g.x > cls::compute::MAX_GRID_DIM || g.y > cls::compute::MAX_GRID_DIM || g.z > cls::compute::MAX_GRID_DIM)
    return CUDA_ERROR_INVALID_VALUE;
  if (b.x > 1024 || b.y > 1024 || b.z > 64) return CUDA_ERROR_INVALID_VALUE;
  uint64_t threads = uint64_t{b.x} * b.y * b.z;
  if (threads > cls::compute::MAX_THREADS_PER_BLOCK) return CUDA_ERROR_INVALID_VALUE;
  if (e.max_threads != 0 && threads > e.max_threads) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  if (uint64_t{shared} + e.static_shared_bytes > cls::compute::MAX_SHARED_BYTES) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

int ptx_version(std::string_view v) {  // "7.0" -> 70
  int major = 0, minor = 0;
  std::sscanf(std::string(v).c_str(), "%d.%d", &major, &minor);
  return major * 10 + minor;
}

}  // namespace

extern "C" {

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions, CUjit_option* options,
                            void** optionValues) {
  auto lock = api_lock();
  if (module == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto c = State::get().current();
  if (!c) return c.error();
  CUctx_st* ctx = *c;
  JitLogs logs = read_options(numOptions, options, optionValues);
  auto img = vgpu::cuda::check_image(image, cls::compute::MAX_MODULE_BYTES);
  if (img.result != CUDA_SUCCESS) {
    // A program built for the runtime passes no log: say why where it is seen.
    if (img.fat_binary) std::fprintf(stderr, "libcuda (vgpu): cuModuleLoadData: %s\n", img.message.c_str());
    return refuse(ctx, img.result, img.message, logs, optionValues);
  }
  auto parsed = ptx::parse_module(img.text);
  if (!parsed) {
    const auto& e = parsed.error();
    std::string why = (e.line ? "line " + std::to_string(e.line) + ": " : std::string()) + e.message;
    return refuse(ctx, vgpu::cuda::load_result(e.status, vgpu::cuda::has_version_directive(img.text)), why, logs,
                  optionValues);
  }
  std::string why;
  auto loaded = device_load(ctx, img.text, (*parsed)->data_bytes(), why);
  if (!loaded) return refuse(ctx, loaded.error(), why, logs, optionValues);
  auto m = std::make_unique<CUmod_st>(CUmod_st{ctx, *parsed, *loaded, {}});
  m->functions.resize(m->ptx->entries().size());
  write_log(logs.info, logs.info_size, logs.info_size_index, optionValues,
            "vgpu: loaded " + std::to_string(m->ptx->entries().size()) + " entries, " +
                std::to_string(m->ptx->data_bytes()) + " data bytes");
  if (m->loaded.data.id != 0)  // cuModuleGetGlobal's pointers are copy targets
    ctx->allocs[m->loaded.data_va] = {m->loaded.data, m->ptx->data_bytes(), true};
  *module = m.get();
  ctx->modules.emplace(m.get(), std::move(m));
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return cuModuleLoadDataEx(module, image, 0, nullptr, nullptr);
}

// A fat binary (or PTX text: CUDA's driver takes either here too).
CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  return cuModuleLoadDataEx(module, fatCubin, 0, nullptr, nullptr);
}

CUresult cuModuleUnload(CUmodule hmod) {
  auto lock = api_lock();
  if (CUresult r = State::get().ready(); r != CUDA_SUCCESS) return r;
  CUmod_st* m = State::get().find(hmod);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  CUctx_st* ctx = m->ctx;
  if (ctx->sticky == CUDA_SUCCESS) {
    (void)vgpu::cuda::synchronize(ctx);  // launches of it may still run
    (void)ctx->drv->unload_module(m->loaded);
  }
  if (m->loaded.data.id != 0) ctx->allocs.erase(m->loaded.data_va);
  ctx->modules.erase(m);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  auto lock = api_lock();
  if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = State::get().ready(); r != CUDA_SUCCESS) return r;
  CUmod_st* m = State::get().find(hmod);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  int index = m->ptx->find_entry(name);
  if (index < 0) return CUDA_ERROR_NOT_FOUND;
  auto& f = m->functions[static_cast<size_t>(index)];
  if (!f) f = std::make_unique<CUfunc_st>(CUfunc_st{m, static_cast<uint32_t>(index)});
  *hfunc = f.get();
  return CUDA_SUCCESS;
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name) {
  auto lock = api_lock();
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = State::get().ready(); r != CUDA_SUCCESS) return r;
  CUmod_st* m = State::get().find(hmod);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const ptx::Variable* v = m->ptx->find_variable(name);
  if (v == nullptr || v->space == ptx::Space::shared) return CUDA_ERROR_NOT_FOUND;
  if (dptr != nullptr) *dptr = m->loaded.data_va + v->offset;
  if (bytes != nullptr) *bytes = v->size;
  return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  auto lock = api_lock();
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = State::get().ready(); r != CUDA_SUCCESS) return r;
  CUfunc_st* f = State::get().find(hfunc);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const ptx::EntryInfo& e = f->module->ptx->entries()[f->entry];
  const auto max_shared = static_cast<int>(cls::compute::MAX_SHARED_BYTES);
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *pi = e.max_threads != 0 ? static_cast<int>(e.max_threads) : 1024;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = static_cast<int>(e.static_shared_bytes); return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *pi = max_shared - static_cast<int>(e.static_shared_bytes);
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = ptx_version(f->module->ptx->version()); return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:  // the module's .const lives in its data segment
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:  // the interpreter sizes .local per function itself
    case CU_FUNC_ATTRIBUTE_NUM_REGS:          // PTX registers are virtual: no allocation to report
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *pi = 0; return CUDA_SUCCESS;
    default:
      vgpu::cuda::note_unsupported("cuFuncGetAttribute", "attributes other than threads, shared sizes and versions");
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  auto lock = api_lock();
  if (CUresult r = State::get().ready(); r != CUDA_SUCCESS) return r;
  CUfunc_st* fn = State::get().find(f);
  if (fn == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  CUctx_st* ctx = fn->module->ctx;
  if (ctx->sticky != CUDA_SUCCESS) return ctx->sticky;
  if (hStream != nullptr) {
    auto sc = vgpu::cuda::stream_context(hStream);
    if (!sc) return sc.error();
    if (*sc != ctx) return CUDA_ERROR_INVALID_HANDLE;
  }
  const ptx::EntryInfo& e = fn->module->ptx->entries()[fn->entry];
  driver::LaunchShape shape{{gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ}};
  if (CUresult r = check_geometry(e, shape, sharedMemBytes); r != CUDA_SUCCESS) return r;
  auto params = vgpu::cuda::pack_params(e, kernelParams, extra);
  if (!params) return params.error();
  auto fence = ctx->drv->launch_module(driver::ModuleLaunch{fn->module->loaded.slot, fn->entry, shape, sharedMemBytes,
                                                            std::span<const std::byte>(*params)});
  if (!fence) return vgpu::cuda::work_error(ctx, fence.error());
  ctx->last = *fence;
  return CUDA_SUCCESS;
}

}  // extern "C"
