// SPDX-License-Identifier: GPL-2.0-or-later
// The per-VM workers under the real mediator (gpu_device.h): two fv-opt
// testbed VMs whose engines' work runs in their own fake workers; one
// VM's worker dies and that VM gets a channel error while the other's
// results stay right and its worker never restarts.
#include <gtest/gtest.h>

#include <span>
#include <vector>
#include "testbed/testbed.h"
#include "worker/gpu_device.h"

namespace vgpu::worker {
namespace {

using namespace std::chrono_literals;
constexpr uint32_t ELEMENTS = 4096;

// Fills a buffer with `value` and reads it back through the driver.
Status fill_and_check(testbed::Vm& vm, float value) {
  auto ctx = vm.device.create_context();
  if (!ctx) return std::unexpected(ctx.error());
  driver::Context& c = **ctx;
  auto buf = c.alloc(ELEMENTS * sizeof(float));
  if (!buf) return std::unexpected(buf.error());
  std::vector<float> back(ELEMENTS);
  for (int round = 0; round < 3; ++round) {
    auto f = c.fill({*buf, ELEMENTS, value + static_cast<float>(round)});
    if (!f) return std::unexpected(f.error());
    if (auto st = c.wait(*f); !st) return st;
    if (auto st = c.download(*buf, std::span<float>(back)); !st) return st;
    for (float v : back)
      if (v != value + static_cast<float>(round)) return fail(Errc::io_error, "a filled buffer reads back wrong");
  }
  return {};
}

struct Bed {
  std::unique_ptr<testbed::Testbed> tb;
  WorkerGpuDevice* dev = nullptr;
};

// VM 1's worker (the second started) aborts at its command `die_at` (0:
// never).
Bed make(uint32_t die_at) {
  Bed b;
  testbed::TestbedConfig tc;
  tc.mode = testbed::Mode::fv_opt;
  tc.vms = 2;
  tc.vram_per_vm = 64 * MiB;
  tc.device_factory = [&b, die_at](gpu::Vram& vram) -> Result<std::unique_ptr<gpu::Device>> {
    auto d = std::make_unique<WorkerGpuDevice>(
        vram,
        [die_at, started = 0u](uint32_t) mutable {
          WorkerOptions o;
          o.binary = VGPU_WORKER_BIN;
          o.device = "fake";
          if (++started == 2 && die_at != 0) o.extra_args = {"--die-at-seq", std::to_string(die_at)};
          return o;
        },
        2s);
    b.dev = d.get();
    return std::unique_ptr<gpu::Device>(std::move(d));
  };
  auto tb = testbed::Testbed::create(tc);
  EXPECT_TRUE(tb) << tb.error().what();
  if (tb) b.tb = std::move(*tb);
  return b;
}

TEST(WorkerGpuDeviceVm, EachVmsFillsRunInItsOwnWorker) {
  Bed b = make(0);
  ASSERT_TRUE(b.tb && b.dev);
  const auto ids = b.dev->vm_ids();
  ASSERT_EQ(ids.size(), 2u);
  auto w0 = b.dev->info(ids[0]), w1 = b.dev->info(ids[1]);
  ASSERT_TRUE(w0 && w1);
  EXPECT_NE(w0->pid, w1->pid);
  const auto results = b.tb->run([](testbed::Vm& vm) { return fill_and_check(vm, 10.0f * float(vm.index + 1)); });
  for (const Status& r : results) EXPECT_TRUE(r) << r.error().what();
  EXPECT_EQ(b.dev->info(ids[0])->restarts, 0u);
  EXPECT_EQ(b.dev->info(ids[1])->restarts, 0u);
}

TEST(WorkerGpuDeviceVm, ADyingWorkerGivesItsVmAChannelErrorAndNotTheOther) {
  Bed b = make(2);  // VM 1: its map is command 1; it dies at its first fill's fence
  ASSERT_TRUE(b.tb && b.dev);
  const auto ids = b.dev->vm_ids();
  ASSERT_EQ(ids.size(), 2u);
  const int pid0 = b.dev->info(ids[0])->pid;
  const auto results = b.tb->run([](testbed::Vm& vm) { return fill_and_check(vm, 10.0f * float(vm.index + 1)); });
  EXPECT_TRUE(results[0]) << results[0].error().what();
  ASSERT_FALSE(results[1]);
  EXPECT_NE(results[1].error().message.find("kernel_error"), std::string::npos) << results[1].error().what();
  EXPECT_EQ(b.dev->info(ids[0])->pid, pid0);
  EXPECT_EQ(b.dev->info(ids[0])->restarts, 0u);
  EXPECT_NE(b.dev->info(ids[1])->last_failure.find("killed by signal"), std::string::npos)
      << b.dev->info(ids[1])->last_failure;
}

}  // namespace
}  // namespace vgpu::worker
