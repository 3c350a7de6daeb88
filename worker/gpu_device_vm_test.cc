// SPDX-License-Identifier: GPL-2.0-or-later
// The per-VM workers under the real mediator (gpu_device.h): two fv-opt
// testbed VMs whose engines' work runs in their own fake workers; one
// VM's worker dies and that VM gets a channel error while the other's
// results stay right and its worker never restarts.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <span>
#include <vector>
#include "ptx/module.h"
#include "testbed/testbed.h"
#include "worker/gpu_device.h"
#include "worker/testing/index_ptx.h"
#include "worker/testing/test_worker.h"

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

// The device the workers run on: fake (CI), or cuda on a GPU machine.
using testing::test_binary;
using testing::test_device;

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
          o.binary = test_binary();
          o.device = test_device();
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
  if (test_device() != "fake") GTEST_SKIP() << "--die-at-seq is the fake device's";
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

constexpr uint32_t BLOCKS = 8, THREADS = 64;

// The user kernel writes its indices into a compute buffer (or, with
// `stray`, at that offset past it: unmapped) and the VM reads them back.
Status user_kernel(testbed::Vm& vm, uint64_t stray) {
  auto ctx = vm.device.create_context();
  if (!ctx) return std::unexpected(ctx.error());
  driver::Context& c = **ctx;
  auto buf = c.alloc_compute(BLOCKS * THREADS * sizeof(uint32_t));
  if (!buf) return std::unexpected(buf.error());
  auto va = c.gpu_va(*buf);
  if (!va) return std::unexpected(va.error());
  auto m = c.load_module(testing::INDEX_PTX, 0);
  if (!m) return std::unexpected(m.error());
  const uint64_t out = *va + stray;
  std::vector<std::byte> params(sizeof out);
  std::memcpy(params.data(), &out, sizeof out);
  auto f = c.launch_module({.slot = m->slot, .entry = 0, .shape = {{BLOCKS, 1, 1}, {THREADS, 1, 1}}, .params = params});
  if (!f) return std::unexpected(f.error());
  if (auto st = c.wait(*f); !st) {
    auto r = c.module_report();
    if (!r) return st;
    return fail(Errc::device_error,
                std::string(st.error().what()) + " | report " + std::to_string(static_cast<uint32_t>(r->status)) +
                    " at " + std::to_string(r->addr) + (r->addr == out ? " (the stray VA)" : "") + ": " + r->message);
  }
  std::vector<uint32_t> back(BLOCKS * THREADS);
  if (auto st = c.download(*buf, std::span<uint32_t>(back)); !st) return st;
  for (uint32_t i = 0; i < back.size(); ++i)
    if (back[i] != i + 1) return fail(Errc::io_error, "index " + std::to_string(i) + " reads back wrong");
  return {};
}

// User kernels run in each VM's worker (the fake device's interpreter over
// the VM's aperture blocks, or the GPU); a kernel storing outside its
// blocks faults in its own worker: its report says mmu_fault (at that VA
// where the device knows it: the fake one), and the other VM's results and
// worker are untouched.
TEST(WorkerGpuDeviceVm, UserKernelsRunInTheirVmsWorkerAndAStrayStoreFaultsThere) {
  Bed b = make(0);
  ASSERT_TRUE(b.tb && b.dev);
  const auto ids = b.dev->vm_ids();
  ASSERT_EQ(ids.size(), 2u);
  const int pid0 = b.dev->info(ids[0])->pid;
  constexpr uint64_t STRAY = 64 * MiB;  // past the buffer's block: mapped by nothing
  const auto results = b.tb->run([](testbed::Vm& vm) { return user_kernel(vm, vm.index == 1 ? STRAY : 0); });
  EXPECT_TRUE(results[0]) << results[0].error().what();
  ASSERT_FALSE(results[1]);
  const std::string why = results[1].error().message;
  EXPECT_NE(why.find("kernel_error"), std::string::npos) << why;
  EXPECT_NE(why.find("report " + std::to_string(static_cast<uint32_t>(cls::PtxStatus::mmu_fault)) + " at "),
            std::string::npos)
      << why;
  EXPECT_EQ(b.dev->info(ids[0])->pid, pid0);
  EXPECT_EQ(b.dev->info(ids[0])->restarts, 0u);
  const std::string last = b.dev->info(ids[1])->last_failure;
  if (test_device() == "fake") {
    EXPECT_NE(why.find("(the stray VA)"), std::string::npos) << why;
    EXPECT_NE(last.find("interpreter"), std::string::npos) << last;
  } else {
    EXPECT_NE(last.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << last;
  }
  std::printf("VM 1's report and failure: %s | %s\n", why.c_str(), last.c_str());
}

}  // namespace
}  // namespace vgpu::worker
