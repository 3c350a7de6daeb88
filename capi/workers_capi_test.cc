// SPDX-License-Identifier: GPL-2.0-or-later
// backend=cuda in QEMU's own device (capi/cuda_workers.cc): each vGPU's
// engines run in a worker process of its own (the fake worker device
// here, as vgpud's workers test), the worker found in the build tree as
// QEMU would find it beside itself or installed; a worker killed between
// jobs fails that vGPU's next job once (kernel_error), the job after it
// runs on a new worker, and the other vGPU's worker and results are
// untouched. And the options' refusals.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "capi/testing/trapped_port.h"
#include "capi/vgpu_capi.h"
#include "driver/runtime.h"
#include "tests/testing/fill_check.h"

namespace vgpu {
namespace {

using namespace std::chrono_literals;

struct Destroy {
  void operator()(VgpuBackend* b) const { vgpu_backend_destroy(b); }
};
using BackendPtr = std::unique_ptr<VgpuBackend, Destroy>;

VgpuBackendConfig cuda_config() {
  VgpuBackendConfig c;
  vgpu_backend_config_init(&c);
  c.vram_bytes = 64 * MiB;
  c.mode = VGPU_MODE_FV;
  c.bar_remap = false;
  c.engine_backend = "cuda";
  c.worker_device = "fake";
  return c;
}

std::string create_error(const VgpuBackendConfig& c) {
  char err[1024] = {};
  BackendPtr b(vgpu_backend_create(&c, err, sizeof err));
  return b ? "" : err;
}

nlohmann::json worker_of(VgpuBackend* b) {
  char* text = vgpu_backend_counters_json(b);
  if (text == nullptr) return {};
  auto j = nlohmann::json::parse(text);
  vgpu_backend_free_string(text);
  return j.value("worker", nlohmann::json::object());
}

// A vGPU and its unchanged guest driver, all accesses trapped.
struct Vm {
  BackendPtr backend;
  std::unique_ptr<capi::testing::TrappedPort> port;
  std::unique_ptr<driver::Device> dev;

  int pid() { return worker_of(backend.get()).value("pid", -1); }
  unsigned restarts() { return worker_of(backend.get()).value("restarts", 0u); }

  // Fills a buffer with `value` and reads it back.
  Status fill(float value) { return testing::fill_new_and_check(*dev, 4096, value); }
};

std::unique_ptr<Vm> open_vm() {
  auto vm = std::make_unique<Vm>();
  const VgpuBackendConfig c = cuda_config();
  char err[1024] = {};
  vm->backend.reset(vgpu_backend_create(&c, err, sizeof err));
  EXPECT_NE(vm->backend, nullptr) << err;
  if (!vm->backend) return nullptr;
  vm->port = std::make_unique<capi::testing::TrappedPort>(vm->backend.get());
  auto dev = driver::Device::open(*vm->port);
  EXPECT_TRUE(dev) << dev.error().what();
  if (!dev) return nullptr;
  vm->dev = std::move(*dev);
  return vm;
}

// Whether `pid` ended (gone or a zombie its parent has not reaped yet).
bool ended(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

TEST(CapiWorkers, EachVgpuHasItsOwnWorkerAndAKilledOneFailsOneJobThenIsRestarted) {
  auto a = open_vm();
  auto b = open_vm();
  ASSERT_TRUE(a && b);
  EXPECT_STREQ(vgpu_backend_setting(a->backend.get(), VGPU_OPT_BACKEND), "cuda");
  ASSERT_TRUE(a->fill(1.5f));
  ASSERT_TRUE(b->fill(2.5f));
  const int pid_a = a->pid(), pid_b = b->pid();
  ASSERT_GT(pid_a, 0);
  ASSERT_GT(pid_b, 0);
  EXPECT_NE(pid_a, pid_b);
  EXPECT_EQ(worker_of(a->backend.get()).value("state", ""), "ready");
  EXPECT_EQ(worker_of(a->backend.get()).value("device", "").find("fake"), 0u) << worker_of(a->backend.get());

  ASSERT_EQ(kill(pid_a, SIGKILL), 0);
  for (auto until = std::chrono::steady_clock::now() + 5s; !ended(pid_a);) {
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "worker " << pid_a << " did not end";
    std::this_thread::sleep_for(1ms);
  }
  auto failed = a->fill(3.5f);
  ASSERT_FALSE(failed) << "a job on the killed worker succeeded";
  EXPECT_NE(failed.error().message.find("kernel_error"), std::string::npos) << failed.error().message;
  ASSERT_TRUE(a->fill(4.5f));
  EXPECT_NE(a->pid(), pid_a);
  EXPECT_GT(a->pid(), 0);
  EXPECT_EQ(a->restarts(), 1u);
  EXPECT_NE(worker_of(a->backend.get()).value("last_failure", "").find("worker died"), std::string::npos)
      << worker_of(a->backend.get());

  ASSERT_TRUE(b->fill(5.5f));
  EXPECT_EQ(b->pid(), pid_b);
  EXPECT_EQ(b->restarts(), 0u);
}

TEST(CapiWorkers, TheWorkersOptionsAreCheckedAndOnlyTakenWithCuda) {
  VgpuBackendConfig c = cuda_config();
  c.worker_device = "gpu";
  EXPECT_NE(create_error(c).find("worker-device: 'gpu' is not one of cuda, fake"), std::string::npos)
      << create_error(c);
  c = cuda_config();
  c.worker_binary = "/nonexistent/vgpu-worker";
  EXPECT_NE(create_error(c).find("worker-binary: /nonexistent/vgpu-worker: No such file"), std::string::npos)
      << create_error(c);
  c = cuda_config();
  c.engine_backend = "model";
  EXPECT_NE(create_error(c).find("only with backend=cuda"), std::string::npos) << create_error(c);
  c = cuda_config();
  c.mode = VGPU_MODE_PASSTHROUGH;
  c.worker_device = VGPU_OPT_WORKER_DEVICE_DEFAULT;
  EXPECT_NE(create_error(c).find("backend: cuda runs each vGPU's work in a worker process (mode=fv)"),
            std::string::npos)
      << create_error(c);
}

TEST(CapiWorkers, AnExplicitWorkerBinaryIsTheOneStarted) {
  VgpuBackendConfig c = cuda_config();
  c.worker_binary = VGPU_WORKER_BIN;
  char err[1024] = {};
  BackendPtr b(vgpu_backend_create(&c, err, sizeof err));
  ASSERT_NE(b, nullptr) << err;
  const int pid = worker_of(b.get()).value("pid", -1);
  ASSERT_GT(pid, 0);
  char exe[PATH_MAX] = {};
  const ssize_t n = readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof exe - 1);
  ASSERT_GT(n, 0);
  char* want = realpath(VGPU_WORKER_BIN, nullptr);
  ASSERT_NE(want, nullptr);
  EXPECT_EQ(std::string(exe, n), want);
  free(want);
}

}  // namespace
}  // namespace vgpu
