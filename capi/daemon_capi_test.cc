// SPDX-License-Identifier: GPL-2.0-or-later
// The C API's daemon backend against a real vgpud (a separate process):
// the settings the daemon decides come back as the device's effective
// settings (QEMU's qom-get, its warning for a scheduler it does not run).
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "capi/vgpu_capi.h"
#include "vgpu/bits.h"
#include "vgpu/regs.h"
#include "vgpud/tests/daemon_process.h"

namespace {

using namespace vgpu;
using vgpu::vgpud::testing::DaemonProcess;

struct Destroy {
  void operator()(VgpuBackend* b) const { vgpu_backend_destroy(b); }
};
using BackendPtr = std::unique_ptr<VgpuBackend, Destroy>;

BackendPtr attach(const std::string& socket, const char* vm_name, bool incoming = false) {
  VgpuBackendConfig c;
  vgpu_backend_config_init(&c);
  c.vram_bytes = 64 * MiB;
  c.channels = 8;
  c.mode = VGPU_MODE_FV;
  c.socket = socket.c_str();
  c.vm_name = vm_name;
  c.incoming = incoming;
  char err[256] = {};
  BackendPtr b(vgpu_backend_create(&c, err, sizeof err));
  EXPECT_NE(b, nullptr) << err;
  return b;
}

// A vgpud with 512 MiB and two VMs on it (`b` incoming when asked).
class CapiDaemonTwoVms : public ::testing::Test {
 protected:
  void start_with_two(const char* a_name, const char* b_name, bool b_incoming) {
    d = DaemonProcess::start({"--vram", "512M"});
    ASSERT_NE(d, nullptr);
    a = attach(d->socket(), a_name);
    b = attach(d->socket(), b_name, b_incoming);
    ASSERT_TRUE(a && b);
  }
  std::unique_ptr<DaemonProcess> d;
  BackendPtr a, b;
};

// Saves the state of `vm` (frozen) into `image`.
void save_state(VgpuBackend* vm, std::vector<uint8_t>& image) {
  char err[512] = {};
  uint8_t* data = nullptr;
  size_t len = 0;
  ASSERT_EQ(vgpu_backend_save_state(vm, &data, &len, err, sizeof err), 0) << err;
  image.assign(data, data + len);
  vgpu_backend_free_state(data);
}

// Freezes `vm` and saves its state into `image`.
void freeze_and_save(VgpuBackend* vm, std::vector<uint8_t>& image) {
  char err[512] = {};
  ASSERT_EQ(vgpu_backend_freeze(vm, 1000, err, sizeof err), 0) << err;
  save_state(vm, image);
}

// Freezes `vm` and loads `image` into it.
void freeze_and_load(VgpuBackend* vm, const std::vector<uint8_t>& image) {
  char err[512] = {};
  ASSERT_EQ(vgpu_backend_freeze(vm, 1000, err, sizeof err), 0) << err;
  ASSERT_EQ(vgpu_backend_load_state(vm, image.data(), image.size(), err, sizeof err), 0) << err;
}

TEST(CapiDaemon, TheDaemonsSchedulerAndTheVmsNameAreTheEffectiveSettings) {
  for (const char* policy : {"fifo", "credit", "band"}) {
    auto d = DaemonProcess::start({"--vram", "512M", "--scheduler", policy});
    ASSERT_NE(d, nullptr);
    BackendPtr b = attach(d->socket(), "web1");
    ASSERT_NE(b, nullptr);
    EXPECT_STREQ(vgpu_backend_setting(b.get(), VGPU_OPT_SCHEDULER), policy);
    EXPECT_STREQ(vgpu_backend_setting(b.get(), VGPU_OPT_VM_NAME), "web1");
    EXPECT_EQ(vgpu_backend_setting(b.get(), VGPU_OPT_BACKEND), nullptr);  // the daemon's engines
    b.reset();
    EXPECT_EQ(d->stop(), 0);
  }
}

TEST(CapiDaemon, AVmWithoutANameGetsQemuPid) {
  auto d = DaemonProcess::start({"--vram", "512M"});
  ASSERT_NE(d, nullptr);
  BackendPtr b = attach(d->socket(), nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(std::string(vgpu_backend_setting(b.get(), VGPU_OPT_VM_NAME)), "qemu-" + std::to_string(getpid()));
}

TEST(CapiDaemon, EachTrappedReadIsARoundTrip) {
  auto d = DaemonProcess::start({"--vram", "512M"});
  ASSERT_NE(d, nullptr);
  BackendPtr b = attach(d->socket(), "rt");
  ASSERT_NE(b, nullptr);
  VgpuEventCounts before{}, after{};
  vgpu_backend_event_counts(b.get(), &before);
  (void)vgpu_backend_bar0_read32(b.get(), regs::pmc::BOOT_0.offset);
  (void)vgpu_backend_bar0_read32(b.get(), regs::pmc::BOOT_0.offset);
  vgpu_backend_event_counts(b.get(), &after);
  EXPECT_EQ(after.round_trips - before.round_trips, 2u);
}

}  // namespace

namespace {

// docs/migration.md §7: the daemon backend migrates (no blocker); its
// calls go to the daemon, an image moves between two of its VMs, a cut one
// is refused with the daemon's reason; with the daemon gone it says so.
TEST_F(CapiDaemonTwoVms, AVgpudVmMigratesThroughTheCApiUntilItsDaemonIsGone) {
  ASSERT_NO_FATAL_FAILURE(start_with_two("src", "dst", false));
  char err[512] = {};
  EXPECT_EQ(vgpu_backend_migratable(a.get(), err, sizeof err), 0) << err;
  ASSERT_EQ(vgpu_backend_dirty_log_start(a.get(), err, sizeof err), 0) << err;
  std::vector<uint64_t> bitmap(64 * MiB / VGPU_DIRTY_PAGE_BYTES / 64);
  EXPECT_GE(vgpu_backend_dirty_log_take(a.get(), bitmap.data(), bitmap.size()), 0);
  EXPECT_EQ(vgpu_backend_dirty_log_take(a.get(), bitmap.data(), 1), -1) << "a bitmap short of the VM's VRAM";
  std::vector<uint8_t> image, again;
  ASSERT_NO_FATAL_FAILURE(freeze_and_save(a.get(), image));
  ASSERT_GT(image.size(), 0u);
  ASSERT_EQ(vgpu_backend_freeze(b.get(), 1000, err, sizeof err), 0) << err;
  EXPECT_NE(vgpu_backend_load_state(b.get(), image.data(), image.size() / 2, err, sizeof err), 0);
  EXPECT_NE(std::string(err).find("vgpud refused the state import (bad image)"), std::string::npos) << err;
  ASSERT_EQ(vgpu_backend_load_state(b.get(), image.data(), image.size(), err, sizeof err), 0) << err;
  ASSERT_NO_FATAL_FAILURE(save_state(b.get(), again));
  EXPECT_EQ(again, image);
  vgpu_backend_thaw(a.get());
  vgpu_backend_thaw(b.get());
  vgpu_backend_dirty_log_stop(a.get());
  EXPECT_EQ(d->stop(), 0);
  (void)vgpu_backend_bar0_read32(a.get(), 0);  // the client finds the daemon gone
  EXPECT_NE(vgpu_backend_migratable(a.get(), err, sizeof err), 0);
  EXPECT_NE(std::string(err).find("is gone"), std::string::npos) << err;
  EXPECT_NE(vgpu_backend_freeze(a.get(), 1000, err, sizeof err), 0);
}

}  // namespace

namespace {

// libvirt's move on one daemon through the C API (docs/migration.md §7):
// the incoming device takes the held name; vgpu_backend_migrated frees the
// source (the daemon lists the name once); the source's thaw afterwards
// finds its device lost, with the daemon's reason.
TEST_F(CapiDaemonTwoVms, AnIncomingDeviceSharesTheNameAndMigratedFreesTheSource) {
  ASSERT_NO_FATAL_FAILURE(start_with_two("dom", "dom", true));
  char err[512] = {};
  auto listed = [&] {
    const std::string stats = d->control("stats");
    size_t n = 0;
    for (size_t at = stats.find("\"dom\""); at != std::string::npos; at = stats.find("\"dom\"", at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(listed(), 2u);
  std::vector<uint8_t> image;
  ASSERT_NO_FATAL_FAILURE(freeze_and_save(a.get(), image));
  ASSERT_NO_FATAL_FAILURE(freeze_and_load(b.get(), image));
  vgpu_backend_migrated(a.get());
  EXPECT_EQ(listed(), 1u) << d->control("stats");
  vgpu_backend_thaw(b.get());
  EXPECT_EQ(vgpu_backend_bar0_read32(b.get(), regs::pmc::BOOT_0.offset) == ~uint32_t{0}, false);
  vgpu_backend_thaw(a.get());
  EXPECT_EQ(vgpu_backend_bar0_read32(a.get(), regs::pmc::BOOT_0.offset), ~uint32_t{0}) << "the source's device is lost";
  EXPECT_NE(vgpu_backend_migratable(a.get(), err, sizeof err), 0);
  EXPECT_NE(std::string(err).find("the VM migrated away"), std::string::npos) << err;
  a.reset();
  b.reset();
  EXPECT_EQ(d->stop(), 0);
}

}  // namespace
