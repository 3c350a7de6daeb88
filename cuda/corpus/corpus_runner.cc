// SPDX-License-Identifier: GPL-2.0-or-later
// corpus_runner: a plain CUDA Driver API program. It loads each corpus
// module (PTX_DIR/NAME.SUFFIX.ptx), runs its kernels on generated inputs
// (fixed seeds), compares with the CPU reference (reference.h), prints
// "PASS name" or "FAIL name: reason" per kernel, then "N passed, M failed",
// and exits 1 on any failure.
//
//   cuda_corpus_runner PTX_DIR [clang|nvcc] [NAME...]
//
// In the test guest (scripts/guest-image installs it as
// /guest-tests/bin/vgpu-cuda-corpus, and guest-tests/run-all runs it with
// no arguments) it takes the PTX from ../ptx beside its own folder and the
// selection from vgpu_tests: all or cuda runs every kernel, a kernel's
// name that one, anything else is not for it ("SKIP").
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "cuda/corpus/runner_support.h"

namespace corpus {
namespace {

struct Kernel {
  const char* name;
  void (*run)(const Context&);
};

constexpr Kernel kKernels[] = {
    {"vector_add", RunVectorAdd},
    {"saxpy", RunSaxpy},
    {"matmul", RunMatmul},
    {"reduce", RunReduce},
    {"scan", RunScan},
    {"histogram", RunHistogram},
    {"bitonic", RunBitonic},
    {"stencil", RunStencil},
    {"bfs", RunBfs},
    {"warp", RunWarp},
    {"list_walk", RunListWalk},
    {"devfunc", RunDevfunc},
    {"params", RunParams},
    {"globals", RunGlobals},
};

bool Selected(const std::vector<std::string>& only, const char* name) {
  if (only.empty()) return true;
  for (const std::string& o : only)
    if (o == name) return true;
  return false;
}

int Run(const Context& ctx, const std::vector<std::string>& only, const std::string& summary_prefix) {
  CUcontext cu = nullptr;
  try {
    Check(cuInit(0), "cuInit");
    CUdevice dev = 0;
    Check(cuDeviceGet(&dev, 0), "cuDeviceGet");
#if CUDA_VERSION >= 13000
    Check(cuCtxCreate(&cu, nullptr, 0, dev), "cuCtxCreate");
#else
    Check(cuCtxCreate(&cu, 0, dev), "cuCtxCreate");
#endif
  } catch (const Failure& e) {
    std::printf("FAIL setup: %s\n0 passed, 1 failed\n", e.what());
    return 1;
  }
  int passed = 0, failed = 0;
  for (const Kernel& k : kKernels) {
    if (!Selected(only, k.name)) continue;
    try {
      k.run(ctx);
      std::printf("PASS %s\n", k.name);
      ++passed;
    } catch (const std::exception& e) {
      std::printf("FAIL %s: %s\n", k.name, e.what());
      ++failed;
    }
    std::fflush(stdout);
  }
  (void)cuCtxDestroy(cu);
  std::printf("%s%d passed, %d failed\n", summary_prefix.c_str(), passed, failed);
  return failed == 0 && passed > 0 ? 0 : 1;
}

// The guest's way (see the top): no arguments, vgpu_tests in the environment.
int GuestMain(const char* argv0, const std::string& selection) {
  const char* program = "vgpu-cuda-corpus";
  std::vector<std::string> only;
  if (selection != "all" && selection != "cuda") {
    for (const Kernel& k : kKernels)
      if (selection == k.name) only.push_back(k.name);
    if (only.empty()) {
      std::printf("SKIP %s: vgpu_tests=%s selects no CUDA program\n", program, selection.c_str());
      return 0;
    }
  }
  const std::filesystem::path ptx = std::filesystem::path(argv0).parent_path().parent_path() / "ptx";
  return Run(Context{ptx.string(), "clang"}, only, std::string(program) + ": ");
}

int Main(int argc, char** argv) {
  const char* guest_selection = std::getenv("vgpu_tests");
  if (argc < 2 && guest_selection != nullptr) return GuestMain(argv[0], guest_selection);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PTX_DIR [clang|nvcc] [NAME...]\n", argv[0]);
    return 2;
  }
  std::vector<std::string> only(argv + (argc > 3 ? 3 : argc), argv + argc);
  return Run(Context{argv[1], argc > 2 ? argv[2] : "clang"}, only, "");
}

}  // namespace
}  // namespace corpus

int main(int argc, char** argv) { return corpus::Main(argc, argv); }
