// SPDX-License-Identifier: GPL-2.0-or-later
// A host view mapped for writing (Mmu::map_range: copies and built-in
// kernels on the host) holds VRAM pointers across a whole piece of work.
// An engine's upload of one of its pages meanwhile must wait for the
// view's stores (else the device gets the page without them and a later
// download puts the stale copy over the host), and must wait with the
// tracker's lock free, since the view's holder may need the lock for
// another page before its view goes (docs/migration.md §8, "Host views
// and user kernels").
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "gpu/device/fake_device.h"
#include "gpu/device/residency.h"
#include "gpu/mem/testing/page_tables.h"

namespace vgpu::gpu {
namespace {

constexpr uint64_t PAGE = ResidencyTracker::PAGE;
constexpr uint64_t DATA = 32 * PAGE;   // the view's bytes
constexpr uint64_t OTHER = 48 * PAGE;  // a device-only page the view's holder reads
constexpr uint64_t VA = 0x100000;
constexpr uint32_t OLD = 0x01d, NEW = 0xbeef, ON_DEVICE = 7;
// At most this long for a thread to reach the state the test waits for (a
// bound for a stalled machine, not a timing).
constexpr auto LIMIT = std::chrono::seconds(10);

template <typename Done>
bool wait_until(Done done) {
  const auto limit = std::chrono::steady_clock::now() + LIMIT;
  while (!done() && std::chrono::steady_clock::now() < limit) std::this_thread::yield();
  return done();
}

class ResidencyView : public testing::PageTablesTest {
 protected:
  void SetUp() override {
    make_tables(64 * PAGE, 0, 16 * PAGE);
    ASSERT_TRUE(builder->map(pd, VA, DATA, SMALL, fmt::PageSize::small).has_value());
    ASSERT_TRUE(vram->write32(DATA, OLD));
    dev.emplace(*vram);
    res.emplace(vram->size(), *dev);
    vram->set_observer(&*res);
    mmu.emplace(*vram);
  }
  void TearDown() override { vram->set_observer(nullptr); }

  // An engine thread's job that reads the view's page: prepare_read.
  void start_reader() {
    reader = std::thread([this] {
      res->prepare_read(DATA, sizeof OLD);
      read_done = true;
    });
  }
  uint32_t on_device(uint64_t addr) {
    uint32_t v;
    std::memcpy(&v, dev->mirror(addr), sizeof v);
    return v;
  }

  std::optional<FakeDevice> dev;
  std::optional<ResidencyTracker> res;
  std::optional<Mmu> mmu;
  std::thread reader;
  std::atomic<bool> read_done{false};
};

TEST_F(ResidencyView, AnUploadWaitsForTheStoresOfAViewMappedForWriting) {
  auto view = mmu->map_range(ce_access(), VA, SMALL, true);
  ASSERT_TRUE(view.has_value());
  ASSERT_NE(view->data(), nullptr);
  start_reader();
  // Either the upload finished with the store still to come (the bug), or
  // it waits for the view.
  wait_until([&] { return read_done.load() || res->writer_waits() > 0; });
  EXPECT_FALSE(read_done) << "the page was uploaded while a view held it for writing";
  const uint32_t value = NEW;
  std::memcpy(view->data(), &value, sizeof value);
  *view = HostView{};  // the view goes: its stores are done
  reader.join();
  EXPECT_EQ(vram->read32(DATA), NEW);
  EXPECT_EQ(on_device(DATA), NEW) << "the device's copy lacks the view's store";
}

TEST_F(ResidencyView, WhileAnUploadWaitsForAViewTheTrackersLockIsFree) {
  // OTHER is valid on the device only: a CPU read of it takes the lock and
  // downloads it (the view's holder reading another buffer, say).
  res->prepare_write(OTHER, sizeof ON_DEVICE, false);
  std::memcpy(dev->mirror(OTHER), &ON_DEVICE, sizeof ON_DEVICE);
  res->finish_write(OTHER, sizeof ON_DEVICE);
  ASSERT_EQ(res->state(OTHER), Residency::device);

  auto view = mmu->map_range(ce_access(), VA, SMALL, true);
  ASSERT_TRUE(view.has_value());
  start_reader();
  ASSERT_TRUE(wait_until([&] { return res->writer_waits() > 0; })) << "the upload did not wait for the view";
  std::atomic<bool> other_read{false};
  uint32_t other = 0;
  std::thread holder([&] {
    other = vram->read32(OTHER);
    other_read = true;
  });
  // Before the fix the waiting upload held the lock: this read waited for
  // the upload, which waited for the view (in one thread, a deadlock).
  EXPECT_TRUE(wait_until([&] { return other_read.load(); })) << "a CPU read waited for an upload that waits for a view";
  EXPECT_FALSE(read_done);
  *view = HostView{};
  holder.join();
  reader.join();
  EXPECT_EQ(other, ON_DEVICE);
  EXPECT_EQ(res->writer_waits(), 1u);
}

}  // namespace
}  // namespace vgpu::gpu
