// SPDX-License-Identifier: GPL-2.0-or-later
// Quiescing a vGPU for migration (docs/migration.md §4, build step M3):
// a freeze during a long sliced spin stops the VM's work at a slice
// boundary while another VM goes on; the thaw lets the spin finish.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/testing/two_vms.h"

namespace vgpu::mediator {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr uint64_t SPIN_NS = 300'000'000;       // sliced by time (the default): pieces of turn-ms / 4
constexpr auto INTO_SPIN = milliseconds(30);    // the freeze lands mid-spin
constexpr auto FROZEN_FOR = milliseconds(600);  // twice the whole spin: a spin that ran on would end
constexpr uint64_t FREEZE_TIMEOUT_NS = 2'000'000'000;
constexpr uint32_t FILL_COUNT = 1 << 16;

constexpr uint64_t VM_VRAM = 64 * MiB;

TEST(MigrationFreeze, FreezeHoldsASlicedSpinAndThawFinishesIt) {
  TwoVms t = open_two_vms(two_fv_opt_vms(VM_VRAM));
  ASSERT_TRUE(t.ctx_a && t.ctx_b);
  Vgpu& a = *t.tb->vgpu(0);
  auto spin = t.ctx_a->spin({SPIN_NS});
  ASSERT_TRUE(spin) << spin.error().what();
  std::this_thread::sleep_for(INTO_SPIN);

  const auto t0 = steady_clock::now();
  Status frozen = a.freeze(FREEZE_TIMEOUT_NS);
  ASSERT_TRUE(frozen) << frozen.error().what();
  RecordProperty("freeze_us",
                 static_cast<int>(
                     std::chrono::duration_cast<std::chrono::microseconds>(steady_clock::now() - t0).count()));
  EXPECT_TRUE(a.frozen());

  // The other VM runs while A is frozen.
  auto buf = t.ctx_b->alloc(FILL_COUNT * sizeof(float));
  ASSERT_TRUE(buf);
  auto fill = t.ctx_b->fill({.dst = *buf, .count = FILL_COUNT, .value = 1.0f});
  ASSERT_TRUE(fill);
  ASSERT_TRUE(t.ctx_b->wait(*fill)) << "VM B did not run while A was frozen";

  // A's spin does not end while A is frozen, though its time passes.
  std::this_thread::sleep_for(FROZEN_FOR);
  EXPECT_FALSE(t.ctx_a->done(*spin)) << "the spin ran on while its VM was frozen";

  a.thaw();
  EXPECT_FALSE(a.frozen());
  Status ended = t.ctx_a->wait(*spin);
  EXPECT_TRUE(ended) << ended.error().what();
  EXPECT_TRUE(t.ctx_a->status()) << "the freeze left a channel error";
}

TEST(MigrationFreeze, IdleVgpuFreezesAndThawsAndRunsAgain) {
  TwoVms t = open_two_vms(two_fv_opt_vms(VM_VRAM));
  ASSERT_TRUE(t.ctx_a);
  Vgpu& a = *t.tb->vgpu(0);
  ASSERT_TRUE(a.freeze(FREEZE_TIMEOUT_NS));
  ASSERT_TRUE(a.freeze(FREEZE_TIMEOUT_NS)) << "a second freeze is a no-op";
  a.thaw();
  a.thaw();  // not frozen: nothing happens
  auto buf = t.ctx_a->alloc(FILL_COUNT * sizeof(float));
  ASSERT_TRUE(buf);
  auto fill = t.ctx_a->fill({.dst = *buf, .count = FILL_COUNT, .value = 2.0f});
  ASSERT_TRUE(fill);
  EXPECT_TRUE(t.ctx_a->wait(*fill));
}

// Work submitted by the guest while frozen (a vCPU should not run then,
// but a doorbell in flight may land) waits for the thaw and runs once.
TEST(MigrationFreeze, DoorbellWhileFrozenRunsAfterTheThaw) {
  TwoVms t = open_two_vms(two_fv_opt_vms(VM_VRAM));
  ASSERT_TRUE(t.ctx_a);
  Vgpu& a = *t.tb->vgpu(0);
  auto buf = t.ctx_a->alloc(FILL_COUNT * sizeof(float));
  ASSERT_TRUE(buf);
  ASSERT_TRUE(a.freeze(FREEZE_TIMEOUT_NS));
  auto fill = t.ctx_a->fill({.dst = *buf, .count = FILL_COUNT, .value = 3.0f});
  ASSERT_TRUE(fill);
  std::this_thread::sleep_for(FROZEN_FOR / 4);
  EXPECT_FALSE(t.ctx_a->done(*fill)) << "work ran while frozen";
  a.thaw();
  ASSERT_TRUE(t.ctx_a->wait(*fill));
  std::vector<float> out(FILL_COUNT);
  ASSERT_TRUE(t.ctx_a->download(*buf, std::span<float>(out)));
  EXPECT_EQ(out.front(), 3.0f);
  EXPECT_EQ(out.back(), 3.0f);
}

}  // namespace
}  // namespace vgpu::mediator
