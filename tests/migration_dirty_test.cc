// SPDX-License-Identifier: GPL-2.0-or-later
// Dirty completeness (docs/migration.md §12): with the VRAM's dirty log
// on, a VM runs copies, built-in kernels, a PTX kernel, fences and trapped
// BAR writes; every page of its partition whose bytes changed must be in
// the log. In fv-naive every guest access is trapped, so every write is a
// host-side one (with BAR remap the hypervisor's own dirty logging, KVM
// or TCG, covers the direct windows instead).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "driver/runtime.h"
#include "ptx/module.h"
#include "ptx/params.h"
#include "testbed/testbed.h"
#include "testbed/testing/testbeds.h"
#include "tests/testing/user_kernels_ptx.h"

namespace vgpu {
namespace {

constexpr uint64_t VM_VRAM = 64 * MiB;
constexpr uint32_t N = 50'000;  // elements: buffers over many pages
constexpr uint32_t BLOCK = 256;
constexpr uint64_t PAGE = gpu::DirtyLog::PAGE;
constexpr float FILL_VALUE = 3.0f, SAXPY_A = 2.0f;

// The steps of the workload, each one pass of a migration: every kind of
// engine write plus the driver's own set-up. Each ends synchronized.
struct Workload {
  std::unique_ptr<driver::Device> dev;
  std::unique_ptr<driver::Context> ctx;
  driver::Buffer x{}, y{}, z{};
  std::vector<float> host = std::vector<float>(N);
  std::shared_ptr<const ptx::Module> module;
  driver::LoadedModule loaded{};
};

using Step = std::function<Status(Workload&)>;
Status fenced(Result<driver::Fence> f, driver::Context& c) {
  if (!f) return std::unexpected(f.error());
  return c.synchronize();
}

const std::vector<std::pair<const char*, Step>>& steps(driver::Port& port) {
  static std::vector<std::pair<const char*, Step>> all;
  all = {
      {"open and allocate",
       [&port](Workload& w) -> Status {
         auto dev = driver::Device::open(port);
         if (!dev) return std::unexpected(dev.error());
         w.dev = std::move(*dev);
         auto ctx = w.dev->create_context();
         if (!ctx) return std::unexpected(ctx.error());
         w.ctx = std::move(*ctx);
         auto x = w.ctx->alloc(N * 4), y = w.ctx->alloc(N * 4), z = w.ctx->alloc(N * 4);
         if (!x || !y || !z) return fail(Errc::out_of_memory, "buffers");
         w.x = *x, w.y = *y, w.z = *z;
         return {};
       }},
      {"upload (trapped BAR1 or staged copy)",
       [](Workload& w) -> Status {
         for (uint32_t i = 0; i < N; ++i) w.host[i] = static_cast<float>(i);
         return w.ctx->upload(w.x, std::span<const float>(w.host));
       }},
      {"fill kernel",
       [](Workload& w) { return fenced(w.ctx->fill({.dst = w.y, .count = N, .value = FILL_VALUE}), *w.ctx); }},
      {"saxpy kernel",
       [](Workload& w) { return fenced(w.ctx->saxpy({.x = w.x, .y = w.y, .n = N, .a = SAXPY_A}), *w.ctx); }},
      {"copy engine", [](Workload& w) { return fenced(w.ctx->copy(w.z, 0, w.y, 0, N * 4), *w.ctx); }},
      {"module load",
       [](Workload& w) -> Status {
         auto parsed = ptx::parse_module(testing::USER_KERNELS_PTX);
         if (!parsed) return fail(Errc::invalid_argument, parsed.error().message);
         w.module = *parsed;
         auto m = w.ctx->load_module(testing::USER_KERNELS_PTX, w.module->data_bytes());
         if (!m) return std::unexpected(m.error());
         w.loaded = *m;
         return {};
       }},
      {"PTX kernel",
       [](Workload& w) -> Status {
         const uint32_t entry = static_cast<uint32_t>(w.module->find_entry("vadd"));
         ptx::ParamBuffer p(w.module->entries().at(entry));
         p.set(0, *w.ctx->gpu_va(w.x)).set(1, *w.ctx->gpu_va(w.z)).set(2, *w.ctx->gpu_va(w.y)).set(3, N);
         const driver::LaunchShape shape{{(N + BLOCK - 1) / BLOCK, 1, 1}, {BLOCK, 1, 1}};
         return fenced(w.ctx->launch_module(
                           {.slot = w.loaded.slot, .entry = entry, .shape = shape, .params = p.bytes()}),
                       *w.ctx);
       }},
      {"download and check",
       [](Workload& w) -> Status {
         std::vector<float> out(N);
         if (auto r = w.ctx->download(w.y, std::span<float>(out)); !r) return r;
         // z = saxpy's y = 2x + 3, then y = x + z = 3x + 3.
         for (uint32_t i = 0; i < N; ++i)
           if (out[i] != 3.0f * w.host[i] + FILL_VALUE) return fail(Errc::device_error, "element " + std::to_string(i));
         return {};
       }},
  };
  return all;
}

TEST(MigrationDirty, EveryChangedPageOfThePartitionIsLogged) {
  auto tb = testing::create_testbed(testing::one_vm(testbed::Mode::fv_naive, VM_VRAM));
  ASSERT_TRUE(tb);
  gpu::Vram& vram = tb->host()->gpu().vram();
  const shadow::Partition part = tb->vgpu(0)->partition();
  const std::byte* live = vram.data() + part.base;
  vram.dirty_log().start();

  // One pass per step: snapshot, run, take the log, compare.
  Workload w;
  uint64_t total_changed = 0;
  for (const auto& [name, step] : steps(tb->port(0))) {
    std::vector<uint64_t> marked(part.size / PAGE / gpu::DirtyLog::PAGES_PER_WORD);
    (void)vram.dirty_log().take(part.base, part.size, marked);  // the previous steps' marks
    std::fill(marked.begin(), marked.end(), 0);
    std::vector<std::byte> before(live, live + part.size);
    Status ran = step(w);
    ASSERT_TRUE(ran) << name << ": " << ran.error().what();
    (void)vram.dirty_log().take(part.base, part.size, marked);
    uint64_t changed = 0, missed = 0;
    for (uint64_t page = 0; page < part.size / PAGE; ++page) {
      if (std::memcmp(before.data() + page * PAGE, live + page * PAGE, PAGE) == 0) continue;
      ++changed;
      const bool logged = (marked[page / 64] >> (page % 64)) & 1;
      if (!logged && ++missed <= 3) ADD_FAILURE() << name << ": page " << page << " changed unlogged";
    }
    EXPECT_EQ(missed, 0u) << name << ": of " << changed << " changed pages";
    total_changed += changed;
  }
  vram.dirty_log().stop();
  // Not vacuous: the workload changed the buffers' pages (3 x N floats).
  EXPECT_GE(total_changed, 3 * N * sizeof(float) / PAGE);
}

}  // namespace
}  // namespace vgpu
