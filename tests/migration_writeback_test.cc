// SPDX-License-Identifier: GPL-2.0-or-later
// The CUDA back end's migration (docs/migration.md §8, M7) with the fake
// device, whose mirror is memory apart from VRAM: engine work leaves pages
// valid only on the device; pre-copy's write-back brings them home within
// a budget and logs them dirty; the freeze downloads what engines wrote
// since; the destination starts with every page on the host, uploads on
// first use, and the chain of jobs comes out as on a vGPU that never moved.
// With VGPU_ENGINE_BACKEND=cuda (a GPU host) the same on the CUDA back end;
// the figures are the test's properties (--gtest_output=json:FILE).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "gpu/device/fake_device.h"
#include "gpu/device/residency.h"
#include "testbed/testing/testbeds.h"
#include "tests/testing/moving_vgpu.h"

namespace vgpu::mediator::moving {
namespace {

constexpr uint64_t FILL_BYTES = 1 * MiB;  // 16 tracker pages, device-only after the fill
constexpr uint32_t FILL_COUNT = FILL_BYTES / sizeof(float);
constexpr float FILL_VALUE = 7.0f, REFILL_VALUE = 8.0f;
constexpr int JOBS_BETWEEN = 4;                           // after the pre-copy, before the freeze
constexpr uint64_t BUDGET = gpu::ResidencyTracker::PAGE;  // one page per call: several passes

// Whether VGPU_ENGINE_BACKEND picks the CUDA back end (the testbeds and
// the unmoved reference then all run on it).
bool on_cuda() {
  const char* env = std::getenv("VGPU_ENGINE_BACKEND");
  return env != nullptr && std::string_view(env) == "cuda";
}

// fv-naive, no partition memfd of its own (nothing direct-mapped), on the
// fake device, or on CUDA when the environment asks for it.
std::unique_ptr<testbed::Testbed> device_testbed() {
  testbed::TestbedConfig tc = testing::one_vm(testbed::Mode::fv_naive, VM_VRAM, VM_CHANNELS);
  if (!on_cuda())
    tc.device_factory = [](gpu::Vram& vram) -> Result<std::unique_ptr<gpu::Device>> {
      return std::make_unique<gpu::FakeDevice>(vram);
    };
  return testing::create_testbed(tc);
}

gpu::ResidencyTracker& tracker(testbed::Testbed& tb) { return *tb.host()->gpu().residency(); }

// A figure of the run: a property in the test's JSON output.
void figure(const char* name, uint64_t value) { ::testing::Test::RecordProperty(name, std::to_string(value)); }

uint64_t micros_since(std::chrono::steady_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t).count());
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

// Fills `buf` with `value`, then `jobs` more chained jobs, and waits for
// them all: not one by one, for the driver writes the next job's commands
// beside a running job's pages (the race of docs/migration.md §8). The
// engines' results stay on the device: `device_only` (at least the fill's
// bytes), kept as the figure `name`.
void run_work(Chain& chain, Vgpu& v, const driver::Buffer& buf, float value, int jobs, const char* name,
              uint64_t& device_only) {
  ASSERT_TRUE(chain.ctx->fill({.dst = buf, .count = FILL_COUNT, .value = value}));
  ASSERT_TRUE(chain.submit(jobs));
  ASSERT_TRUE(chain.ctx->synchronize());
  device_only = v.device_only_bytes();
  EXPECT_GE(device_only, FILL_BYTES);
  figure(name, device_only);
}

TEST(MigrationWriteBack, DeviceOnlyPagesGoHomeInPreCopyAndTheMoveLosesNothing) {
  auto a = device_testbed();
  auto b = device_testbed();
  ASSERT_TRUE(a && b && a->host()->gpu().residency() && b->host()->gpu().residency());
  RecordProperty("backend", on_cuda() ? "cuda" : "fake_device");
  Vgpu& va = *a->vgpu(0);
  Vgpu& vb = *b->vgpu(0);
  MovingPort port(&a->port(0));
  Chain chain;
  ASSERT_TRUE(chain.open(port));
  auto filled = chain.ctx->alloc(FILL_BYTES);
  ASSERT_TRUE(filled);
  uint64_t device_only = 0;
  ASSERT_NO_FATAL_FAILURE(
      run_work(chain, va, *filled, FILL_VALUE, JOBS_BEFORE, "device_only_before_precopy", device_only));

  // Pre-copy: the engines' results are on the device alone.
  gpu::DirtyLog& log = a->host()->gpu().vram().dirty_log();
  log.start();
  (void)take_marked(*a);
  uint64_t moved = 0, passes = 0, largest = 0;
  const auto precopy = std::chrono::steady_clock::now();
  for (gpu::WriteBack w{0, device_only}; w.left != 0 && passes <= device_only / BUDGET; ++passes) {
    w = va.write_back(BUDGET);
    EXPECT_LE(w.bytes, BUDGET);
    moved += w.bytes;
    largest = std::max(largest, w.bytes);
  }
  figure("precopy_write_back_us", micros_since(precopy));
  figure("precopy_calls", passes);
  figure("precopy_largest_call_bytes", largest);
  figure("precopy_written_back_bytes", moved);
  EXPECT_EQ(moved, device_only);
  EXPECT_EQ(passes, device_only / BUDGET);
  EXPECT_EQ(va.device_only_bytes(), 0u);
  EXPECT_EQ(take_marked(*a), device_only / gpu::DirtyLog::PAGE) << "every page written back is logged";

  // More work after the last pass: the freeze takes it home. (The chain's
  // own pages share a tracker page with what the driver reads back, so
  // they come home as it polls; the refill stays on the device.)
  uint64_t since = 0;
  ASSERT_NO_FATAL_FAILURE(run_work(chain, va, *filled, REFILL_VALUE, JOBS_BETWEEN, "device_only_before_freeze", since));
  const uint64_t freeze_downloads = tracker(*a).stats().download_bytes;
  const auto freeze = std::chrono::steady_clock::now();
  ASSERT_TRUE(va.freeze(FREEZE_NS));
  figure("freeze_us", micros_since(freeze));
  figure("freeze_download_bytes", tracker(*a).stats().download_bytes - freeze_downloads);
  figure("device_only_after_freeze", va.device_only_bytes());
  EXPECT_EQ(va.device_only_bytes(), 0u);
  EXPECT_GE(take_marked(*a), since / gpu::DirtyLog::PAGE);
  log.stop();

  // The move: no upload on the destination until its first job.
  Result<std::vector<uint8_t>> image = va.export_image();
  ASSERT_TRUE(image) << image.error().what();
  ASSERT_TRUE(vb.freeze(FREEZE_NS));
  const uint64_t uploads_before = tracker(*b).stats().upload_bytes;
  ASSERT_TRUE(move_vgpu(*a, *b));
  EXPECT_EQ(vb.device_only_bytes(), 0u);
  figure("import_upload_bytes", tracker(*b).stats().upload_bytes - uploads_before);
  EXPECT_EQ(tracker(*b).stats().upload_bytes, uploads_before) << "the import uploads nothing";
  Result<std::vector<uint8_t>> again = vb.export_image();
  ASSERT_TRUE(again) << again.error().what();
  EXPECT_EQ(*again, *image) << "the destination's state is the frozen source's";
  vb.thaw();
  port.move_to(&b->port(0));
  ASSERT_TRUE(chain.submit(JOBS_AFTER));
  Result<std::vector<std::byte>> out = chain.result();
  ASSERT_TRUE(out) << out.error().what();
  figure("lazy_upload_bytes_after_resume", tracker(*b).stats().upload_bytes - uploads_before);
  EXPECT_GT(tracker(*b).stats().upload_bytes, uploads_before) << "the first jobs uploaded lazily";
  Result<std::vector<std::byte>> reference = unmoved_output(JOBS_BEFORE + JOBS_BETWEEN + JOBS_AFTER);
  ASSERT_TRUE(reference) << reference.error().what();
  EXPECT_EQ(*out, *reference);
  RecordProperty("result_equals_unmoved", *out == *reference ? "yes" : "no");
  figure("uploads_that_waited_for_a_cpu_store", tracker(*a).writer_waits() + tracker(*b).writer_waits());
  std::vector<float> fill(FILL_COUNT);
  ASSERT_TRUE(chain.ctx->download(*filled, std::span<float>(fill)));
  EXPECT_EQ(std::count(fill.begin(), fill.end(), REFILL_VALUE), FILL_COUNT);
}

}  // namespace
}  // namespace vgpu::mediator::moving
