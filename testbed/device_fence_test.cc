// SPDX-License-Identifier: GPL-2.0-or-later
// The driver's fences on a device back end (testbed_fake_device; docs/cuda.md,
// "Fences"): where the guest reads its fence through a BAR mapping (native,
// fv-opt's BAR remap, pv) the device writes each fence right after the
// work, and PFIFO writes none of them again; where BAR1 traps (fv-naive)
// PFIFO writes them all. Results read right after each fence are checked.
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "gpu/device/fake_device.h"
#include "gpu/model.h"
#include "testbed/contexts.h"
#include "testbed/testbed.h"
#include "testbed/testing/testbeds.h"

namespace vgpu::testbed {
namespace {

constexpr uint32_t LAUNCHES = 40;
constexpr uint32_t ELEMENTS = 1024;

class DeviceFences : public ::testing::TestWithParam<Mode> {};

TEST_P(DeviceFences, EachFenceAfterALaunchIsTheDevicesWhereTheGuestMapsIt) {
  auto tb = testing::create_testbed(testing::one_vm(GetParam(), 64 * MiB));
  ASSERT_TRUE(tb);
  auto* model = dynamic_cast<gpu::GpuModel*>(&tb->gpu());
  auto* fake = model ? dynamic_cast<gpu::FakeDevice*>(model->device()) : nullptr;
  if (fake == nullptr) GTEST_SKIP() << "runs with VGPU_ENGINE_BACKEND=fake_device";
  uint64_t before = 0, after = 0;
  const auto results = run_in_new_contexts(*tb, [&](Vm&, driver::Context& c) -> Status {
    auto buf = c.alloc(ELEMENTS * sizeof(float));
    if (!buf) return std::unexpected(buf.error());
    std::vector<float> back(ELEMENTS);
    for (uint32_t i = 0; i <= LAUNCHES; ++i) {
      // The fence page becomes direct-mapped at the guest's first access
      // through the BAR: the first wait. Count from the launch after it.
      if (i == 1) {
        if (!model->wait_idle(10'000'000'000)) return fail(Errc::timeout, "the GPU did not go idle");
        before = *model->device_releases();
      }
      auto f = c.fill({*buf, ELEMENTS, static_cast<float>(i)});
      if (!f) return std::unexpected(f.error());
      if (auto st = c.wait(*f); !st) return st;
      if (auto st = c.download(*buf, std::span<float>(back)); !st) return st;
      for (float v : back)
        if (v != static_cast<float>(i)) return fail(Errc::io_error, "a result read after its fence is stale");
    }
    // The wait can return on the device's word before PFIFO reaches the
    // release it then skips (and counts), and the context must still be
    // there then: its channel going away drops the rest of its methods.
    if (!model->wait_idle(10'000'000'000)) return fail(Errc::timeout, "the GPU did not go idle");
    after = *model->device_releases();
    return {};
  });
  ASSERT_TRUE(results[0]) << results[0].error().what();
  const uint64_t releases = after - before;
  if (GetParam() == Mode::fv_naive)
    EXPECT_EQ(releases, 0u) << "a fence the guest reads through trapped BAR1 is PFIFO's";
  else
    EXPECT_EQ(releases, LAUNCHES) << "a fill's fence was left to PFIFO";
}

INSTANTIATE_TEST_SUITE_P(Modes, DeviceFences, ::testing::Values(Mode::native, Mode::fv_naive, Mode::fv_opt, Mode::pv),
                         [](const ::testing::TestParamInfo<Mode>& p) { return mode_identifier(p.param); });

}  // namespace
}  // namespace vgpu::testbed
