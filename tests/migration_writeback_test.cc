// SPDX-License-Identifier: GPL-2.0-or-later
// The CUDA back end's migration (docs/migration.md §8, M7) with the fake
// device, whose mirror is memory apart from VRAM: engine work leaves pages
// valid only on the device; pre-copy's write-back brings them home within
// a budget and logs them dirty; the freeze downloads what engines wrote
// since; the destination starts with every page on the host, uploads on
// first use, and the chain of jobs comes out as on a vGPU that never moved.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <vector>

#include "gpu/device/fake_device.h"
#include "gpu/device/residency.h"
#include "tests/testing/moving_vgpu.h"

namespace vgpu::mediator::moving {
namespace {

constexpr uint64_t FILL_BYTES = 1 * MiB;  // 16 tracker pages, device-only after the fill
constexpr uint32_t FILL_COUNT = FILL_BYTES / sizeof(float);
constexpr float FILL_VALUE = 7.0f, REFILL_VALUE = 8.0f;
constexpr int JOBS_BETWEEN = 4;                           // after the pre-copy, before the freeze
constexpr uint64_t BUDGET = gpu::ResidencyTracker::PAGE;  // one page per call: several passes

// `jobs` chained jobs, each waited for before the next is written: no
// CPU write lands in a page while engine work on it runs. (Submitted
// together, about 1 run in 100 under load came out one job short before
// any migration step; the suspect, unconfirmed: a CPU write told to the
// tracker before its store racing the engine's upload of that page.
// docs/migration.md, M7.)
[[nodiscard]] bool run_one_by_one(Chain& chain, int jobs) {
  for (int k = 0; k < jobs; ++k)
    if (!chain.submit(1) || !chain.ctx->synchronize()) return false;
  return true;
}

std::unique_ptr<testbed::Testbed> fake_device_testbed(gpu::FakeDevice*& dev) {
  testbed::TestbedConfig tc;
  tc.mode = testbed::Mode::fv_naive;
  tc.vram_per_vm = VM_VRAM;
  tc.channels_per_vm = VM_CHANNELS;
  tc.device_factory = [&dev](gpu::Vram& vram) -> Result<std::unique_ptr<gpu::Device>> {
    auto d = std::make_unique<gpu::FakeDevice>(vram);
    dev = d.get();
    return d;
  };
  auto tb = testbed::Testbed::create(tc);
  EXPECT_TRUE(tb) << tb.error().what();
  return tb ? std::move(*tb) : nullptr;
}

// The 4 KiB pages of the partition marked since the last take (cleared).
uint64_t take_marked(testbed::Testbed& tb) {
  const shadow::Partition& p = tb.vgpu(0)->partition();
  std::vector<uint64_t> bits(p.size / gpu::DirtyLog::PAGE / gpu::DirtyLog::PAGES_PER_WORD);
  (void)tb.host()->gpu().vram().dirty_log().take(p.base, p.size, bits);
  uint64_t n = 0;
  for (uint64_t w : bits) n += std::popcount(w);
  return n;
}

TEST(MigrationWriteBack, DeviceOnlyPagesGoHomeInPreCopyAndTheMoveLosesNothing) {
  gpu::FakeDevice *dev_a = nullptr, *dev_b = nullptr;
  auto a = fake_device_testbed(dev_a);
  auto b = fake_device_testbed(dev_b);
  ASSERT_TRUE(a && b && dev_a && dev_b);
  Vgpu& va = *a->vgpu(0);
  Vgpu& vb = *b->vgpu(0);
  MovingPort port(&a->port(0));
  Chain chain;
  ASSERT_TRUE(chain.open(port));
  auto filled = chain.ctx->alloc(FILL_BYTES);
  ASSERT_TRUE(filled);
  ASSERT_TRUE(chain.ctx->fill({.dst = *filled, .count = FILL_COUNT, .value = FILL_VALUE}));
  ASSERT_TRUE(chain.ctx->synchronize());
  ASSERT_TRUE(run_one_by_one(chain, JOBS_BEFORE));

  // Pre-copy: the engines' results are on the device alone.
  const uint64_t device_only = va.device_only_bytes();
  EXPECT_GE(device_only, FILL_BYTES);
  gpu::DirtyLog& log = a->host()->gpu().vram().dirty_log();
  log.start();
  (void)take_marked(*a);
  uint64_t moved = 0, passes = 0;
  for (gpu::WriteBack w{0, device_only}; w.left != 0 && passes <= device_only / BUDGET; ++passes) {
    w = va.write_back(BUDGET);
    EXPECT_LE(w.bytes, BUDGET);
    moved += w.bytes;
  }
  EXPECT_EQ(moved, device_only);
  EXPECT_EQ(passes, device_only / BUDGET);
  EXPECT_EQ(va.device_only_bytes(), 0u);
  EXPECT_EQ(take_marked(*a), device_only / gpu::DirtyLog::PAGE) << "every page written back is logged";

  // More work after the last pass: the freeze takes it home. (The chain's
  // own pages share a tracker page with what the driver reads back, so
  // they come home as it polls; the refill stays on the device.)
  ASSERT_TRUE(chain.ctx->fill({.dst = *filled, .count = FILL_COUNT, .value = REFILL_VALUE}));
  ASSERT_TRUE(chain.ctx->synchronize());
  ASSERT_TRUE(run_one_by_one(chain, JOBS_BETWEEN));
  const uint64_t since = va.device_only_bytes();
  EXPECT_GE(since, FILL_BYTES);
  ASSERT_TRUE(va.freeze(FREEZE_NS));
  EXPECT_EQ(va.device_only_bytes(), 0u);
  EXPECT_GE(take_marked(*a), since / gpu::DirtyLog::PAGE);
  log.stop();

  // The move: no upload on the destination until its first job.
  Result<std::vector<uint8_t>> image = va.export_image();
  ASSERT_TRUE(image) << image.error().what();
  ASSERT_TRUE(vb.freeze(FREEZE_NS));
  const uint64_t uploads_before = dev_b->stats().upload_bytes;
  ASSERT_TRUE(move_vgpu(*a, *b));
  EXPECT_EQ(vb.device_only_bytes(), 0u);
  EXPECT_EQ(dev_b->stats().upload_bytes, uploads_before) << "the import uploads nothing";
  Result<std::vector<uint8_t>> again = vb.export_image();
  ASSERT_TRUE(again) << again.error().what();
  EXPECT_EQ(*again, *image) << "the destination's state is the frozen source's";
  vb.thaw();
  port.move_to(&b->port(0));
  ASSERT_TRUE(run_one_by_one(chain, JOBS_AFTER));
  Result<std::vector<std::byte>> out = chain.result();
  ASSERT_TRUE(out) << out.error().what();
  EXPECT_GT(dev_b->stats().upload_bytes, uploads_before) << "the first jobs uploaded lazily";
  Result<std::vector<std::byte>> reference = unmoved_output(JOBS_BEFORE + JOBS_BETWEEN + JOBS_AFTER);
  ASSERT_TRUE(reference) << reference.error().what();
  EXPECT_EQ(*out, *reference);
  std::vector<float> fill(FILL_COUNT);
  ASSERT_TRUE(chain.ctx->download(*filled, std::span<float>(fill)));
  EXPECT_EQ(std::count(fill.begin(), fill.end(), REFILL_VALUE), FILL_COUNT);
}

}  // namespace
}  // namespace vgpu::mediator::moving
