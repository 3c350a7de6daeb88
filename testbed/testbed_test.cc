// SPDX-License-Identifier: GPL-2.0-or-later
// The unchanged guest driver against the real mediator and GPU model.
#include "testbed/testbed.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/random.h"
#include "gpu/kernels/reference.h"
#include "pv-driver/pv_page_tables.h"
#include "testbed/testing/testbeds.h"

namespace vgpu::testbed {
namespace {

constexpr uint32_t M = 48, N = 40, K = 32;


// sgemm through the runtime API, checked against the CPU reference.
Status sgemm_roundtrip(Vm& vm, uint32_t seed) {
  auto ctx = vm.device.create_context();
  if (!ctx) return std::unexpected(ctx.error());
  auto a = random_floats(M * K, seed), b = random_floats(K * N, seed + 1);
  std::vector<float> c(M * N, 0.f), want(M * N, 0.f);
  auto ba = (*ctx)->alloc(a.size() * 4), bb = (*ctx)->alloc(b.size() * 4), bc = (*ctx)->alloc(c.size() * 4);
  if (!ba || !bb || !bc) return fail(Errc::out_of_memory, "alloc");
  if (auto s = (*ctx)->upload(*ba, std::span<const float>(a)); !s) return s;
  if (auto s = (*ctx)->upload(*bb, std::span<const float>(b)); !s) return s;
  if (auto s = (*ctx)->upload(*bc, std::span<const float>(c)); !s) return s;
  auto f = (*ctx)->sgemm({*ba, *bb, *bc, M, N, K, 1.f, 0.f});
  if (!f) return std::unexpected(f.error());
  if (auto s = (*ctx)->wait(*f); !s) return s;
  if (auto s = (*ctx)->download(*bc, std::span<float>(c)); !s) return s;
  gpu::kernels::reference::sgemm(cls::SgemmArgs{0, 0, 0, M, N, K, 1.f, 0.f, 0}, a.data(), b.data(), want.data());
  for (size_t i = 0; i < c.size(); ++i)
    if (std::abs(c[i] - want[i]) > 1e-4f * (1.f + std::abs(want[i])))
      return fail(Errc::device_error, "sgemm result differs at " + std::to_string(i));
  return {};
}

class TestbedModes : public ::testing::TestWithParam<Mode> {};

TEST_P(TestbedModes, DriverRunsSgemmUnchanged) {
  auto tb = testing::create_testbed(testing::one_vm(GetParam(), 128 * MiB));
  ASSERT_TRUE(tb);
  auto results = tb->run([](Vm& vm) { return sgemm_roundtrip(vm, 7); });
  ASSERT_TRUE(results[0]) << results[0].error().what();
  if (GetParam() != Mode::native) {
    auto c = tb->counters(0);
    ASSERT_TRUE(c);
    EXPECT_GT(c->trapped(), 0u);
    EXPECT_GT(c->submissions, 0u);
    EXPECT_GT(c->entries_scanned, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(AllModes, TestbedModes, ::testing::Values(Mode::native, Mode::fv_naive, Mode::fv_opt),
                         [](const ::testing::TestParamInfo<Mode>& p) {
                           std::string n = mode_name(p.param);
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// The paravirtual path: the same driver above the address-space layer, and
// not one guest page-table entry scanned (spec §17).
TEST(Testbed, PvRunsSgemmWithoutScanning) {
  auto tb = testing::create_testbed(testing::one_vm(Mode::pv, 128 * MiB));
  ASSERT_TRUE(tb);
  auto results = tb->run([](Vm& vm) -> Status {
    if (auto s = sgemm_roundtrip(vm, 7); !s) return s;
    const auto* st = vm.device.hypercall_stats();
    if (!st || st->batches == 0) return fail(Errc::device_error, "the driver did not use the PV interface");
    return Status{};
  });
  ASSERT_TRUE(results[0]) << results[0].error().what();
  auto c = tb->counters(0);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->entries_scanned, 0u);
  EXPECT_GT(c->pv_batches, 0u);
  EXPECT_EQ(c->pv_failures, 0u);
  EXPECT_GT(c->shadow_writes, 0u);
}

TEST(Testbed, PvDriverRefusedWithoutPvDevice) {
  TestbedConfig tc;
  tc.mode = Mode::fv_opt;
  tc.device.paravirtual = pvdriver::open_pv_tables;
  auto tb = Testbed::create(tc);
  ASSERT_TRUE(tb) << tb.error().what();
  auto results = (*tb)->run([](Vm&) { return Status{}; });
  ASSERT_FALSE(results[0]);
  EXPECT_NE(results[0].error().message.find("paravirtual"), std::string::npos) << results[0].error().what();
}

TEST(Testbed, NaiveTrapsMoreThanOptimized) {
  uint64_t trapped[2] = {};
  for (Mode m : {Mode::fv_naive, Mode::fv_opt}) {
    TestbedConfig tc;
    tc.mode = m;
    tc.vram_per_vm = 128 * MiB;
    auto tb = Testbed::create(tc).value();
    auto r = tb->run([](Vm& vm) { return sgemm_roundtrip(vm, 3); });
    ASSERT_TRUE(r[0]) << r[0].error().what();
    trapped[m == Mode::fv_opt] = tb->counters(0)->trapped();
  }
  EXPECT_GT(trapped[0], trapped[1]);
}

TEST(Testbed, TwoVmsShareTheGpuWithCorrectResults) {
  TestbedConfig tc;
  tc.mode = Mode::fv_opt;
  tc.vms = 2;
  tc.vram_per_vm = 128 * MiB;
  auto tb = Testbed::create(tc);
  ASSERT_TRUE(tb) << tb.error().what();
  auto results = (*tb)->run([](Vm& vm) { return sgemm_roundtrip(vm, 11 + vm.index); });
  for (auto& r : results) EXPECT_TRUE(r) << r.error().what();
}

TEST(Testbed, NativeModeRefusesSeveralVms) {
  TestbedConfig tc;
  tc.vms = 2;
  EXPECT_FALSE(Testbed::create(tc));
}

}  // namespace
}  // namespace vgpu::testbed
