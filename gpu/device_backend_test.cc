// SPDX-License-Identifier: GPL-2.0-or-later
// The device back end end to end through PFIFO and the engine threads, on
// the fake device (docs/cuda.md): the copy engine's work runs on the
// device mirror, and what a guest sees through CPU paths (trapped, or a
// BAR's direct mapping, which the model never hears of) stays right.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "gpu/device/backend.h"
#include "gpu/device/fake_device.h"
#include "gpu/mem/system_memory.h"
#include "gpu/testing/harness.h"
#include "vgpu/classes.h"

namespace vgpu::gpu {
namespace {

using namespace regs;
using namespace cls::copy;
using testing::Harness;
using namespace testing::copy_layout;
constexpr uint64_t SHARED_OFF = testing::DATA_OFF + 0x30000;

std::vector<uint32_t> copy_push(const testing::Channel& c, uint64_t src, uint64_t dst, uint32_t payload) {
  return testing::copy_line(COPY_SUBCH, src, dst, BYTES, c.va(SEM_OFF), payload);
}

// A guest's direct mapping: plain memory, no hook.
uint32_t raw_read(Vram& v, uint64_t addr) {
  uint32_t x;
  std::memcpy(&x, v.data() + addr, sizeof x);
  return x;
}
void raw_write(Vram& v, uint64_t addr, uint32_t x) { std::memcpy(v.data() + addr, &x, sizeof x); }

struct DeviceHarness : Harness {
  DeviceHarness() : Harness(ClockKind::real, EngineBackend::fake_device) {}
  FakeDevice& dev() { return *dynamic_cast<FakeDevice*>(gpu().device()); }
  ResidencyTracker& res() { return *gpu().residency(); }
};

TEST(DeviceBackend, CopyRunsOnTheDeviceAndTheHostSeesItsResult) {
  DeviceHarness h;
  auto& c = h.add_channel(3);
  h.commit_runlist({3});
  for (uint32_t i = 0; i < BYTES; i += 4) (void)h.vram().write32(c.phys(SRC_OFF + i), i * 3 + 1);
  h.submit(c, copy_push(c, c.va(SRC_OFF), c.va(DST_OFF), 0x5e));
  ASSERT_TRUE(h.idle());
  ASSERT_EQ(h.chan_error(3), 0u);
  EXPECT_EQ(h.res().state(c.phys(DST_OFF)), Residency::device);  // the result stayed on the device
  EXPECT_EQ(h.dev().stats().device_copies, 1u);
  for (uint32_t i = 0; i < BYTES; i += 4) ASSERT_EQ(h.vram().read32(c.phys(DST_OFF + i)), i * 3 + 1);
  EXPECT_EQ(h.res().state(c.phys(DST_OFF)), Residency::both);  // read back on demand
  EXPECT_EQ(h.vram().read32(c.phys(SEM_OFF)), 0x5eu);
}

TEST(DeviceBackend, BarTranslateMarksThePageDirect) {
  DeviceHarness h;
  EXPECT_FALSE(h.res().direct(testing::USERD_PHYS));
  ASSERT_TRUE(h.gpu().bar_translate(Bar::bar1, testing::USERD_BAR1).has_value());
  EXPECT_TRUE(h.res().direct(testing::USERD_PHYS));
}

TEST(DeviceBackend, GuestWritesADirectMappedInputBetweenTwoLaunches) {
  DeviceHarness h;
  auto& c = h.add_channel(1);
  h.commit_runlist({1});
  h.res().mark_direct(c.phys(SRC_OFF), BYTES);
  raw_write(h.vram(), c.phys(SRC_OFF), 111);
  h.submit(c, copy_push(c, c.va(SRC_OFF), c.va(DST_OFF), 1));
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.vram().read32(c.phys(DST_OFF)), 111u);
  raw_write(h.vram(), c.phys(SRC_OFF), 222);  // unseen by the model
  h.submit(c, copy_push(c, c.va(SRC_OFF), c.va(DST_OFF), 2));
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.vram().read32(c.phys(DST_OFF)), 222u);
}

