// SPDX-License-Identifier: GPL-2.0-or-later
// Host work for a VM is charged to it and bounded by its turn (issue 37
// item 5; docs/scheduler.md, "Host work"). VM A floods its shadow budget:
// every directory entry past its ring's names the same small-page table,
// so the lazy sync before its next launch reads millions of entries. That
// sync runs in pieces, each ending at A's turn bound and charged to A;
// VM B's small fills go between them.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "driver/runtime.h"
#include "mediator/host.h"
#include "tests/testing/guest_attacker.h"
#include "tests/testing/two_vms.h"
#include "testbed/testbed.h"

namespace vgpu::mediator {
namespace {

constexpr uint64_t MS = 1'000'000;
// Mediator and driver overheads on a loaded 2-core machine, sanitizers
// included (tests/turn_test.cc's margin).
constexpr uint64_t MARGIN_NS = 150 * MS;
constexpr uint64_t WAIT_SLACK_NS = 10 * MS;  // docs/scheduler.md's bound: turn + one slice + 10 ms

struct Flood {
  uint64_t worst_wait_ns = 0;  // B's slowest fill while A's sync ran
  uint32_t fills = 0;          // B's fills meanwhile
  TurnCounts turns;
  uint64_t entries_scanned = 0;  // by A's sync
  uint64_t slice_ns = 0;         // a piece of a sliced launch (Host::slice_ns)
};

// How long B's small fill takes from launch to fence (0 on failure).
uint64_t fill_ns(driver::Context& ctx, driver::Buffer buf) {
  const auto start = std::chrono::steady_clock::now();
  auto f = ctx.fill({buf, 64, 1.f});
  if (!f || !ctx.wait(*f)) return 0;
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

// A floods its directory and launches; B fills until A's launch is done.
Flood flood(const testbed::TestbedConfig& tc) {
  Flood out;
  TwoVms t = open_two_vms(tc);
  EXPECT_TRUE(t.ctx_a && t.ctx_b);
  if (!t.ctx_a || !t.ctx_b) return out;
  auto a_buf = t.ctx_a->alloc(fmt::SMALL_PAGE);
  auto b_buf = t.ctx_b->alloc(64 * sizeof(float));
  EXPECT_TRUE(a_buf && b_buf);
  if (!a_buf || !b_buf) return out;
  EXPECT_GT(fill_ns(*t.ctx_b, *b_buf), 0u);  // B's context is warm
  const uint64_t scanned_before = t.tb->vgpu(0)->counters().entries_scanned;

  attack::GuestAttacker raw(t.tb->port(0));
  const uint64_t pd = t.ctx_a->address_space().vmm().pd_addr();
  const uint64_t ring_va = t.ctx_a->channel().gpfifo_va();
  const uint64_t spt = fmt::pde::spt_addr(raw.vram64(attack::GuestAttacker::pde_addr(pd, ring_va)));
  for (uint32_t i = static_cast<uint32_t>(fmt::PD.index(ring_va)) + 1; i < fmt::PD.entries(); ++i)
    raw.set_vram64(pd + uint64_t{i} * fmt::PD.entry_bytes, fmt::pde::make(spt, 0));
  raw.invalidate(pd);

  std::atomic<bool> done{false};
  std::thread b([&] {
    while (!done.load()) {
      const uint64_t waited = fill_ns(*t.ctx_b, *b_buf);
      EXPECT_GT(waited, 0u);
      out.worst_wait_ns = std::max(out.worst_wait_ns, waited);
      ++out.fills;
    }
  });
  auto f = t.ctx_a->fill({*a_buf, 16, 1.f});  // its dispatch syncs the flooded directory
  EXPECT_TRUE(f);
  if (f) (void)t.ctx_a->wait(*f);  // its tables past the budget fault: the result does not matter
  done.store(true);
  b.join();
  out.turns = t.tb->host()->turn_counts();
  out.slice_ns = t.tb->host()->slice_ns();
  out.entries_scanned = t.tb->vgpu(0)->counters().entries_scanned - scanned_before;
  return out;
}

testbed::TestbedConfig two_fv_opt_vms() {
  testbed::TestbedConfig tc;  // the defaults: scheduler, turn-ms, slicing
  tc.mode = testbed::Mode::fv_opt;
  tc.vms = 2;
  tc.vram_per_vm = 128 * MiB;
  return tc;
}

void record(const Flood& r) {
  ::testing::Test::RecordProperty("vm_b_worst_wait_ms", static_cast<int>(r.worst_wait_ns / MS));
  ::testing::Test::RecordProperty("vm_b_fills", static_cast<int>(r.fills));
  ::testing::Test::RecordProperty("host_work_turns", static_cast<int>(r.turns.host_work));
  ::testing::Test::RecordProperty("entries_scanned", static_cast<int>(r.entries_scanned));
}

// With the defaults: B's worst wait while A's sync runs stays within the
// documented bound (a generous margin for a loaded machine; before the
// sync ran in pieces it was the whole sync, 1.3-1.4 s under ASan).
TEST(HostWork, AShadowTableFloodKeepsAnotherVmWaitingAtMostATurnAndASlice) {
  const testbed::TestbedConfig tc = two_fv_opt_vms();
  const Flood r = flood(tc);
  record(r);
  const uint64_t bound = tc.turn_ns + r.slice_ns + WAIT_SLACK_NS + MARGIN_NS;
  EXPECT_GT(r.entries_scanned, uint64_t{fmt::PD.entries()});
  EXPECT_LE(r.worst_wait_ns, bound) << "VM B waited " << r.worst_wait_ns / MS << " ms";
}

// The same as a count: with 1 ms turns, a sync of millions of entries
// cannot end in one, so A's turns end at their bound in the sync (charged
// to A) at least twice, and B's fills go between them.
TEST(HostWork, AShadowTableFloodIsSyncedInPiecesOneTurnEach) {
  testbed::TestbedConfig tc = two_fv_opt_vms();
  tc.turn_ns = 1 * MS;
  const Flood r = flood(tc);
  record(r);
  EXPECT_GE(r.turns.host_work, 2u);
  EXPECT_GT(r.fills, 0u);
}

}  // namespace
}  // namespace vgpu::mediator
