// SPDX-License-Identifier: GPL-2.0-or-later
// corpus_runner: a plain CUDA Driver API program. It loads each corpus
// module (PTX_DIR/NAME.SUFFIX.ptx), runs its kernels on generated inputs
// (fixed seeds), compares with the CPU reference (reference.h), prints
// "PASS name" or "FAIL name: reason" per kernel, then "N passed, M failed",
// and exits 1 on any failure.
//
//   cuda_corpus_runner PTX_DIR [clang|nvcc] [NAME...]
#include <cuda.h>

#include <cstdio>
#include <exception>
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

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PTX_DIR [clang|nvcc] [NAME...]\n", argv[0]);
    return 2;
  }
  Context ctx{argv[1], argc > 2 ? argv[2] : "clang"};
  std::vector<std::string> only(argv + (argc > 3 ? 3 : argc), argv + argc);
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
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 && passed > 0 ? 0 : 1;
}

}  // namespace
}  // namespace corpus

int main(int argc, char** argv) { return corpus::Main(argc, argv); }