TEST(DeviceBackend, GuestReadsAResultThroughBar1RightAfterTheFence) {
  DeviceHarness h;
  auto& c = h.add_channel(1);
  h.commit_runlist({1});
  for (uint32_t i = 0; i < BYTES; i += 4) (void)h.vram().write32(c.phys(SRC_OFF + i), i + 9);
  h.res().mark_direct(c.phys(DST_OFF), BYTES);
  h.submit(c, copy_push(c, c.va(SRC_OFF), c.va(DST_OFF), 0x77));
  // Poll the fence the way a guest would, through its mapping.
  for (int i = 0; i < 2000000 && raw_read(h.vram(), c.phys(SEM_OFF)) != 0x77; ++i) std::this_thread::yield();
  ASSERT_EQ(raw_read(h.vram(), c.phys(SEM_OFF)), 0x77u);
  for (uint32_t i = 0; i < BYTES; i += 4) ASSERT_EQ(raw_read(h.vram(), c.phys(DST_OFF + i)), i + 9);
  ASSERT_TRUE(h.idle());
}

TEST(DeviceBackend, TwoChannelsShareABufferOnTheDevice) {
  DeviceHarness h;
  auto& a = h.add_channel(1);
  auto& b = h.add_channel(2);
  h.commit_runlist({1, 2});
  // b's SHARED window is a's DST pages.
  ASSERT_TRUE(h.tables().map(b.pd, b.va(SHARED_OFF), a.phys(DST_OFF), BYTES, fmt::PageSize::small).has_value());
  for (uint32_t i = 0; i < BYTES; i += 4) (void)h.vram().write32(a.phys(SRC_OFF + i), i ^ 0x5a5a);
  h.submit(a, copy_push(a, a.va(SRC_OFF), a.va(DST_OFF), 1));
  ASSERT_TRUE(h.idle());
  const uint64_t downloads = h.dev().stats().downloads;
  h.submit(b, copy_push(b, b.va(SHARED_OFF), b.va(DST_OFF), 1));
  ASSERT_TRUE(h.idle());
  ASSERT_EQ(h.chan_error(2), 0u);
  // The shared bytes went from a's work to b's on the device: no download
  // of them (only semaphore pages, written on the host, moved).
  EXPECT_EQ(h.res().state(a.phys(DST_OFF)), Residency::device);
  EXPECT_LE(h.dev().stats().downloads - downloads, 1u);
  for (uint32_t i = 0; i < BYTES; i += 4) ASSERT_EQ(h.vram().read32(b.phys(DST_OFF + i)), i ^ 0x5a5au);
}

// The fence after device work (docs/cuda.md, "Fences"): a one-word host
// release right after the copy, which has no release of its own.
std::vector<uint32_t> copy_then_fence(uint64_t src, uint64_t dst, uint64_t fence, uint32_t payload) {
  std::vector<uint32_t> w = testing::copy_line(COPY_SUBCH, src, dst, BYTES, fence, payload);
  w.back() = LaunchTransferType::make(uint32_t(Transfer::non_pipelined)) | LaunchSrcPitch::mask | LaunchDstPitch::mask;
  const std::vector<uint32_t> release = testing::sem_release(fence, payload, true);
  w.insert(w.end(), release.begin(), release.end());
  return w;
}

TEST(DeviceBackend, TheFenceAfterDeviceWorkIsWrittenByTheDeviceAndNotAgain) {
  DeviceHarness h;
  auto& c = h.add_channel(1);
  h.commit_runlist({1});
  h.res().mark_direct(c.phys(SEM_OFF), sizeof(uint32_t));  // the guest polls it through BAR1
  for (uint32_t payload = 1; payload <= 3; ++payload) {
    h.submit(c, copy_then_fence(c.va(SRC_OFF), c.va(DST_OFF), c.va(SEM_OFF), payload));
    ASSERT_TRUE(h.idle());
    ASSERT_EQ(h.chan_error(1), 0u);
    EXPECT_EQ(raw_read(h.vram(), c.phys(SEM_OFF)), payload);
  }
  EXPECT_EQ(h.dev().stats().host_word_writes, 3u);
  EXPECT_EQ(h.gpu().device_releases(), 3u);
}

