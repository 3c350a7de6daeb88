// SPDX-License-Identifier: GPL-2.0-or-later
// The C API's migration calls (docs/migration.md §14, M5's back-end half):
// refusals with the reason for the back ends that cannot migrate, the
// dirty log over guest VRAM, freeze and thaw, and a state image moved
// between two embedded devices.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "capi/testing/trapped_port.h"
#include "capi/vgpu_capi.h"
#include "driver/runtime.h"
#include "vgpu/bits.h"
#include "vgpu/regs.h"

namespace {

using namespace vgpu;

constexpr uint64_t VRAM = 64 * MiB;
constexpr uint64_t PAGE = 4096;
constexpr size_t BITMAP_WORDS = VRAM / PAGE / 64;
constexpr uint64_t PRAMIN_AT = 3 * MiB;  // a window base: 1 MiB aligned
constexpr uint32_t WORD_IN_WINDOW = 5 * PAGE + 8;
constexpr uint32_t INTR_MASK = 0x00ff00ffu;
constexpr uint32_t FREEZE_MS = 2000;
constexpr uint64_t FILL_BYTES = 1 * MiB;
constexpr uint64_t WRITE_BACK_BUDGET = 64 * MiB;  // save_live_iterate's

struct Destroy {
  void operator()(VgpuBackend* b) const { vgpu_backend_destroy(b); }
};
using BackendPtr = std::unique_ptr<VgpuBackend, Destroy>;

BackendPtr make(VgpuMode mode, uint64_t vram = VRAM) {
  VgpuBackendConfig c;
  vgpu_backend_config_init(&c);  // every option at the table's default
  c.vram_bytes = vram;
  c.channels = 8;
  c.mode = mode;
  c.bar_remap = true;
  c.lazy_shadow = true;
  c.scheduler = "fifo";
  c.weight = 1;
  char err[256] = {};
  BackendPtr b(vgpu_backend_create(&c, err, sizeof err));
  EXPECT_NE(b, nullptr) << err;
  return b;
}

// A VRAM word written through BAR0's PRAMIN window (a trapped, host-side write).
void pramin_write(VgpuBackend* b, uint64_t vram_addr_of_window, uint32_t off, uint32_t value) {
  vgpu_backend_bar0_write32(b, regs::pbus::PRAMIN_WINDOW.offset,
                            static_cast<uint32_t>(vram_addr_of_window >> regs::pbus::PRAMIN_BASE_SHIFT));
  vgpu_backend_bar0_write32(b, regs::pramin::BASE + off, value);
}

TEST(CapiMigration, PassthroughRefusesWithTheReason) {
  BackendPtr b = make(VGPU_MODE_PASSTHROUGH);
  ASSERT_TRUE(b);
  const std::string why =
      "vgpu: migration needs mode=fv (passthrough exposes the whole model, whose global state has no export)";
  char err[256] = {};
  EXPECT_EQ(vgpu_backend_migratable(b.get(), err, sizeof err), -1);
  EXPECT_EQ(std::string(err), why);
  err[0] = 0;
  EXPECT_EQ(vgpu_backend_freeze(b.get(), FREEZE_MS, err, sizeof err), -1);
  EXPECT_EQ(std::string(err), why);
  uint8_t* data = nullptr;
  size_t len = 0;
  EXPECT_EQ(vgpu_backend_save_state(b.get(), &data, &len, err, sizeof err), -1);
  EXPECT_EQ(data, nullptr);
  std::vector<uint64_t> bitmap(BITMAP_WORDS);
  EXPECT_EQ(vgpu_backend_dirty_log_take(b.get(), bitmap.data(), bitmap.size()), -1);
}

TEST(CapiMigration, DirtyLogHasThePagesTheDeviceWrote) {
  BackendPtr b = make(VGPU_MODE_FV);
  ASSERT_TRUE(b);
  char err[256] = {};
  ASSERT_EQ(vgpu_backend_migratable(b.get(), err, sizeof err), 0) << err;
  std::vector<uint64_t> bitmap(BITMAP_WORDS);
  pramin_write(b.get(), PRAMIN_AT, WORD_IN_WINDOW, 1);  // before logging: not marked
  ASSERT_EQ(vgpu_backend_dirty_log_start(b.get(), err, sizeof err), 0) << err;
  EXPECT_EQ(vgpu_backend_dirty_log_take(b.get(), bitmap.data(), bitmap.size()), 0);
  pramin_write(b.get(), PRAMIN_AT, WORD_IN_WINDOW, 2);
  EXPECT_EQ(vgpu_backend_dirty_log_take(b.get(), bitmap.data(), bitmap.size()), 1);
  const uint64_t page = (PRAMIN_AT + WORD_IN_WINDOW) / PAGE;  // guest VRAM page
  EXPECT_EQ(bitmap[page / 64], uint64_t{1} << (page % 64));
  std::fill(bitmap.begin(), bitmap.end(), 0);
  EXPECT_EQ(vgpu_backend_dirty_log_take(b.get(), bitmap.data(), bitmap.size()), 0) << "a take clears";
  EXPECT_EQ(vgpu_backend_dirty_log_take(b.get(), bitmap.data(), bitmap.size() - 1), -1) << "bitmap too short";
  vgpu_backend_dirty_log_stop(b.get());
  pramin_write(b.get(), PRAMIN_AT, WORD_IN_WINDOW, 3);
  EXPECT_EQ(vgpu_backend_dirty_log_take(b.get(), bitmap.data(), bitmap.size()), 0) << "marked after the stop";
}

TEST(CapiMigration, StateMovesToASecondDeviceAndAMismatchIsRefused) {
  BackendPtr a = make(VGPU_MODE_FV);
  BackendPtr b = make(VGPU_MODE_FV);
  BackendPtr other = make(VGPU_MODE_FV, 2 * VRAM);
  ASSERT_TRUE(a && b && other);
  vgpu_backend_bar0_write32(a.get(), regs::pmc::INTR_MASK_0.offset, INTR_MASK);
  char err[256] = {};
  ASSERT_EQ(vgpu_backend_freeze(a.get(), FREEZE_MS, err, sizeof err), 0) << err;
  uint8_t* data = nullptr;
  size_t len = 0;
  ASSERT_EQ(vgpu_backend_save_state(a.get(), &data, &len, err, sizeof err), 0) << err;
  vgpu_backend_thaw(a.get());
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(vgpu_backend_load_state(b.get(), data, len, err, sizeof err), 0) << err;
  EXPECT_EQ(vgpu_backend_bar0_read32(b.get(), regs::pmc::INTR_MASK_0.offset), INTR_MASK);
  EXPECT_EQ(vgpu_backend_load_state(other.get(), data, len, err, sizeof err), -1);
  EXPECT_EQ(std::string(err), "vgpu: migration image has vram=64 MiB, this device vram=128 MiB");
  EXPECT_EQ(vgpu_backend_load_state(b.get(), data, len / 2, err, sizeof err), -1);
  EXPECT_NE(std::string(err).find("ends at byte"), std::string::npos) << err;
  vgpu_backend_free_state(data);
}

// The guest's driver on a backend, every access trapped (no RAM: the
// driver needs none for work that stays in VRAM).
using capi::testing::TrappedPort;

// The fake device (what the C API refuses by name) is reached as the
// engines' environment override: set while the backend is made.
BackendPtr make_on_fake_device() {
  static constexpr const char* VAR = "VGPU_ENGINE_BACKEND";
  const char* old = std::getenv(VAR);
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  setenv(VAR, "fake_device", 1);
  BackendPtr b = make(VGPU_MODE_FV);
  if (saved)
    setenv(VAR, saved->c_str(), 1);
  else
    unsetenv(VAR);
  return b;
}

// No VRAM on the device alone (vgpu_backend_device_only_bytes 0), and so
// nothing for a write-back pass to write or leave.
void expect_nothing_on_the_device_alone(VgpuBackend* b) {
  char err[256] = {};
  uint64_t bytes = 1, written = 1, left = 1;
  ASSERT_EQ(vgpu_backend_device_only_bytes(b, &bytes, err, sizeof err), 0) << err;
  EXPECT_EQ(bytes, 0u);
  ASSERT_EQ(vgpu_backend_write_back(b, WRITE_BACK_BUDGET, &written, &left, err, sizeof err), 0) << err;
  EXPECT_EQ(written, 0u);
  EXPECT_EQ(left, 0u);
}

// The model's engines keep nothing on a device: nothing to write back.
TEST(CapiMigration, TheModelHasNoDeviceOnlyVram) {
  BackendPtr b = make(VGPU_MODE_FV);
  ASSERT_TRUE(b);
  ASSERT_NO_FATAL_FAILURE(expect_nothing_on_the_device_alone(b.get()));
  BackendPtr pt = make(VGPU_MODE_PASSTHROUGH);
  ASSERT_TRUE(pt);
  char err[256] = {};
  uint64_t bytes = 1;
  EXPECT_EQ(vgpu_backend_device_only_bytes(pt.get(), &bytes, err, sizeof err), -1);
  EXPECT_NE(std::string(err).find("migration needs mode=fv"), std::string::npos) << err;
}

// A device back end (the fake one, as CUDA would) under the C API: the
// partition is its own memfd, which the front end maps, so every page of
// it is direct-mapped and engine writes are downloaded when the work ends
// (docs/cuda.md): nothing is ever left on the device alone, and those
// downloads (queued on the work's stream) are in the dirty log.
TEST(CapiMigration, AnEmbeddedDevicePartitionHasNoDeviceOnlyVramAndItsDownloadsAreLogged) {
  BackendPtr b = make_on_fake_device();
  ASSERT_TRUE(b);
  TrappedPort port(b.get());
  auto dev = driver::Device::open(port);
  ASSERT_TRUE(dev) << dev.error().what();
  auto ctx = (*dev)->create_context();
  ASSERT_TRUE(ctx) << ctx.error().what();
  auto buf = (*ctx)->alloc(FILL_BYTES);
  ASSERT_TRUE(buf);
  char err[256] = {};
  ASSERT_EQ(vgpu_backend_dirty_log_start(b.get(), err, sizeof err), 0) << err;
  std::vector<uint64_t> bitmap(BITMAP_WORDS);
  (void)vgpu_backend_dirty_log_take(b.get(), bitmap.data(), bitmap.size());
  ASSERT_TRUE((*ctx)->fill({.dst = *buf, .count = FILL_BYTES / sizeof(float), .value = 2.0f}));
  ASSERT_TRUE((*ctx)->synchronize());

  ASSERT_NO_FATAL_FAILURE(expect_nothing_on_the_device_alone(b.get()));
  std::fill(bitmap.begin(), bitmap.end(), 0);
  EXPECT_GE(vgpu_backend_dirty_log_take(b.get(), bitmap.data(), bitmap.size()), static_cast<int64_t>(FILL_BYTES / PAGE))
      << "the fill's downloads are logged";
  ASSERT_EQ(vgpu_backend_freeze(b.get(), FREEZE_MS, err, sizeof err), 0) << err;
  vgpu_backend_thaw(b.get());
  vgpu_backend_dirty_log_stop(b.get());
  std::vector<float> out(FILL_BYTES / sizeof(float));
  ASSERT_TRUE((*ctx)->download(*buf, std::span<float>(out)));
  EXPECT_EQ(std::count(out.begin(), out.end(), 2.0f), static_cast<ptrdiff_t>(out.size()));
}

}  // namespace
