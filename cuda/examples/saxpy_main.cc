// SPDX-License-Identifier: GPL-2.0-or-later
// A user's program, as anyone writes one against the CUDA Driver API: it
// loads saxpy.ptx (cuda/examples/saxpy.cu), runs it over a million
// floats and checks every result on the CPU. Nothing in it knows vgpu.
//   cuda-saxpy [PTX_FILE]     (default: ../ptx/saxpy.ptx beside the program)
// In the test guest it is /guest-tests/bin/vgpu-cuda-saxpy; vgpu_tests
// (all, cuda or saxpy_example) selects it, anything else skips it.
#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

bool ok(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return true;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  std::printf("FAIL saxpy_example: %s: %s\n", call, name != nullptr ? name : "?");
  return false;
}

int run(const std::string& ptx_path) {
  std::ifstream in(ptx_path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in || text.str().empty()) {
    std::printf("FAIL saxpy_example: cannot read %s\n", ptx_path.c_str());
    return 1;
  }
  const int n = 1 << 20;
  const float a = 2.5f;
  std::vector<float> x(n), y(n), out(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 1000) * 0.5f;
    y[i] = static_cast<float>(i % 7);
  }
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CUdeviceptr dx, dy;
  char name[128] = {};
  if (!ok(cuInit(0), "cuInit") || !ok(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
      !ok(cuDeviceGetName(name, sizeof(name), dev), "cuDeviceGetName") ||
      !ok(cuCtxCreate(&ctx, nullptr, 0, dev), "cuCtxCreate") ||
      !ok(cuModuleLoadData(&mod, text.str().c_str()), "cuModuleLoadData") ||
      !ok(cuModuleGetFunction(&fn, mod, "saxpy"), "cuModuleGetFunction") ||
      !ok(cuMemAlloc(&dx, n * sizeof(float)), "cuMemAlloc") || !ok(cuMemAlloc(&dy, n * sizeof(float)), "cuMemAlloc") ||
      !ok(cuMemcpyHtoD(dx, x.data(), n * sizeof(float)), "cuMemcpyHtoD") ||
      !ok(cuMemcpyHtoD(dy, y.data(), n * sizeof(float)), "cuMemcpyHtoD"))
    return 1;
  int count = n;
  float alpha = a;
  void* params[] = {&count, &alpha, &dx, &dy};
  CUevent start, stop;
  float ms = 0;
  if (!ok(cuEventCreate(&start, 0), "cuEventCreate") || !ok(cuEventCreate(&stop, 0), "cuEventCreate") ||
      !ok(cuEventRecord(start, nullptr), "cuEventRecord") ||
      !ok(cuLaunchKernel(fn, n / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel") ||
      !ok(cuEventRecord(stop, nullptr), "cuEventRecord") || !ok(cuCtxSynchronize(), "cuCtxSynchronize") ||
      !ok(cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime") ||
      !ok(cuMemcpyDtoH(out.data(), dy, n * sizeof(float)), "cuMemcpyDtoH"))
    return 1;
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    if (out[i] != std::fma(a, x[i], y[i]) && out[i] != a * x[i] + y[i]) ++wrong;
  cuMemFree(dx);
  cuMemFree(dy);
  cuModuleUnload(mod);
  cuCtxDestroy(ctx);
  if (wrong != 0) {
    std::printf("FAIL saxpy_example: %d of %d results wrong\n", wrong, n);
    return 1;
  }
  std::printf("PASS saxpy_example: y = %.1f * x + y over %d floats on \"%s\", %.3f ms, every result checked\n", a, n,
              name, ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* selection = std::getenv("vgpu_tests");
  if (argc < 2 && selection != nullptr && std::string(selection) != "all" && std::string(selection) != "cuda" &&
      std::string(selection) != "saxpy_example") {
    std::printf("SKIP vgpu-cuda-saxpy: vgpu_tests=%s does not select it\n", selection);
    return 0;
  }
  const std::filesystem::path here = std::filesystem::path(argv[0]).parent_path();
  return run(argc > 1 ? argv[1] : (here.parent_path() / "ptx" / "saxpy.ptx").string());
}