TEST(DeviceBackend, AFenceOnAPageNoBarMapsIsReleasedByPfifo) {
  DeviceHarness h;
  auto& c = h.add_channel(1);
  h.commit_runlist({1});
  h.submit(c, copy_then_fence(c.va(SRC_OFF), c.va(DST_OFF), c.va(SEM_OFF), 9));
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.vram().read32(c.phys(SEM_OFF)), 9u);
  EXPECT_EQ(h.dev().stats().host_word_writes, 0u);  // its device copy is trusted: not behind the tracker
  EXPECT_EQ(h.gpu().device_releases(), 0u);
}

TEST(DeviceBackend, AHostReleaseAfterACopysOwnReleaseIsLeftToPfifo) {
  DeviceHarness h;
  auto& c = h.add_channel(1);
  h.commit_runlist({1});
  h.res().mark_direct(c.phys(SEM_OFF), 2 * sizeof(uint32_t));
  std::vector<uint32_t> w = copy_push(c, c.va(SRC_OFF), c.va(DST_OFF), 4);  // the copy releases 4 at SEM_OFF
  const std::vector<uint32_t> release = testing::sem_release(c.va(SEM_OFF + 4), 5, true);
  w.insert(w.end(), release.begin(), release.end());
  h.submit(c, w);
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(raw_read(h.vram(), c.phys(SEM_OFF)), 4u);
  EXPECT_EQ(raw_read(h.vram(), c.phys(SEM_OFF + 4)), 5u);
  EXPECT_EQ(h.dev().stats().host_word_writes, 0u);  // it would pass the copy's own release
}

// The fence is visible before the engine thread sees the work finish: a
// CPU read of the result through a trapped path must still get it.
TEST(DeviceBackend, ATrappedReadRightAfterADeviceFenceSeesTheResult) {
  DeviceHarness h;
  auto& c = h.add_channel(1);
  h.commit_runlist({1});
  h.res().mark_direct(c.phys(SEM_OFF), sizeof(uint32_t));
  for (uint32_t i = 0; i < BYTES; i += 4) (void)h.vram().write32(c.phys(SRC_OFF + i), i * 7 + 3);
  (void)h.vram().write32(c.phys(DST_OFF), 0xdead);
  h.res().prepare_read(c.phys(DST_OFF), BYTES);  // the old bytes are on both sides
  h.dev().set_sync_delay(50'000'000);
  h.submit(c, copy_then_fence(c.va(SRC_OFF), c.va(DST_OFF), c.va(SEM_OFF), 1));
  for (int i = 0; i < 2000000 && raw_read(h.vram(), c.phys(SEM_OFF)) != 1; ++i) std::this_thread::yield();
  ASSERT_EQ(raw_read(h.vram(), c.phys(SEM_OFF)), 1u);
  EXPECT_EQ(h.res().state(c.phys(DST_OFF)), Residency::writing);  // the engine has not seen it finish
  for (uint32_t i = 0; i < BYTES; i += 4) ASSERT_EQ(h.vram().read32(c.phys(DST_OFF + i)), i * 7 + 3);
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.gpu().device_releases(), 1u);
}

