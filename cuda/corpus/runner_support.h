// SPDX-License-Identifier: GPL-2.0-or-later
// runner_support.h: the runner's thin layer over the Driver API: a checked
// call, a device buffer, a module read from a PTX file, a synchronous launch
// and exact comparisons. Failures throw corpus::Failure with the reason that
// the runner prints after FAIL.
#ifndef VGPU_CUDA_CORPUS_RUNNER_SUPPORT_H
#define VGPU_CUDA_CORPUS_RUNNER_SUPPORT_H

#include <cuda.h>

#include <cstddef>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace corpus {

// A failed check: the kernel's FAIL reason.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void Check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  throw Failure(std::string(what) + " returned CUresult " + std::to_string(static_cast<int>(r)));
}

// One cuMemAlloc, freed on scope exit.
class Buffer {
 public:
  explicit Buffer(std::size_t bytes) { Check(cuMemAlloc(&ptr_, bytes), "cuMemAlloc"); }
  template <typename T>
  explicit Buffer(const std::vector<T>& host) : Buffer(host.size() * sizeof(T)) {
    Upload(host);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { (void)cuMemFree(ptr_); }

  template <typename T>
  void Upload(const std::vector<T>& host) {
    Check(cuMemcpyHtoD(ptr_, host.data(), host.size() * sizeof(T)), "cuMemcpyHtoD");
  }
  template <typename T>
  std::vector<T> Download(std::size_t count) const {
    std::vector<T> host(count);
    Check(cuMemcpyDtoH(host.data(), ptr_, count * sizeof(T)), "cuMemcpyDtoH");
    return host;
  }
  [[nodiscard]] CUdeviceptr Ptr() const { return ptr_; }
  // The parameter cuLaunchKernel reads: the address of the device pointer.
  [[nodiscard]] void* Arg() { return &ptr_; }

 private:
  CUdeviceptr ptr_ = 0;
};

// One module: PTX_DIR/NAME.SUFFIX.ptx, unloaded on scope exit.
class Module {
 public:
  Module(const std::string& dir, const std::string& name, const std::string& suffix) {
    std::string path = dir + "/" + name + "." + suffix + ".ptx";
    std::ifstream file(path, std::ios::binary);
    if (!file) throw Failure("cannot read " + path);
    std::string ptx((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    Check(cuModuleLoadData(&module_, ptx.c_str()), "cuModuleLoadData");
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module() { (void)cuModuleUnload(module_); }

  [[nodiscard]] CUfunction Function(const char* name) const {
    CUfunction f = nullptr;
    Check(cuModuleGetFunction(&f, module_, name), name);
    return f;
  }
  [[nodiscard]] std::pair<CUdeviceptr, std::size_t> Global(const char* name) const {
    CUdeviceptr ptr = 0;
    std::size_t bytes = 0;
    Check(cuModuleGetGlobal(&ptr, &bytes, module_, name), name);
    return {ptr, bytes};
  }

 private:
  CUmodule module_ = nullptr;
};

struct Dim {
  unsigned x = 1, y = 1, z = 1;
};

inline void Launch(CUfunction f, Dim grid, Dim block, std::vector<void*> args) {
  Check(cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, 0, nullptr, args.data(), nullptr),
        "cuLaunchKernel");
  Check(cuCtxSynchronize(), "cuCtxSynchronize");
}

inline unsigned Blocks(int n, int per) { return static_cast<unsigned>((n + per - 1) / per); }

// Exact comparison; the reason names the first differing index.
template <typename T>
void ExpectEqual(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
  if (got.size() != want.size()) throw Failure(std::string(what) + ": size differs");
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    std::ostringstream s;
    s << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
    throw Failure(s.str());
  }
}

template <typename T>
void ExpectValue(T got, T want, const char* what) {
  ExpectEqual(std::vector<T>{got}, std::vector<T>{want}, what);
}

// Everything a kernel's check needs: where the modules are.
struct Context {
  std::string dir;
  std::string suffix;
  [[nodiscard]] Module Load(const char* name) const { return Module(dir, name, suffix); }
};

// The checks, one per kernel (checks_compute.cc, checks_memory.cc); each
// returns normally on PASS and throws Failure otherwise.
void RunVectorAdd(const Context& ctx);
void RunSaxpy(const Context& ctx);
void RunMatmul(const Context& ctx);
void RunReduce(const Context& ctx);
void RunScan(const Context& ctx);
void RunHistogram(const Context& ctx);
void RunBitonic(const Context& ctx);
void RunStencil(const Context& ctx);
void RunBfs(const Context& ctx);
void RunWarp(const Context& ctx);
void RunListWalk(const Context& ctx);
void RunDevfunc(const Context& ctx);
void RunParams(const Context& ctx);
void RunGlobals(const Context& ctx);

}  // namespace corpus

#endif  // VGPU_CUDA_CORPUS_RUNNER_SUPPORT_H
