// SPDX-License-Identifier: GPL-2.0-or-later
// Time isolation (docs/scheduler.md, "Bounded turns"): how long one VM's
// legal work can keep another VM waiting, measured against the documented
// bound with a margin for a loaded machine. Durations are scaled down
// (200 ms spins, a 50 ms turn) from the seconds.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "vgpu/bits.h"
#include "driver/pushbuf.h"
#include "driver/runtime.h"
#include "gpu/kernels/reference.h"
#include "tests/testing/guest_attacker.h"
#include "tests/testing/two_vms.h"
#include "testbed/testbed.h"

namespace vgpu::mediator {
namespace {

namespace pf = regs::pfifo;
using Ms = std::chrono::milliseconds;

constexpr uint64_t SPIN_NS = 200'000'000;
constexpr uint64_t TURN_NS = 50'000'000;
// Mediator and driver overheads on a loaded 2-core machine.
constexpr uint64_t MARGIN_NS = 150'000'000;

// Two fv-opt VMs of 128 MiB whose turns last turn_ns.
// The turns are the host's whatever the policy. These tests were written
// against FIFO's order, the default until stop 24, and keep it, so that
// their counts mean what they did (BAND's yield window is one more way
// for a VM to get the engine back).
testbed::TestbedConfig two_vm_config(uint64_t turn_ns) {
  testbed::TestbedConfig tc = two_fv_opt_vms();
  tc.scheduler = "fifo";
  tc.turn_ns = turn_ns;
  return tc;
}

// The VMs of `tc`, with the second context of VM A these tests ring
// behind its first.
TwoVms two_vms(const testbed::TestbedConfig& tc) { return open_two_vms(tc, true); }

TwoVms two_vms(uint64_t turn_ns, uint32_t max_gpu_ms = mediator::HostConfig{}.max_gpu_ms, uint32_t slice_blocks_a = 0) {
  testbed::TestbedConfig tc = two_vm_config(turn_ns);
  tc.max_gpu_ms = max_gpu_ms;
  tc.slice_blocks = {slice_blocks_a, 0};
  return two_vms(tc);
}

bool engine_busy(testbed::Testbed& tb, uint32_t vm, const driver::Context& ctx) {
  const uint32_t pchid = tb.vgpu(vm)->pchid_of(ctx.channel_id());
  return pf::ChanStateEngineOutstanding::get(tb.host()->gpu().read32(pf::CHAN_STATE[pchid].offset)) != 0;
}

// How long VM B's small fill takes from launch to fence, in ns (0 on failure).
uint64_t fill_wait_ns(driver::Context& ctx_b) {
  auto buf = ctx_b.alloc(64 * sizeof(float));
  EXPECT_TRUE(buf);
  if (!buf) return 0;
  const auto start = std::chrono::steady_clock::now();
  auto f = ctx_b.fill({*buf, 64, 1.f});
  EXPECT_TRUE(f);
  if (!f) return 0;
  EXPECT_TRUE(ctx_b.wait(*f));
  const auto waited = std::chrono::steady_clock::now() - start;
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count());
}

// VM B's wait, recorded as a test property and checked against `bound_ns`.
void expect_wait_within(uint64_t waited, uint64_t bound_ns) {
  EXPECT_GT(waited, 0u);
  ::testing::Test::RecordProperty("vm_b_waited_ms", static_cast<int>(waited / 1'000'000));
  EXPECT_LE(waited, bound_ns) << "VM B waited " << waited / 1'000'000 << " ms";
}

// VM A rings three spins at once (behind a short spin of its other
// channel, so that one turn finds all three); once the first runs, VM B
// launches a small fill. Returns how long B's fill took, in ns (0 on
// failure).
uint64_t wait_behind_three_spins(TwoVms& t) {
  // Long enough for A to ring all three spins while it runs, even under a
  // sanitizer on a loaded machine (at 50 ms, an ASan run once found only
  // the first rung when A's turn began).
  auto blocker = t.ctx_a2->spin({SPIN_NS});
  EXPECT_TRUE(blocker);
  std::vector<driver::Fence> spins;
  for (int i = 0; i < 3; ++i) {
    auto f = t.ctx_a->spin({SPIN_NS});
    EXPECT_TRUE(f) << f.error().what();
    if (!f) return 0;
    spins.push_back(*f);
  }
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!engine_busy(*t.tb, 0, *t.ctx_a) && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(Ms(1));
  EXPECT_TRUE(engine_busy(*t.tb, 0, *t.ctx_a)) << "VM A's first spin never started";
  const uint64_t waited = fill_wait_ns(*t.ctx_b);
  EXPECT_TRUE(t.ctx_a->wait(spins.back()));  // A's later spins still run
  return waited;
}

// Bound: the rest of the entry on the GPU (one spin) and the turn; not
// the three spins A queued.
TEST(BoundedTurn, BatchedSpinsKeepAnotherVmWaitingAtMostOneSpinAndATurn) {
  TwoVms t = two_vms(TURN_NS);
  ASSERT_TRUE(t.ctx_a && t.ctx_b && t.ctx_a2);
  expect_wait_within(wait_behind_three_spins(t), SPIN_NS + TURN_NS + MARGIN_NS);
  // A's turn ended at its slice's end, with B waiting.
  const TurnCounts c = t.tb->host()->turn_counts();
  EXPECT_GE(c.out_of_time, 1u);
  EXPECT_LE(c.out_of_time + c.dry, c.started);
}

bool acquire_pending(testbed::Testbed& tb, uint32_t vm, const driver::Context& ctx) {
  const uint32_t pchid = tb.vgpu(vm)->pchid_of(ctx.channel_id());
  return pf::ChanStateAcquirePending::get(tb.host()->gpu().read32(pf::CHAN_STATE[pchid].offset)) != 0;
}

// VM A's channel parks in a semaphore acquire with three spins rung
// behind it, and the host's watchdog ends its turn again and again. Then A
// releases the semaphore from the CPU (a store through PRAMIN). No turn
// may ring an entry behind the parked one (they would all run outside the
// scheduler once released: its accounting would never see them), and once
// released each spin still takes a turn of its own: B waits at most one
// spin and a turn, and A's spins complete.
TEST(BoundedTurn, EntriesBehindAParkedAcquireStillTakeTurnsOnceReleased) {
  namespace h = cls::host;
  constexpr uint32_t PAYLOAD = 0x1234;
  TwoVms t = two_vms(TURN_NS);
  ASSERT_TRUE(t.ctx_a && t.ctx_b);
  auto sem = t.ctx_a->alloc(64);
  ASSERT_TRUE(sem);
  const uint32_t zero = 0;
  ASSERT_TRUE(t.ctx_a->upload(*sem, std::span(&zero, 1)));
  const uint64_t va = t.ctx_a->gpu_va(*sem).value();
  driver::PushBuffer pb;
  pb.inc(driver::subch::HOST, h::SEMAPHORE_A,
         {h::SemAHi::make(hi32(va)), lo32(va) & h::SemBLo::mask, PAYLOAD,
          h::SemDOperation::make(static_cast<uint32_t>(h::SemOp::acquire))});
  ASSERT_TRUE(t.ctx_a->channel().submit(pb.words()));
  const uint32_t parked_put = t.ctx_a->channel().gp_put();  // the acquire's entry ends here
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!acquire_pending(*t.tb, 0, *t.ctx_a) && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(Ms(1));
  ASSERT_TRUE(acquire_pending(*t.tb, 0, *t.ctx_a)) << "VM A's acquire never parked";
  std::vector<driver::Fence> spins;
  for (int i = 0; i < 3; ++i) {
    auto f = t.ctx_a->spin({SPIN_NS});
    ASSERT_TRUE(f) << f.error().what();
    spins.push_back(*f);
  }
  std::this_thread::sleep_for(Ms(100));  // the watchdog (1 ms) ends A's turn many times
  ASSERT_TRUE(acquire_pending(*t.tb, 0, *t.ctx_a));
  const uint32_t pchid = t.tb->vgpu(0)->pchid_of(t.ctx_a->channel_id());
  const uint32_t physical_put = t.tb->host()->gpu().vram().read32(t.tb->host()->host_userd(pchid) +
                                                                  regs::userd::GP_PUT);
  EXPECT_EQ(physical_put, parked_put) << "entries were rung behind the parked one, outside the scheduler";

  attack::GuestAttacker raw(t.tb->port(0));
  const auto at = raw.translate(t.ctx_a->address_space().vmm().pd_addr(), va, fmt::PageSize::small);
  ASSERT_TRUE(at);
  raw.set_vram32(*at, PAYLOAD);
  while (!engine_busy(*t.tb, 0, *t.ctx_a) && std::chrono::steady_clock::now() < give_up + std::chrono::seconds(5))
    std::this_thread::sleep_for(Ms(1));
  ASSERT_TRUE(engine_busy(*t.tb, 0, *t.ctx_a)) << "VM A's first spin never started after the release";
  expect_wait_within(fill_wait_ns(*t.ctx_b), SPIN_NS + TURN_NS + MARGIN_NS);
  EXPECT_TRUE(t.ctx_a->wait(spins.back())) << "A's spins still run";
}

// The control: with unbounded turns (turn-ms 0) B waits for every spin
// A's turn found rung (a lower bound, which a loaded machine only
// lengthens).
TEST(BoundedTurn, UnboundedTurnsKeepAnotherVmWaitingForEverySpin) {
  TwoVms t = two_vms(0);
  ASSERT_TRUE(t.ctx_a && t.ctx_b && t.ctx_a2);
  const uint64_t waited = wait_behind_three_spins(t);
  RecordProperty("vm_b_waited_ms", static_cast<int>(waited / 1'000'000));
  EXPECT_GE(waited, 2 * SPIN_NS) << "VM B waited " << waited / 1'000'000 << " ms";
}

// A runaway: one GPFIFO entry of VM A asks for more GPU time than the
// host's maximum (max-gpu-ms, here 100 ms). It ends with channel error
// timeout; VM B waits at most the maximum and a turn; A's later work runs.
TEST(RunawayWork, AnEntryPastTheMaximumEndsWithTimeoutAndOthersWaitAtMostThatLong) {
  constexpr uint32_t MAX_GPU_MS = 100;
  TwoVms t = two_vms(TURN_NS, MAX_GPU_MS);
  ASSERT_TRUE(t.ctx_a && t.ctx_b && t.ctx_a2);
  auto runaway = t.ctx_a->spin({2'000'000'000});  // legal (the spin cap is 10 s), but past the maximum
  ASSERT_TRUE(runaway);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!engine_busy(*t.tb, 0, *t.ctx_a) && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(Ms(1));
  ASSERT_TRUE(engine_busy(*t.tb, 0, *t.ctx_a)) << "the runaway spin never started";
  expect_wait_within(fill_wait_ns(*t.ctx_b), uint64_t{MAX_GPU_MS} * 1'000'000 + TURN_NS + MARGIN_NS);

  auto ended = t.ctx_a->wait(*runaway);
  ASSERT_FALSE(ended) << "the runaway spin completed";
  EXPECT_NE(ended.error().message.find("timeout"), std::string::npos) << ended.error().message;
  // The VM's later work runs: its other channel, and a new one.
  auto a2buf = t.ctx_a2->alloc(64 * sizeof(float));
  ASSERT_TRUE(a2buf);
  auto a2 = t.ctx_a2->fill({*a2buf, 64, 2.f});
  ASSERT_TRUE(a2);
  EXPECT_TRUE(t.ctx_a2->wait(*a2));
  auto again = t.dev_a->create_context();
  ASSERT_TRUE(again);
  auto spin = (*again)->spin({MAX_GPU_MS * 1'000'000ull / 2});
  ASSERT_TRUE(spin);
  EXPECT_TRUE((*again)->wait(*spin)) << "an entry within the maximum completes";
}

// A huge copy (one GPFIFO entry of many launches) past the maximum (here
// 1 ms) stops between its pieces with channel error timeout, and the other
// VM's wait stays within the maximum and a turn.
TEST(RunawayWork, AHugeCopyPastTheMaximumEndsWithTimeout) {
  constexpr uint32_t MAX_GPU_MS = 1;
  constexpr uint64_t BYTES = 48 * MiB;  // well over 1 ms of memcpy on any machine
  TwoVms t = two_vms(TURN_NS, MAX_GPU_MS);
  ASSERT_TRUE(t.ctx_a && t.ctx_b);
  auto src = t.ctx_a->alloc(BYTES);
  auto dst = t.ctx_a->alloc(BYTES);
  ASSERT_TRUE(src && dst);
  auto copy = t.ctx_a->copy(*dst, 0, *src, 0, BYTES);
  ASSERT_TRUE(copy);
  expect_wait_within(fill_wait_ns(*t.ctx_b), uint64_t{MAX_GPU_MS} * 1'000'000 + TURN_NS + MARGIN_NS);
  auto ended = t.ctx_a->wait(*copy);
  ASSERT_FALSE(ended) << "the huge copy completed within 1 ms";
  EXPECT_NE(ended.error().message.find("timeout"), std::string::npos) << ended.error().message;
}

// Kernel slicing (docs/scheduler.md, "Kernel slicing"). VM A's one long
// kernel (a 600 ms spin: 6000 blocks of 100 us) runs in slices of 10
// blocks (1 ms) when A's slice-blocks is set: B's fill waits at most a
// turn and a slice. Without slicing B waits for most of the kernel.
constexpr uint64_t LONG_SPIN_NS = 600'000'000;
constexpr uint32_t SLICE_BLOCKS = 10;

uint64_t wait_behind_one_long_kernel(TwoVms& t) {
  auto spin = t.ctx_a->spin({LONG_SPIN_NS});
  EXPECT_TRUE(spin);
  if (!spin) return 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!engine_busy(*t.tb, 0, *t.ctx_a) && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(Ms(1));
  EXPECT_TRUE(engine_busy(*t.tb, 0, *t.ctx_a)) << "VM A's kernel never started";
  const uint64_t waited = fill_wait_ns(*t.ctx_b);
  EXPECT_TRUE(t.ctx_a->wait(*spin)) << "A's sliced kernel completes";
  return waited;
}

TEST(KernelSlicing, ALongKernelOfASlicedVmKeepsAnotherVmWaitingAtMostATurnAndASlice) {
  TwoVms t = two_vms(TURN_NS, mediator::HostConfig{}.max_gpu_ms, SLICE_BLOCKS);
  ASSERT_TRUE(t.ctx_a && t.ctx_b);
  const uint64_t slice_ns = SLICE_BLOCKS * LONG_SPIN_NS / (LONG_SPIN_NS / 100'000);
  expect_wait_within(wait_behind_one_long_kernel(t), TURN_NS + slice_ns + MARGIN_NS);
}

TEST(KernelSlicing, WithoutSlicingAnotherVmWaitsForTheRestOfTheKernel) {
  TwoVms t = two_vms(TURN_NS);
  ASSERT_TRUE(t.ctx_a && t.ctx_b);
  const uint64_t waited = wait_behind_one_long_kernel(t);
  RecordProperty("vm_b_waited_ms", static_cast<int>(waited / 1'000'000));
  EXPECT_GE(waited, LONG_SPIN_NS / 2) << "VM B waited " << waited / 1'000'000 << " ms";
}

// A sliced sgemm, held and resumed between slices while the other VM's
// fills take turns, computes what the reference computes; the channel
// stopped at every slice boundary and was resumed there.
TEST(KernelSlicing, ASlicedSgemmBesideAnotherVmIsCorrectAndStopsBetweenSlices) {
  constexpr uint32_t N = 192;  // 12 x 12 blocks of 16 x 16: 144 blocks, 72 slices of 2
  TwoVms t = two_vms(1'000'000, mediator::HostConfig{}.max_gpu_ms, 2);
  ASSERT_TRUE(t.ctx_a && t.ctx_b);
  std::vector<float> ha(N * N), hb(N * N), hc(N * N, 0.f), want(N * N, 0.f);
  for (size_t i = 0; i < ha.size(); ++i) {
    ha[i] = static_cast<float>(i % 17) * 0.25f - 2.f;
    hb[i] = static_cast<float>(i % 13) * 0.5f - 3.f;
  }
  auto a = t.ctx_a->alloc(N * N * 4), b = t.ctx_a->alloc(N * N * 4), c = t.ctx_a->alloc(N * N * 4);
  ASSERT_TRUE(a && b && c);
  ASSERT_TRUE(t.ctx_a->upload(*a, std::span<const float>(ha)));
  ASSERT_TRUE(t.ctx_a->upload(*b, std::span<const float>(hb)));
  const uint64_t resumes_before = t.tb->vgpu(0)->counters().slice_resumes;
  auto g = t.ctx_a->sgemm({*a, *b, *c, N, N, N, 1.f, 0.f});
  ASSERT_TRUE(g);
  for (int i = 0; i < 5; ++i) EXPECT_GT(fill_wait_ns(*t.ctx_b), 0u);
  const auto waited = t.ctx_a->wait(*g);
  ASSERT_TRUE(waited) << waited.error().what();
  ASSERT_TRUE(t.ctx_a->download(*c, std::span<float>(hc)));
  gpu::kernels::reference::sgemm(cls::SgemmArgs{0, 0, 0, N, N, N, 1.f, 0.f, 0}, ha.data(), hb.data(), want.data());
  for (size_t i = 0; i < hc.size(); ++i)
    ASSERT_NEAR(hc[i], want[i], 1e-4f * (1.f + std::abs(want[i]))) << "element " << i;
  const uint64_t resumes = t.tb->vgpu(0)->counters().slice_resumes - resumes_before;
  RecordProperty("slice_resumes", static_cast<int>(resumes));
  EXPECT_EQ(resumes, 144u / 2 - 1) << "every slice but the first resumed after a stop at its boundary";
}

// ---- ringing ahead (docs/scheduler.md, "Ringing ahead")

constexpr uint64_t AHEAD_SPIN_NS = 20'000'000;

// VM A's spin of spin_ns runs in its turn; `meanwhile` runs once it is on
// the GPU, then A launches a fill and waits for it. Returns how many
// entries the host rang ahead for A and how many turns began meanwhile.
struct AheadCounts {
  uint64_t rung_ahead = 0, turns_started = 0;
};
AheadCounts fill_behind_a_spin(TwoVms& t, uint64_t spin_ns, const std::function<void()>& meanwhile = {}) {
  auto spin = t.ctx_a->spin({spin_ns});
  EXPECT_TRUE(spin);
  if (!spin) return {};
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!engine_busy(*t.tb, 0, *t.ctx_a) && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(Ms(1));
  EXPECT_TRUE(engine_busy(*t.tb, 0, *t.ctx_a)) << "VM A's spin never started";
  if (meanwhile) meanwhile();
  const uint64_t ahead = t.tb->vgpu(0)->counters().rung_ahead;
  const uint64_t started = t.tb->host()->turn_counts().started;
  EXPECT_GT(fill_wait_ns(*t.ctx_a), 0u);
  EXPECT_TRUE(t.ctx_a->wait(*spin));
  return {t.tb->vgpu(0)->counters().rung_ahead - ahead, t.tb->host()->turn_counts().started - started};
}

// These tests set ringing ahead on or off themselves, whatever the default
// (mediator/host.h). A turn of AHEAD_TURN_NS outlasts the spin and the
// fill by far.
constexpr uint64_t AHEAD_TURN_NS = 1'000'000'000;
TwoVms ringing_ahead_vms(uint64_t turn_ns = AHEAD_TURN_NS, bool on = true, std::vector<uint32_t> slice_blocks = {}) {
  testbed::TestbedConfig tc = two_vm_config(turn_ns);
  tc.ring_ahead = on;
  tc.slice_blocks = std::move(slice_blocks);
  return two_vms(tc);
}

// A launch during the VM's own piece, with time left in its turn and no
// other VM waiting, is rung behind that piece, once. Whether it also ends
// in the same turn is recorded, not asserted: under ASan on a 2-core
// machine one more turn began, with ringing ahead on and off alike (the
// spin may end before the fill's doorbell under ASan's slowdown).
TEST(RingAhead, ALaunchDuringItsVmsRunningPieceIsRungBehindIt) {
  TwoVms t = ringing_ahead_vms();
  ASSERT_TRUE(t.ctx_a && t.ctx_b);
  const AheadCounts c = fill_behind_a_spin(t, AHEAD_SPIN_NS);
  EXPECT_EQ(c.rung_ahead, 1u);
  RecordProperty("turns_started", static_cast<int>(c.turns_started));
}

// Off: the turn still goes on with the fill, rung once the host has seen
// the spin end.
TEST(RingAhead, OffTheLaunchWaitsForThePiecesEnd) {
  TwoVms t = ringing_ahead_vms(AHEAD_TURN_NS, false);
  ASSERT_TRUE(t.ctx_a && t.ctx_b);
  const AheadCounts c = fill_behind_a_spin(t, AHEAD_SPIN_NS);
  EXPECT_EQ(c.rung_ahead, 0u);
  RecordProperty("turns_started", static_cast<int>(c.turns_started));
}

// Another VM's launch waits in the scheduler: A's next entry waits for
// its turn too, behind B's.
TEST(RingAhead, NothingIsRungAheadWhileAnotherVmWaits) {
  TwoVms t = ringing_ahead_vms();
  ASSERT_TRUE(t.ctx_a && t.ctx_b);
  auto buf = t.ctx_b->alloc(64 * sizeof(float));
  ASSERT_TRUE(buf);
  std::optional<driver::Fence> b_fill;
  const AheadCounts c = fill_behind_a_spin(t, AHEAD_SPIN_NS, [&] {
    auto f = t.ctx_b->fill({*buf, 64, 1.f});
    ASSERT_TRUE(f);
    b_fill = *f;
    const uint32_t b = t.tb->vgpu(1)->id();
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (t.tb->host()->queued_submissions(b) == 0 && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(Ms(1));
    ASSERT_GT(t.tb->host()->queued_submissions(b), 0u) << "B's fill is not waiting";
  });
  EXPECT_EQ(c.rung_ahead, 0u);
  ASSERT_TRUE(b_fill);
  EXPECT_TRUE(t.ctx_b->wait(*b_fill));
}

// A's turn has used its slice while its spin runs: the next launch waits
// for the scheduler. The spin runs whole (no slicing): in timed pieces its
// turn would end at the first piece past the slice and a new turn, with
// time, would begin.
TEST(RingAhead, NothingIsRungAheadPastTheTurnsSlice) {
  TwoVms t = ringing_ahead_vms(TURN_NS, true, {0, 0});
  ASSERT_TRUE(t.ctx_a && t.ctx_b);
  const AheadCounts c = fill_behind_a_spin(t, SPIN_NS, [] {
    std::this_thread::sleep_for(std::chrono::nanoseconds(TURN_NS + 10'000'000));
  });
  EXPECT_EQ(c.rung_ahead, 0u);
}

// ---- turn hold (docs/scheduler.md, "Turn hold")

struct HoldVms {
  std::unique_ptr<testbed::Testbed> tb;
  std::vector<std::unique_ptr<driver::Device>> devs;
  std::vector<std::unique_ptr<driver::Context>> ctxs;
};

HoldVms hold_vms(uint64_t turn_ns, uint64_t hold_ns, uint64_t hold_max_ns = mediator::HostConfig{}.turn_hold_max_ns) {
  testbed::TestbedConfig tc = two_vm_config(turn_ns);
  tc.turn_hold_ns = hold_ns;
  tc.turn_hold_max_ns = hold_max_ns;
  HoldVms t;
  auto tb = testbed::Testbed::create(tc);
  EXPECT_TRUE(tb) << tb.error().what();
  if (!tb) return t;
  t.tb = std::move(*tb);
  for (uint32_t vm = 0; vm < 2; ++vm) {
    auto d = driver::Device::open(t.tb->port(vm));
    EXPECT_TRUE(d);
    if (!d) return HoldVms{};
    auto c = (*d)->create_context();
    EXPECT_TRUE(c);
    if (!c) return HoldVms{};
    t.devs.push_back(std::move(*d));
    t.ctxs.push_back(std::move(*c));
  }
  return t;
}

// VM A launches and waits 300 spins of 200 us, so its channel runs dry at
// the end of each and A comes back a moment later. VM B keeps spins
// queued the whole time (it launches 600 before A starts, then waits),
// so another VM always waits when A's channel runs dry. With the hold A's
// next launch goes on in its turn: a few dispatches carry all of A's
// launches; without it A gets one turn per launch. (An earlier version
// had both VMs launch and wait; on a loaded machine neither was queued
// when the other ran dry, and no hold was ever taken.)
constexpr uint64_t SHORT_SPIN_NS = 200'000;
constexpr int LAUNCHES = 300;
constexpr int THINKING_LAUNCHES = 100;

// VM A's `launches` spins of SHORT_SPIN_NS, each waited for, then
// `think_ns` before the next.
void a_launches_and_waits(HoldVms& t, int launches, uint64_t think_ns = 0) {
  driver::Context& a = *t.ctxs[0];
  for (int i = 0; i < launches; ++i) {
    auto f = a.spin({SHORT_SPIN_NS});
    if (!f || !a.wait(*f)) {
      ADD_FAILURE() << "VM A's launch " << i << " failed";
      return;
    }
    if (think_ns) std::this_thread::sleep_for(std::chrono::nanoseconds(think_ns));
  }
}

// A's dispatches (scheduler turns), B's all done.
uint64_t a_dispatches_beside_a_queue(HoldVms& t) {
  std::atomic<bool> b_queued{false};
  std::thread b([&] {
    driver::Context& ctx = *t.ctxs[1];
    std::optional<driver::Fence> last;
    for (int i = 0; i < 2 * LAUNCHES; ++i) {  // B's queue outlasts A's launches
      auto f = ctx.spin({SHORT_SPIN_NS});
      if (!f) break;
      last = *f;
    }
    b_queued = true;
    EXPECT_TRUE(last && ctx.wait(*last)) << "VM B's launches failed";
  });
  while (!b_queued) std::this_thread::sleep_for(Ms(1));
  a_launches_and_waits(t, LAUNCHES);
  b.join();
  return t.tb->counters(0)->submissions;
}

TEST(TurnHold, AVmThatLaunchesAgainAtOnceKeepsItsTurn) {
  // A hold as long as the slice: a loaded machine (or a sanitizer) may
  // take milliseconds to wake a VM.
  auto held = hold_vms(30'000'000, 30'000'000);
  ASSERT_TRUE(held.tb);
  const uint64_t with_hold = a_dispatches_beside_a_queue(held);
  EXPECT_GT(held.tb->host()->turn_counts().holds_kept, 0u);
  EXPECT_LE(with_hold, static_cast<uint64_t>(LAUNCHES / 4))
      << LAUNCHES << " launches of A took " << with_hold << " turns";

  auto plain = hold_vms(30'000'000, 0);
  ASSERT_TRUE(plain.tb);
  const uint64_t without = a_dispatches_beside_a_queue(plain);
  EXPECT_EQ(plain.tb->host()->turn_counts().holds_kept, 0u);
  EXPECT_GT(without, 2 * with_hold) << LAUNCHES << " launches of A took " << without << " turns, " << with_hold
                                    << " held";
  // The host's own count agrees: without holds each of A's turns ends dry,
  // and a held turn that went on is no new turn.
  const TurnCounts h = held.tb->host()->turn_counts(), p = plain.tb->host()->turn_counts();
  EXPECT_GT(p.dry, h.dry);
  EXPECT_GT(p.started, 2 * with_hold);
  EXPECT_LE(p.out_of_time + p.dry, p.started);
  ::testing::Test::RecordProperty("turns_with_hold", static_cast<int>(with_hold));
  ::testing::Test::RecordProperty("turns_without_hold", static_cast<int>(without));
}

// VM A's spin runs while VM B's fill waits; A does not launch again. B
// waits for the rest of the spin and the hold, not for the rest of A's
// (1 s) turn.
TEST(TurnHold, AHeldTurnEndsWhenItsVmDoesNotLaunchAgain) {
  constexpr uint64_t HOLD_NS = 20'000'000, A_SPIN_NS = 50'000'000;
  auto t = hold_vms(1'000'000'000, HOLD_NS);
  ASSERT_TRUE(t.tb);
  auto f = t.ctxs[0]->spin({A_SPIN_NS});
  ASSERT_TRUE(f);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!engine_busy(*t.tb, 0, *t.ctxs[0]) && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(Ms(1));
  expect_wait_within(fill_wait_ns(*t.ctxs[1]), A_SPIN_NS + HOLD_NS + MARGIN_NS);
  EXPECT_TRUE(t.ctxs[0]->wait(*f));
  // At least A's; under a sanitizer another dry turn may have been held too.
  EXPECT_GE(t.tb->host()->turn_counts().holds_expired, 1u);
  EXPECT_EQ(t.tb->host()->turn_counts().holds_kept, 0u);
}

// VM A launches, waits and thinks THINK_NS before its next launch (a
// guest's program between two kernels), beside VM B, which keeps spins
// queued until A is done. The hold follows A's think time: with the
// 200 us floor alone (max = floor) A's 1 ms think outlasts nearly every
// hold and B gets the GPU at each of A's gaps, so each of A's launches is
// a new turn; with room up to 20 ms the hold learns A's gap and A's
// launches go on in its turns. Returns A's submissions (turns asked for).
uint64_t a_turns_beside_b_thinking(HoldVms& t, uint64_t think_ns) {
  std::atomic<bool> a_done{false};
  std::thread b([&] {
    driver::Context& ctx = *t.ctxs[1];
    while (!a_done) {
      std::optional<driver::Fence> last;
      for (int i = 0; i < 50; ++i)
        if (auto f = ctx.spin({SHORT_SPIN_NS})) last = *f;
      if (!last || !ctx.wait(*last)) {
        ADD_FAILURE() << "VM B's launches failed";
        return;
      }
    }
  });
  std::this_thread::sleep_for(Ms(5));  // B's first batch is queued
  a_launches_and_waits(t, THINKING_LAUNCHES, think_ns);
  a_done = true;
  b.join();
  return t.tb->counters(0)->submissions;
}

TEST(TurnHold, TheHoldFollowsAVmsThinkTime) {
  constexpr uint64_t THINK_NS = 1'000'000, FLOOR_NS = 200'000;
  auto fixed = hold_vms(30'000'000, FLOOR_NS, FLOOR_NS);
  ASSERT_TRUE(fixed.tb);
  const uint64_t floor_turns = a_turns_beside_b_thinking(fixed, THINK_NS);
  auto adaptive = hold_vms(30'000'000, FLOOR_NS, 20'000'000);
  ASSERT_TRUE(adaptive.tb);
  const uint64_t adaptive_turns = a_turns_beside_b_thinking(adaptive, THINK_NS);
  const Turn::Think think = adaptive.tb->host()->turn().think(adaptive.tb->vgpu(0)->id());
  // A's gaps were measured: at least its think, and the hold covers them.
  EXPECT_GE(think.samples, uint64_t{THINKING_LAUNCHES / 2});
  EXPECT_GE(think.mean_ns, THINK_NS);
  EXPECT_GT(think.hold_ns, think.mean_ns);
  EXPECT_LE(adaptive_turns, uint64_t{THINKING_LAUNCHES / 3});
  EXPECT_GT(floor_turns, 2 * adaptive_turns)
      << THINKING_LAUNCHES << " launches of A took " << floor_turns << " turns with the floor alone, " << adaptive_turns
      << " with the hold following A's think time";
  ::testing::Test::RecordProperty("turns_adaptive", static_cast<int>(adaptive_turns));
  ::testing::Test::RecordProperty("turns_floor", static_cast<int>(floor_turns));
}

}  // namespace
}  // namespace vgpu::mediator