// PFIFO's own execution of a release the GPU wrote must write nothing: a
// channel that saw the GPU's value may have released a later one since.
TEST(DeviceBackend, ALaterReleaseOfAnotherChannelIsNotUndone) {
  DeviceHarness h;
  auto& a = h.add_channel(1);
  auto& b = h.add_channel(2);
  h.commit_runlist({1, 2});
  // b's SHARED window is a's semaphore page.
  ASSERT_TRUE(h.tables().map(b.pd, b.va(SHARED_OFF), a.phys(SEM_OFF), 0x1000, fmt::PageSize::small).has_value());
  h.res().mark_direct(a.phys(SEM_OFF), sizeof(uint32_t));
  std::vector<uint32_t> then = testing::sem_acquire(b.va(SHARED_OFF), 1, cls::host::SemOp::acquire);
  const std::vector<uint32_t> release = testing::sem_release(b.va(SHARED_OFF), 2, true);
  then.insert(then.end(), release.begin(), release.end());
  h.dev().set_sync_delay(50'000'000);  // a's engine sees its work finish late
  h.submit(b, then);
  h.submit(a, copy_then_fence(a.va(SRC_OFF), a.va(DST_OFF), a.va(SEM_OFF), 1));
  ASSERT_TRUE(h.idle());
  ASSERT_EQ(h.chan_error(1), 0u);
  ASSERT_EQ(h.chan_error(2), 0u);
  EXPECT_EQ(h.gpu().device_releases(), 1u);
  EXPECT_EQ(raw_read(h.vram(), a.phys(SEM_OFF)), 2u);
}

// System memory the GPU reaches is registered with its device while it is
// reachable (docs/cuda.md, "System memory"): GpuConfig::sysmem at
// creation, set_system_memory later, bus windows as they come and go.
class RecordingMemory final : public SystemMemory {
 public:
  bool contains(uint64_t, uint64_t len) const override { return len == 0; }
  bool read(uint64_t, void*, uint64_t len) override { return len == 0; }
  bool write(uint64_t, const void*, uint64_t len) override { return len == 0; }
  void attach(DmaRegistrar&) override { ++attached; }
  void detach(DmaRegistrar&) override { ++detached; }
  int attached = 0, detached = 0;
};

TEST(DeviceBackend, ConfiguredSystemMemoryIsAttachedForTheGpusLife) {
  auto mem = std::make_shared<RecordingMemory>();
  {
    auto g = GpuModel::create(GpuConfig{.vram_bytes = 16 * MiB, .backend = EngineBackend::fake_device, .sysmem = mem});
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(mem->attached, 1);
    EXPECT_EQ(mem->detached, 0);
  }
  EXPECT_EQ(mem->detached, 1);
}

TEST(DeviceBackend, SystemMemoryIsRegisteredWhileReachable) {
  DeviceHarness h;
  auto a = MemfdRam::create(1 * MiB, "a");
  auto b = MemfdRam::create(2 * MiB, "b");
  ASSERT_TRUE(a && b);
  h.gpu().set_system_memory(*a);
  EXPECT_EQ(h.dev().stats().registered_mappings, 1u);
  EXPECT_EQ(h.dev().stats().registered_bytes, 1 * MiB);
  auto bus = std::make_shared<BusMap>();
  h.gpu().set_system_memory(bus);
  EXPECT_EQ(h.dev().stats().registered_mappings, 0u);  // a is no longer reachable
  ASSERT_TRUE(bus->add(16 * GiB, 2 * MiB, *b, 0).has_value());
  EXPECT_EQ(h.dev().stats().registered_bytes, 2 * MiB);
  bus->remove(16 * GiB);
  EXPECT_EQ(h.dev().stats().registered_mappings, 0u);
  EXPECT_EQ(h.dev().stats().host_registrations, 2u);
}

