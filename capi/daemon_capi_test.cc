// SPDX-License-Identifier: GPL-2.0-or-later
// The C API's daemon backend against a real vgpud (a separate process):
// the settings the daemon decides come back as the device's effective
// settings (QEMU's qom-get, its warning for a scheduler it does not run).
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>

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

BackendPtr attach(const std::string& socket, const char* vm_name) {
  VgpuBackendConfig c;
  vgpu_backend_config_init(&c);
  c.vram_bytes = 64 * MiB;
  c.channels = 8;
  c.mode = VGPU_MODE_FV;
  c.socket = socket.c_str();
  c.vm_name = vm_name;
  char err[256] = {};
  BackendPtr b(vgpu_backend_create(&c, err, sizeof err));
  EXPECT_NE(b, nullptr) << err;
  return b;
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
