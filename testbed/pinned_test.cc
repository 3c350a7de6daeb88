// SPDX-License-Identifier: GPL-2.0-or-later
// Pinned host memory end to end: the unchanged driver pins pages of its
// VM's RAM, maps them through sysmem PTEs, and moves data with the copy
// engine straight from and to them, in every mode. In fv modes the
// mediator moves the guest's sysmem PTEs into the VM's bus slot.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <vector>

#include "common/random.h"
#include "gpu/device/fake_device.h"
#include "gpu/model.h"
#include "testbed/contexts.h"
#include "testbed/testbed.h"
#include "testbed/testing/testbeds.h"

namespace vgpu::testbed {
namespace {

using driver::Context;

class PinnedModes : public ::testing::TestWithParam<Mode> {
 protected:
  std::unique_ptr<Testbed> make(uint64_t ram = 64 * MiB) {
    TestbedConfig tc = testing::one_vm(GetParam(), 128 * MiB);
    tc.ram_per_vm = ram;
    return testing::create_testbed(tc);
  }
  // Runs `body` in a new context of the one VM (its RAM: `ram`); an error
  // it returns fails the test.
  void run_in_vm(const std::function<Status(driver::Context&)>& body, uint64_t ram = 64 * MiB) {
    auto tb = make(ram);
    ASSERT_TRUE(tb);
    auto results = run_in_new_contexts(*tb, [&](Vm&, driver::Context& c) { return body(c); });
    ASSERT_TRUE(results[0]) << results[0].error().what();
  }
};

std::vector<std::byte> bytes_of(uint64_t n, uint32_t seed) {
  std::vector<std::byte> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1103515245u + 12345u;
    b = std::byte(x >> 24);
  }
  return v;
}

TEST_P(PinnedModes, UploadAndDownloadGoStraightThroughPinnedMemory) {
  run_in_vm([](driver::Context& c) -> Status {
    constexpr uint64_t BYTES = 4 * MiB + 123;
    auto pinned = c.alloc_host(BYTES);
    if (!pinned) return std::unexpected(pinned.error());
    auto dev = c.alloc(BYTES);
    if (!dev) return std::unexpected(dev.error());
    auto host = c.host_data(*pinned);
    if (!host) return std::unexpected(host.error());
    const auto data = bytes_of(BYTES, 3);
    std::memcpy(host->data(), data.data(), BYTES);
    if (auto s = c.upload(*dev, 0, std::span<const std::byte>(host->data(), BYTES)); !s) return s;
    std::memset(host->data(), 0, BYTES);
    if (auto s = c.download(*dev, 0, std::span<std::byte>(host->data(), BYTES)); !s) return s;
    if (std::memcmp(host->data(), data.data(), BYTES) != 0) return fail(Errc::device_error, "round trip differs");
    if (c.transfer_stats().pinned_bytes != 2 * BYTES || c.transfer_stats().staged_bytes != 0)
      return fail(Errc::device_error, "transfers did not go through pinned memory");
    return {};
  });
}

// A transfer whose buffer is itself pinned is the CPU's copy into or out
// of its host view: no BAR1, no staging, no copy engine.
TEST_P(PinnedModes, TransfersIntoAPinnedBufferAreTheCpusCopy) {
  run_in_vm([](driver::Context& c) -> Status {
    constexpr uint64_t BYTES = 8 * 1024 + 5;
    auto pinned = c.alloc_host(BYTES);
    if (!pinned) return std::unexpected(pinned.error());
    auto host = c.host_data(*pinned);
    if (!host) return std::unexpected(host.error());
    const auto data = bytes_of(BYTES - 1, 4);
    if (auto s = c.upload(*pinned, 1, std::span<const std::byte>(data)); !s) return s;
    if (std::memcmp(host->data() + 1, data.data(), data.size()) != 0)
      return fail(Errc::device_error, "the upload is not in the host view");
    std::vector<std::byte> back(data.size());
    if (auto s = c.download(*pinned, 1, std::span<std::byte>(back)); !s) return s;
    if (back != data) return fail(Errc::device_error, "the download differs");
    const auto& st = c.transfer_stats();
    if (st.pinned_bytes != 0 || st.staged_bytes != 0 || st.direct_bytes != 0)
      return fail(Errc::device_error, "a transfer into a pinned buffer went through the device");
    return {};
  });
}

// With a device back end (testbed_fake_device), pinned transfers are DMA
// straight between the registered RAM and the device (docs/cuda.md,
// "System memory"): every byte crosses as a host<->device copy from
// registered memory, none through the model's engines.
TEST_P(PinnedModes, PinnedTransfersAreHostDeviceDmaOnADevice) {
  auto tb = make();
  ASSERT_TRUE(tb);
  auto* model = dynamic_cast<gpu::GpuModel*>(&tb->gpu());
  auto* fake = model ? dynamic_cast<gpu::FakeDevice*>(model->device()) : nullptr;
  if (fake == nullptr) GTEST_SKIP() << "runs with VGPU_ENGINE_BACKEND=fake_device";
  constexpr uint64_t BYTES = 4 * MiB + 123;
  const gpu::FakeDeviceStats before = fake->stats();
  auto results = run_in_new_contexts(*tb, [](Vm&, driver::Context& c) -> Status {
    auto pinned = c.alloc_host(BYTES);
    auto dev = c.alloc(BYTES);
    if (!pinned || !dev) return fail(Errc::out_of_memory, "alloc");
    auto host = c.host_data(*pinned);
    if (!host) return std::unexpected(host.error());
    const auto data = bytes_of(BYTES, 5);
    std::memcpy(host->data(), data.data(), BYTES);
    if (auto s = c.upload_pinned(*dev, 0, *pinned, 0, BYTES); !s) return s;
    std::memset(host->data(), 0, BYTES);
    if (auto s = c.download_pinned(*pinned, 0, *dev, 0, BYTES); !s) return s;
    if (std::memcmp(host->data(), data.data(), BYTES) != 0) return fail(Errc::device_error, "round trip differs");
    return {};
  });
  ASSERT_TRUE(results[0]) << results[0].error().what();
  const gpu::FakeDeviceStats s = fake->stats();
  EXPECT_EQ(s.host_to_device_bytes - before.host_to_device_bytes, BYTES);
  EXPECT_EQ(s.device_to_host_bytes - before.device_to_host_bytes, BYTES);
  // The pinned pages are one bus run and the buffer one VRAM run: one copy each way.
  EXPECT_EQ(s.host_to_device - before.host_to_device, 1u);
  EXPECT_EQ(s.device_to_host - before.device_to_host, 1u);
  EXPECT_EQ(s.unregistered_host_copies, 0u);
  EXPECT_GE(s.registered_mappings, 1u);
}

TEST_P(PinnedModes, KernelsComputeOnPinnedBuffers) {
  run_in_vm([](driver::Context& c) -> Status {
    constexpr uint32_t N = 3000;
    auto x = c.alloc_host(N * 4), y = c.alloc_host(N * 4);
    if (!x || !y) return fail(Errc::out_of_memory, "pin");
    auto xs = c.host_data(*x), ys = c.host_data(*y);
    std::vector<float> xv(N), yv(N);
    for (uint32_t i = 0; i < N; ++i) xv[i] = float(i), yv[i] = 1.f;
    std::memcpy(xs->data(), xv.data(), N * 4);
    std::memcpy(ys->data(), yv.data(), N * 4);
    auto f = c.saxpy({*x, *y, N, 2.f});
    if (!f) return std::unexpected(f.error());
    if (auto s = c.wait(*f); !s) return s;
    std::memcpy(yv.data(), ys->data(), N * 4);
    for (uint32_t i = 0; i < N; ++i)
      if (yv[i] != 2.f * float(i) + 1.f) return fail(Errc::device_error, "saxpy differs at " + std::to_string(i));
    return {};
  });
}

TEST_P(PinnedModes, PinningMoreThanTheRamNamesTheBuffer) {
  run_in_vm(
      [](driver::Context& c) -> Status {
        auto p = c.alloc_host(32 * MiB);
        if (p) return fail(Errc::device_error, "pinned more than the RAM");
        if (p.error().code != Errc::out_of_memory || p.error().message.find("pinned buffer") == std::string::npos)
          return fail(Errc::device_error, "unclear error: " + p.error().message);
        return {};
      },
      16 * MiB);
}

TEST_P(PinnedModes, DeviceBufferPassedAsPinnedIsRefusedByName) {
  run_in_vm([](driver::Context& c) -> Status {
    auto a = c.alloc(MiB), b = c.alloc(MiB);
    if (!a || !b) return fail(Errc::out_of_memory, "alloc");
    auto s = c.upload_pinned(*a, 0, *b, 0, MiB);
    if (s) return fail(Errc::device_error, "a VRAM buffer was taken as pinned");
    const std::string want = "buffer " + std::to_string(b->id) + " is not pinned";
    if (s.error().message.find(want) == std::string::npos)
      return fail(Errc::device_error, "unclear error: " + s.error().message);
    return {};
  });
}

INSTANTIATE_TEST_SUITE_P(AllModes, PinnedModes, ::testing::Values(Mode::native, Mode::fv_naive, Mode::fv_opt, Mode::pv),
                         [](const ::testing::TestParamInfo<Mode>& p) { return mode_identifier(p.param); });

}  // namespace
}  // namespace vgpu::testbed