// A buffer's placement is reused while the MMU is not invalidated (the
// TLB's rule), and walked again after: a remapped source is read from its
// new pages.
TEST(DeviceBackend, APlacementIsReusedUntilTheMmuIsInvalidated) {
  DeviceHarness h;
  auto& c = h.add_channel(1);
  h.commit_runlist({1});
  (void)h.vram().write32(c.phys(SRC_OFF), 1111);
  (void)h.vram().write32(c.phys(SHARED_OFF), 2222);
  h.submit(c, copy_push(c, c.va(SRC_OFF), c.va(DST_OFF), 1));
  ASSERT_TRUE(h.idle());
  const uint64_t first = *h.gpu().placement_hits();
  h.submit(c, copy_push(c, c.va(SRC_OFF), c.va(DST_OFF), 2));
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(*h.gpu().placement_hits(), first + 2);  // source and destination
  EXPECT_EQ(h.vram().read32(c.phys(DST_OFF)), 1111u);
  // The source VA now names SHARED's pages; the invalidate drops the placement.
  ASSERT_TRUE(h.tables().map(c.pd, c.va(SRC_OFF), c.phys(SHARED_OFF), BYTES, fmt::PageSize::small).has_value());
  h.wr(mmu::INVALIDATE, mmu::InvalidateTrigger::mask | mmu::InvalidatePageAll::mask | mmu::InvalidateAllPdb::mask);
  h.submit(c, copy_push(c, c.va(SRC_OFF), c.va(DST_OFF), 3));
  ASSERT_TRUE(h.idle());
  ASSERT_EQ(h.chan_error(1), 0u);
  EXPECT_EQ(*h.gpu().placement_hits(), first + 2);
  EXPECT_EQ(h.vram().read32(c.phys(DST_OFF)), 2222u);
}

// Without the cuda back end built, or without a GPU, asking for it is a
// configuration error that says which.
TEST(DeviceBackend, CudaWhereItIsNotBuiltOrNoGpuFailsWithAClearMessage) {
  auto g = GpuModel::create(GpuConfig{.vram_bytes = 16 * MiB, .backend = EngineBackend::cuda});
  if (g.has_value()) GTEST_SKIP() << "a GPU is present: " << (*g)->device()->name();
  const std::string m = g.error().what();
  if (cuda_backend_built())
    EXPECT_NE(m.find("engine back end 'cuda': no usable GPU: "), std::string::npos) << m;
  else
    EXPECT_NE(m.find("engine back end 'cuda' is not built into this binary"), std::string::npos) << m;
}

// Sets an environment variable for a scope, then puts it back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* before = std::getenv(name);
    if (before) saved_ = before;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (saved_)
      setenv(name_, saved_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

// GpuModel::create with name=value in the environment fails, saying `message`.
void expect_create_refuses(const char* name, const char* value, const std::string& message) {
  ScopedEnv bad(name, value);
  auto g = GpuModel::create(GpuConfig{.vram_bytes = 16 * MiB});
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(std::string(g.error().what()).find(message), std::string::npos) << g.error().what();
}

TEST(DeviceBackend, UnknownBackendInTheEnvironmentIsAnError) {
  expect_create_refuses("VGPU_ENGINE_BACKEND", "gpu", "VGPU_ENGINE_BACKEND: 'gpu' is not one of");
}

TEST(DeviceBackend, DeviceFencesOffLeavesEveryReleaseToPfifo) {
  ScopedEnv off("VGPU_DEVICE_FENCES", "off");
  DeviceHarness h;
  auto& c = h.add_channel(1);
  h.commit_runlist({1});
  h.res().mark_direct(c.phys(SEM_OFF), sizeof(uint32_t));
  h.submit(c, copy_then_fence(c.va(SRC_OFF), c.va(DST_OFF), c.va(SEM_OFF), 6));
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(raw_read(h.vram(), c.phys(SEM_OFF)), 6u);
  EXPECT_EQ(h.dev().stats().host_word_writes, 0u);
  EXPECT_EQ(h.gpu().device_releases(), 0u);
}

TEST(DeviceBackend, AnUnknownDeviceFencesValueIsAnError) {
  expect_create_refuses("VGPU_DEVICE_FENCES", "maybe", "VGPU_DEVICE_FENCES: 'maybe' is neither on nor off");
}

TEST(DeviceBackend, BackendNamesParse) {
  EXPECT_EQ(parse_engine_backend("cuda"), EngineBackend::cuda);
  EXPECT_EQ(parse_engine_backend("model"), EngineBackend::model);
  EXPECT_EQ(parse_engine_backend("fake_device"), EngineBackend::fake_device);
  EXPECT_FALSE(parse_engine_backend("gpu").has_value());
}

}  // namespace
}  // namespace vgpu::gpu
