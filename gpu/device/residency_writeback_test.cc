// SPDX-License-Identifier: GPL-2.0-or-later
// The residency tracker's migration side (docs/migration.md §8) with the
// fake device: write_back moves device-only pages home within a budget
// and marks them dirty, device_only_bytes counts what is left, and a
// stream's download is marked after the stream is synchronized, not
// when it is queued.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "gpu/device/fake_device.h"
#include "gpu/device/residency.h"

namespace vgpu::gpu {
namespace {

constexpr uint64_t PAGE = ResidencyTracker::PAGE;
constexpr uint64_t PAGES = 64;
constexpr uint64_t SMALL_PER_PAGE = PAGE / DirtyLog::PAGE;
constexpr uint64_t NO_BUDGET = std::numeric_limits<uint64_t>::max();
constexpr uint32_t STREAM = 1;

struct Fixture {
  std::unique_ptr<Vram> vram = std::move(*Vram::create(PAGES * PAGE));
  FakeDevice dev{*vram};
  ResidencyTracker res{vram->size(), dev, &vram->dirty_log()};
  Fixture() {
    vram->set_observer(&res);
    vram->dirty_log().start();
  }
  ~Fixture() {
    vram->dirty_log().stop();
    vram->set_observer(nullptr);
  }
  uint32_t guest_word(uint64_t addr) {
    uint32_t v;
    std::memcpy(&v, vram->data() + addr, sizeof v);
    return v;
  }
  void engine_writes(uint64_t addr, uint32_t v) {
    res.prepare_write(addr, sizeof v, false);
    std::memcpy(dev.mirror(addr), &v, sizeof v);
    res.finish_write(addr, sizeof v);
  }
  // The dirty log's marks (cleared), one bit per 4 KiB page.
  std::vector<uint64_t> take() {
    std::vector<uint64_t> bits(PAGES * SMALL_PER_PAGE / DirtyLog::PAGES_PER_WORD);
    (void)vram->dirty_log().take(0, vram->size(), bits);
    return bits;
  }
  // Tracker pages every 4 KiB page of which is marked.
  static std::vector<uint64_t> marked_pages(const std::vector<uint64_t>& bits) {
    std::vector<uint64_t> pages;
    for (uint64_t p = 0; p < PAGES; ++p) {
      bool all = true;
      for (uint64_t s = p * SMALL_PER_PAGE; s < (p + 1) * SMALL_PER_PAGE; ++s)
        all = all && ((bits[s / 64] >> (s % 64)) & 1);
      if (all) pages.push_back(p);
    }
    return pages;
  }
};

TEST(ResidencyWriteBack, MovesDevicePagesWithinTheBudgetAndMarksThemDirty) {
  Fixture f;
  const std::vector<uint64_t> written = {1, 2, 3, 5};
  for (uint64_t p : written) f.engine_writes(p * PAGE, static_cast<uint32_t>(0x100 + p));
  EXPECT_EQ(f.res.device_only_bytes(), written.size() * PAGE);
  EXPECT_EQ(f.res.device_only_bytes(0, f.vram->size()), written.size() * PAGE);
  EXPECT_EQ(f.res.device_only_bytes(4 * PAGE, 2 * PAGE), PAGE);
  (void)f.take();  // whatever the uploads' set-up marked

  const WriteBack first = f.res.write_back(0, f.vram->size(), 2 * PAGE);
  EXPECT_EQ(first.bytes, 2 * PAGE);
  EXPECT_EQ(first.left, 2 * PAGE);
  EXPECT_EQ(f.res.state(1 * PAGE), Residency::both);
  EXPECT_EQ(f.res.state(2 * PAGE), Residency::both);
  EXPECT_EQ(f.res.state(3 * PAGE), Residency::device);
  EXPECT_EQ(f.guest_word(1 * PAGE), 0x101u);
  EXPECT_EQ(Fixture::marked_pages(f.take()), (std::vector<uint64_t>{1, 2}));

  const WriteBack rest = f.res.write_back(0, f.vram->size(), NO_BUDGET);
  EXPECT_EQ(rest.bytes, 2 * PAGE);
  EXPECT_EQ(rest.left, 0u);
  EXPECT_EQ(f.res.device_only_bytes(), 0u);
  EXPECT_EQ(f.guest_word(5 * PAGE), 0x105u);
  EXPECT_EQ(Fixture::marked_pages(f.take()), (std::vector<uint64_t>{3, 5}));
  EXPECT_EQ(f.res.write_back(0, f.vram->size(), NO_BUDGET).bytes, 0u) << "nothing device-only is left";
}

TEST(ResidencyWriteBack, LeavesPagesBeingWrittenToTheirWork) {
  Fixture f;
  constexpr uint64_t AT = 7 * PAGE;
  f.res.prepare_write(AT, sizeof(uint32_t), false);
  f.res.begin_write(AT, sizeof(uint32_t));
  EXPECT_EQ(f.res.device_only_bytes(), PAGE);
  const WriteBack w = f.res.write_back(0, f.vram->size(), NO_BUDGET);
  EXPECT_EQ(w.bytes, 0u);
  EXPECT_EQ(w.left, PAGE);
  EXPECT_EQ(f.res.state(AT), Residency::writing);
  f.res.finish_write(AT, sizeof(uint32_t));
  EXPECT_EQ(f.res.state(AT), Residency::device);
  EXPECT_EQ(f.res.device_only_bytes(), PAGE);
  // A CPU read brings it home: the counter follows every transition.
  (void)f.vram->read32(AT);
  EXPECT_EQ(f.res.device_only_bytes(), 0u);
}

TEST(ResidencyWriteBack, AStreamDownloadIsMarkedAfterItsSynchronizeNotWhenQueued) {
  Fixture f;
  constexpr uint64_t AT = 4 * PAGE;
  constexpr uint32_t VALUE = 0xfeed;
  f.res.mark_direct(AT, PAGE);
  (void)f.take();
  f.res.prepare_write(AT, sizeof VALUE, false, STREAM);
  std::memcpy(f.dev.mirror(AT), &VALUE, sizeof VALUE);
  const uint64_t queued = f.res.queue_direct_downloads(AT, sizeof VALUE, STREAM);
  // A real device's copy may not have happened yet: no mark may exist.
  std::vector<uint64_t> none(PAGES * SMALL_PER_PAGE / DirtyLog::PAGES_PER_WORD);
  EXPECT_EQ(f.take(), none);
  f.res.finish_write(AT, sizeof VALUE, queued);  // the stream is synchronized
  const std::vector<uint64_t> bits = f.take();
  const uint64_t small = AT / DirtyLog::PAGE;
  EXPECT_TRUE((bits[small / 64] >> (small % 64)) & 1);
  EXPECT_EQ(f.guest_word(AT), VALUE);
}

}  // namespace
}  // namespace vgpu::gpu
