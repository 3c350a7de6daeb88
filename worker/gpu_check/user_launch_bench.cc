// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-user-launch-bench: launch-to-fence of a user PTX kernel through
// whichever libcuda.so.1 the loader finds (docs/cuda-worker.md, "User
// kernels"): vgpu's (an fv-opt testbed VM; with VGPU_WORKER_DEVICE=cuda
// the kernel runs in the VM's CUDA worker) or NVIDIA's (direct CUDA). The
// same program both ways: cuLaunchKernel of a one-store kernel, then
// cuCtxSynchronize, timed per launch.
//
//   vgpu-user-launch-bench [LAUNCHES [ROUNDS]]
//
// Prints per round the p50 and p99 in microseconds, then the sleeps per
// launch of each thread of this process and of its children by name (the
// voluntary context switches of /proc: a thread that blocked and was woken),
// and one JSON line.
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "worker/store_ptx.h"

namespace {

using vgpu::worker::STORE_ENTRY;
using vgpu::worker::STORE_PTX;

constexpr int WARMUP = 200;

bool check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return true;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  std::fprintf(stderr, "%s: %s (%d)\n", call, name ? name : "?", static_cast<int>(r));
  return false;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

// Voluntary and involuntary context switches, summed per thread name.
struct Switches {
  long voluntary = 0, involuntary = 0;
};
using SwitchMap = std::map<std::string, Switches>;

void add_task_switches(const std::filesystem::path& task, SwitchMap& out) {
  std::ifstream comm(task / "comm"), status(task / "status");
  std::string name, line;
  if (!std::getline(comm, name)) return;
  Switches& s = out[name];
  while (std::getline(status, line)) {
    std::istringstream in(line);
    std::string key;
    long value = 0;
    if (!(in >> key >> value)) continue;
    if (key == "voluntary_ctxt_switches:") s.voluntary += value;
    if (key == "nonvoluntary_ctxt_switches:") s.involuntary += value;
  }
}

// This process's threads and its children's (a worker process).
SwitchMap switches() {
  SwitchMap out;
  std::error_code ec;
  std::vector<std::string> children;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    add_task_switches(task.path(), out);
    std::ifstream kids(task.path() / "children");
    for (std::string pid; kids >> pid;) children.push_back(pid);
  }
  for (const std::string& pid : children)
    for (const auto& task : std::filesystem::directory_iterator("/proc/" + pid + "/task", ec))
      add_task_switches(task.path(), out);
  return out;
}

void print_switches(const SwitchMap& before, const SwitchMap& after, int launches) {
  std::printf("context switches per launch (thread name: voluntary = sleeps, involuntary)\n");
  for (const auto& [name, s] : after) {
    const auto b = before.find(name);
    const Switches was = b == before.end() ? Switches{} : b->second;
    const double v = static_cast<double>(s.voluntary - was.voluntary) / launches;
    const double i = static_cast<double>(s.involuntary - was.involuntary) / launches;
    if (v >= 0.005 || i >= 0.005) std::printf("  %-16s %6.2f %6.2f\n", name.c_str(), v, i);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 3000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  if (launches <= 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: vgpu-user-launch-bench [LAUNCHES [ROUNDS]] (both above 0)\n");
    return 2;
  }
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  CUdeviceptr out = 0;
  char name[128] = {};
  if (!check(cuInit(0), "cuInit") || !check(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
      !check(cuDeviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName"))
    return 1;
#if CUDA_VERSION >= 13000
  if (!check(cuCtxCreate(&ctx, nullptr, 0, dev), "cuCtxCreate")) return 1;
#else
  if (!check(cuCtxCreate(&ctx, 0, dev), "cuCtxCreate")) return 1;
#endif
  if (!check(cuModuleLoadData(&mod, STORE_PTX.c_str()), "cuModuleLoadData") ||
      !check(cuModuleGetFunction(&fn, mod, STORE_ENTRY), "cuModuleGetFunction") ||
      !check(cuMemAlloc(&out, sizeof(uint32_t)), "cuMemAlloc"))
    return 1;
  void* params[] = {&out};
  auto once = [&]() {
    return check(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel") &&
           check(cuCtxSynchronize(), "cuCtxSynchronize");
  };
  for (int i = 0; i < WARMUP; ++i)
    if (!once()) return 1;
  std::printf("device: %s\n", name);
  std::vector<double> p50s;
  const SwitchMap switches_before = switches();
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> us(static_cast<size_t>(launches));
    for (double& u : us) {
      const auto t0 = std::chrono::steady_clock::now();
      if (!once()) return 1;
      u = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    }
    p50s.push_back(percentile(us, 0.5));
    std::printf("round %d: launch-to-fence p50 %.2f us, p99 %.2f us (%d launches)\n", r + 1, p50s.back(),
                percentile(us, 0.99), launches);
  }
  print_switches(switches_before, switches(), launches * rounds);
  uint32_t word = 0;
  if (!check(cuMemcpyDtoH(&word, out, sizeof word), "cuMemcpyDtoH")) return 1;
  std::printf("{\"bench\": \"user_launch\", \"device\": \"%s\", \"p50_us\": %.3f, \"stored\": %u}\n", name,
              percentile(p50s, 0.5), word);
  return word == 1 ? 0 : 1;
}
