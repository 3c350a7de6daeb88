// SPDX-License-Identifier: GPL-2.0-or-later
// The host: vGPU creation and destruction (partitions, channel ranges,
// config checks), reserved VRAM accounting, and per-VM routing of what the
// physical GPU reports.
#include "mediator/host.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "driver/runtime.h"
#include "testbed/mediated_port.h"
#include "testbed/testbed.h"
#include "testbed/testing/testbeds.h"
#include "tests/testing/fill_check.h"
#include "tests/testing/two_vms.h"

namespace vgpu::mediator {
namespace {

namespace pf = regs::pfifo;
using driver::Bar;

constexpr uint64_t VM_VRAM = 64 * MiB;
constexpr uint64_t VM_SHADOW = 1 * MiB;
// The host's own structures plus a shadow budget for every channel-sized VM.
constexpr uint64_t RESERVED = 4 * MiB + regs::NUM_CHANNELS * VM_SHADOW;

std::unique_ptr<Host> make_host(uint32_t vm_slots) {
  HostConfig hc;
  hc.reserved_bytes = RESERVED;
  hc.vram_bytes = RESERVED + vm_slots * VM_VRAM;
  auto h = Host::create(hc);
  EXPECT_TRUE(h) << h.error().what();
  return h ? std::move(*h) : nullptr;
}

VgpuConfig vm(const char* name, uint32_t channels, uint64_t vram = VM_VRAM) {
  VgpuConfig c;
  c.name = name;
  c.channels = channels;
  c.vram_bytes = vram;
  c.shadow_bytes = VM_SHADOW;
  return c;
}

std::set<uint32_t> pchids(const Vgpu& v) {
  std::set<uint32_t> out;
  for (uint32_t p = 0; p < regs::NUM_CHANNELS; ++p)
    if (v.owns_pchid(p)) out.insert(p);
  return out;
}

bool overlap(const shadow::Partition& a, const shadow::Partition& b) {
  return a.base < b.base + b.size && b.base < a.base + a.size;
}

TEST(Host, VgpusGetDisjointPartitionsAndChannelRanges) {
  auto h = make_host(2);
  ASSERT_TRUE(h);
  auto a = h->create_vgpu(vm("a", 8));
  auto b = h->create_vgpu(vm("b", 16));
  ASSERT_TRUE(a) << a.error().what();
  ASSERT_TRUE(b) << b.error().what();
  const shadow::Partition pa = (*a)->partition(), pb = (*b)->partition();
  EXPECT_EQ(pa.size, VM_VRAM);
  EXPECT_EQ(pb.size, VM_VRAM);
  EXPECT_FALSE(overlap(pa, pb));
  // Neither reaches into hypervisor-reserved VRAM.
  EXPECT_GE(pa.base, RESERVED);
  EXPECT_GE(pb.base, RESERVED);
  const auto ca = pchids(**a), cb = pchids(**b);
  EXPECT_EQ(ca.size(), 8u);
  EXPECT_EQ(cb.size(), 16u);
  for (uint32_t p : ca) EXPECT_FALSE(cb.contains(p)) << "pchid " << p;
}

TEST(Host, DestroyingAVgpuFreesItsPartitionForANewOne) {
  auto h = make_host(2);
  ASSERT_TRUE(h);
  auto a = h->create_vgpu(vm("a", 4));
  auto b = h->create_vgpu(vm("b", 4));
  ASSERT_TRUE(a && b);
  const uint64_t a_base = (*a)->partition().base;
  ASSERT_FALSE(h->create_vgpu(vm("c", 4)));
  h->destroy_vgpu(*a);
  auto c = h->create_vgpu(vm("c", 4));
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ((*c)->partition().base, a_base);
}

TEST(Host, OwnVramFdSharesThePartitionAndNothingElse) {
  auto h = make_host(2);
  ASSERT_TRUE(h);
  VgpuConfig c = vm("a", 4);
  c.own_vram_fd = true;
  auto a = h->create_vgpu(c);
  ASSERT_TRUE(a) << a.error().what();
  const int fd = (*a)->vram_fd();
  ASSERT_GE(fd, 0);
  EXPECT_EQ(lseek(fd, 0, SEEK_END), static_cast<off_t>(VM_VRAM)) << "the fd holds the partition, not all VRAM";
  auto* peer = static_cast<uint32_t*>(mmap(nullptr, VM_VRAM, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(static_cast<void*>(peer), MAP_FAILED);
  peer[1] = 0x5a5a;
  const uint64_t base = (*a)->partition().base;
  EXPECT_EQ(h->gpu().vram().read32(base + 4), 0x5a5au);
  h->destroy_vgpu(*a);
  peer[1] = 0x7777;  // the old fd no longer reaches the GPU
  EXPECT_EQ(h->gpu().vram().read32(base + 4), 0u);
  munmap(peer, VM_VRAM);
  auto b = h->create_vgpu(vm("b", 4));
  ASSERT_TRUE(b);
  EXPECT_EQ((*b)->partition().base, base);
  EXPECT_EQ((*b)->vram_fd(), -1);
}

TEST(Host, DestroyingAVgpuFreesItsChannelsForANewOne) {
  auto h = make_host(3);
  ASSERT_TRUE(h);
  auto a = h->create_vgpu(vm("a", regs::NUM_CHANNELS - 8));
  auto b = h->create_vgpu(vm("b", 8));
  ASSERT_TRUE(a && b);
  const auto a_chans = pchids(**a);
  ASSERT_FALSE(h->create_vgpu(vm("c", 1)));
  h->destroy_vgpu(*a);
  auto c = h->create_vgpu(vm("c", regs::NUM_CHANNELS - 8));
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(pchids(**c), a_chans);
}

void expect_refused(Host& h, const VgpuConfig& c, const char* field) {
  auto v = h.create_vgpu(c);
  ASSERT_FALSE(v) << "config naming " << field << " accepted";
  EXPECT_EQ(v.error().code, Errc::invalid_argument);
  EXPECT_NE(v.error().message.find(field), std::string::npos) << v.error().message;
}

TEST(Host, RefusesZeroChannels) {
  auto h = make_host(1);
  ASSERT_TRUE(h);
  expect_refused(*h, vm("v", 0), "channels");
}

TEST(Host, RefusesMoreChannelsThanTheGpuHas) {
  auto h = make_host(1);
  ASSERT_TRUE(h);
  expect_refused(*h, vm("v", regs::NUM_CHANNELS + 1), "channels");
}

TEST(Host, RefusesVramThatIsNotAMibMultiple) {
  auto h = make_host(1);
  ASSERT_TRUE(h);
  expect_refused(*h, vm("v", 4, VM_VRAM + 4096), VGPU_OPT_VRAM ":");
  expect_refused(*h, vm("v", 4, 0), VGPU_OPT_VRAM ":");
}

TEST(Host, RefusesZeroWeight) {
  auto h = make_host(1);
  ASSERT_TRUE(h);
  VgpuConfig c = vm("v", 4);
  c.weight = 0;
  expect_refused(*h, c, "weight");
}

TEST(Host, RunningOutOfVramIsAClearError) {
  auto h = make_host(1);
  ASSERT_TRUE(h);
  auto v = h->create_vgpu(vm("big", 4, 2 * VM_VRAM));
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, Errc::out_of_memory);
  EXPECT_NE(v.error().message.find("VRAM"), std::string::npos) << v.error().message;
  EXPECT_NE(v.error().message.find("big"), std::string::npos) << v.error().message;
}

TEST(Host, RunningOutOfChannelsIsAClearError) {
  auto h = make_host(2);
  ASSERT_TRUE(h);
  ASSERT_TRUE(h->create_vgpu(vm("a", regs::NUM_CHANNELS - 2)));
  auto v = h->create_vgpu(vm("b", 3));
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, Errc::out_of_memory);
  EXPECT_NE(v.error().message.find("channels"), std::string::npos) << v.error().message;
}

TEST(Host, ReservedVramUseIsReported) {
  auto tb = testing::create_testbed(testing::one_vm(testbed::Mode::fv_opt, 128 * MiB));
  ASSERT_TRUE(tb);
  Host& h = *tb->host();
  Vgpu& v = *tb->vgpu(0);
  EXPECT_GE(h.reserved_used(), v.shadow_pool().size()) << "the host's own structures and the vGPU's budget";
  const uint64_t idle = v.counters().reserved_bytes;
  EXPECT_EQ(idle, v.shadow_pool().used());
  auto dev = driver::Device::open(tb->port(0));
  ASSERT_TRUE(dev) << dev.error().what();
  auto ctx = (*dev)->create_context();
  ASSERT_TRUE(ctx) << ctx.error().what();
  EXPECT_GT(v.counters().reserved_bytes, idle) << "shadow tables and the shadow instance block";
  EXPECT_EQ(v.counters().reserved_bytes, v.shadow_pool().used());
}

// ---- isolation of what the GPU reports

TEST(HostRouting, ChannelErrorReachesOnlyTheOwningVm) {
  const testbed::TestbedConfig tc = two_fv_opt_vms();
  auto tb = testbed::Testbed::create(tc);
  ASSERT_TRUE(tb) << tb.error().what();
  testbed::Testbed& t = **tb;
  Vgpu& va = *t.vgpu(0);
  Vgpu& vb = *t.vgpu(1);
  auto dev_a = driver::Device::open(t.port(0));
  auto dev_b = driver::Device::open(t.port(1));
  ASSERT_TRUE(dev_a) << dev_a.error().what();
  ASSERT_TRUE(dev_b) << dev_b.error().what();
  auto ctx_a = (*dev_a)->create_context();
  auto ctx_b = (*dev_b)->create_context();
  ASSERT_TRUE(ctx_a) << ctx_a.error().what();
  ASSERT_TRUE(ctx_b) << ctx_b.error().what();
  const uint64_t b_errors = vb.counters().guest_errors;
  const uint64_t b_faults = vb.counters().faults;

  // VM A: saxpy over addresses below the first user PDE, mapped by nothing.
  const cls::SaxpyArgs bad{fmt::SMALL_PAGE, 2 * fmt::SMALL_PAGE, 64, 1.f};
  auto f = (*ctx_a)->launch(cls::Kernel::saxpy, std::as_bytes(std::span(&bad, 1)), {{1, 1, 1}, {64, 1, 1}});
  ASSERT_TRUE(f) << f.error().what();
  EXPECT_FALSE((*ctx_a)->wait(*f)) << "the launch should fail with a channel error";
  const uint32_t chid = (*ctx_a)->channel_id();
  EXPECT_NE(t.port(0).read32(Bar::bar0, pf::CHAN_ERROR_PENDING[chid / 32].offset) & (1u << (chid % 32)), 0u);
  EXPECT_NE(t.port(0).read32(Bar::bar0, pf::CHAN_ERROR[chid].offset), 0u);
  EXPECT_GT(va.counters().faults, 0u);

  // VM B sees nothing of it and its work completes.
  for (uint32_t i = 0; i < regs::NUM_CHANNELS / 32; ++i)
    EXPECT_EQ(t.port(1).read32(Bar::bar0, pf::CHAN_ERROR_PENDING[i].offset), 0u) << "word " << i;
  for (uint32_t c = 0; c < tc.channels_per_vm; ++c)
    EXPECT_EQ(t.port(1).read32(Bar::bar0, pf::CHAN_ERROR[c].offset), 0u) << "channel " << c;
  EXPECT_EQ(t.port(1).read32(Bar::bar0, pf::FAULT_UNIT_PENDING.offset), 0u);
  EXPECT_EQ(t.port(1).read32(Bar::bar0, pf::INTR.offset) & (pf::IntrChannelError::mask | pf::IntrMmuFault::mask), 0u);
  EXPECT_EQ(vb.counters().faults, b_faults);

  constexpr uint32_t COUNT = 128;
  auto buf = (*ctx_b)->alloc(COUNT * sizeof(float));
  ASSERT_TRUE(buf) << buf.error().what();
  Status filled = testing::fill_and_check(**ctx_b, *buf, COUNT, 3.f);
  EXPECT_TRUE(filled) << filled.error().what();
  EXPECT_EQ(vb.counters().guest_errors, b_errors);
}

// ---- host resources

// While another VM's long kernel holds the GPU, a VM rings its doorbell
// again and again. Each doorbell used to queue its own scheduler entry:
// host memory grew with the guest's doorbell count. A channel now has at
// most one queued submission, which runs up to the latest GP_PUT.
// The spin runs whole (slice-blocks 0): one engine job the storm meets.
TEST(HostResources, ADoorbellStormQueuesAtMostOneSubmissionPerChannel) {
  testbed::TestbedConfig tc = two_fv_opt_vms();
  tc.slice_blocks = {0, 0};
  auto tb = testbed::Testbed::create(tc);
  ASSERT_TRUE(tb) << tb.error().what();
  testbed::Testbed& t = **tb;
  auto dev_a = driver::Device::open(t.port(0));
  auto dev_b = driver::Device::open(t.port(1));
  ASSERT_TRUE(dev_a && dev_b);
  auto ctx_a = (*dev_a)->create_context();
  auto ctx_b = (*dev_b)->create_context();
  ASSERT_TRUE(ctx_a && ctx_b);
  auto spin = (*ctx_a)->spin(
      {2'000'000'000});  // VM A holds the GPU for 2 s (the storm takes far less, even under ASan)
  ASSERT_TRUE(spin) << spin.error().what();
  const auto engine_busy = [&] {
    const uint32_t pchid = t.vgpu(0)->pchid_of((*ctx_a)->channel_id());
    return pf::ChanStateEngineOutstanding::get(t.host()->gpu().read32(pf::CHAN_STATE[pchid].offset)) != 0;
  };
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!engine_busy() && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(engine_busy()) << "VM A's spin never started";

  // VM B's raw doorbells: GP_PUT of its channel, rewritten 20,000 times.
  const uint32_t chid = (*ctx_b)->channel_id();
  const uint64_t userd_base = uint64_t{pf::UserdBaseAddr::get(t.port(1).read32(Bar::bar0, pf::USERD_BASE.offset))}
                              << pf::USERD_BASE_SHIFT;
  const uint64_t gp_put = userd_base + uint64_t{chid} * regs::userd::SIZE + regs::userd::GP_PUT;
  const uint32_t put = t.port(1).read32(Bar::bar1, gp_put);
  constexpr uint32_t DOORBELLS = 20'000;
  const uint64_t rung_before = t.vgpu(1)->counters().doorbells;
  for (uint32_t i = 0; i < DOORBELLS; ++i) t.port(1).write32(Bar::bar1, gp_put, put);
  ASSERT_TRUE(engine_busy()) << "the spin ended during the storm: the queue was drained meanwhile";
  EXPECT_EQ(t.vgpu(1)->counters().doorbells, rung_before + DOORBELLS);
  EXPECT_LE(t.host()->queued_submissions(t.vgpu(1)->id()), 1u);

  ASSERT_TRUE((*ctx_a)->wait(*spin));
  // VM B's channel still works.
  auto buf = (*ctx_b)->alloc(64 * sizeof(float));
  ASSERT_TRUE(buf);
  auto f = (*ctx_b)->fill({*buf, 64, 1.f});
  ASSERT_TRUE(f);
  EXPECT_TRUE((*ctx_b)->wait(*f));
}

// ---- channel teardown

// An engine still running work of a channel the guest has unbound walks
// that channel's shadow tables: they, and its shadow instance block, stay
// allocated until the GPU reports the work done, and are reclaimed at the
// next bind after that.
// The spin runs whole (slice-blocks 0): sliced, its pieces would stop at
// the unbind, which drops the rest of a held launch.
TEST(HostTeardown, ShadowsOfAnUnboundChannelLiveUntilItsEngineWorkEnds) {
  testbed::TestbedConfig tc = two_fv_opt_vms();
  tc.vms = 1;
  tc.slice_blocks = {0};
  auto tb = testbed::Testbed::create(tc);
  ASSERT_TRUE(tb) << tb.error().what();
  testbed::Testbed& t = **tb;
  Vgpu& v = *t.vgpu(0);
  auto dev = driver::Device::open(t.port(0));
  ASSERT_TRUE(dev) << dev.error().what();
  const uint64_t baseline = v.counters().reserved_bytes;
  constexpr uint64_t SPIN_NS = 1'000'000'000;  // far longer than a context teardown, even under load
  constexpr uint64_t WAIT_NS = 5'000'000'000;
  const auto engine_busy = [&](uint32_t pchid) {
    return pf::ChanStateEngineOutstanding::get(t.host()->gpu().read32(pf::CHAN_STATE[pchid].offset)) != 0;
  };
  const auto wait_for = [&](auto done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(WAIT_NS);
    while (!done() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return done();
  };

  auto ctx = (*dev)->create_context();
  ASSERT_TRUE(ctx) << ctx.error().what();
  const uint32_t pchid = v.pchid_of((*ctx)->channel_id());
  auto f = (*ctx)->spin({SPIN_NS});
  ASSERT_TRUE(f) << f.error().what();
  ASSERT_TRUE(wait_for([&] { return engine_busy(pchid); })) << "the spin never reached the engine";
  ctx->reset();  // unbinds the channel while its spin runs
  ASSERT_TRUE(engine_busy(pchid)) << "the spin ended before the channel was unbound: nothing to check";
  EXPECT_GT(v.counters().reserved_bytes, baseline) << "shadows freed under a running engine";

  ASSERT_TRUE(wait_for([&] { return !engine_busy(pchid); })) << "the spin never ended";
  auto next = (*dev)->create_context();  // a bind: reclaims what the spin held
  ASSERT_TRUE(next) << next.error().what();
  next->reset();
  EXPECT_EQ(v.counters().reserved_bytes, baseline);
}

// A vGPU destroyed while an engine still runs its work keeps its partition
// and shadow pool out of reuse until that work has ended: destroy_vgpu
// waits for it.
TEST(HostTeardown, DestroyingAVgpuWaitsForItsEngineWork) {
  auto h = make_host(1);
  ASSERT_TRUE(h);
  VgpuConfig spinner = vm("spinner", 4);
  spinner.slice_blocks = 0;  // one engine job that outlives the context (sliced, its held rest is dropped)
  auto v = h->create_vgpu(spinner);
  ASSERT_TRUE(v) << v.error().what();
  const uint64_t base = (*v)->partition().base;
  constexpr uint64_t SPIN_NS = 1'000'000'000;  // far longer than a context teardown, even under load
  uint32_t pchid = 0;
  {
    auto port = testbed::MediatedPort::create(**v, h->gpu().vram());
    ASSERT_TRUE(port) << port.error().what();
    auto dev = driver::Device::open(**port);
    ASSERT_TRUE(dev) << dev.error().what();
    auto ctx = (*dev)->create_context();
    ASSERT_TRUE(ctx) << ctx.error().what();
    pchid = (*v)->pchid_of((*ctx)->channel_id());
    auto f = (*ctx)->spin({SPIN_NS});
    ASSERT_TRUE(f) << f.error().what();
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!pf::ChanStateEngineOutstanding::get(h->gpu().read32(pf::CHAN_STATE[pchid].offset)) &&
           std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(pf::ChanStateEngineOutstanding::get(h->gpu().read32(pf::CHAN_STATE[pchid].offset)))
      << "the spin was not running when the vGPU was destroyed: nothing to check";
  h->destroy_vgpu(*v);
  EXPECT_FALSE(pf::ChanStateEngineOutstanding::get(h->gpu().read32(pf::CHAN_STATE[pchid].offset)))
      << "destroy_vgpu returned while the VM's engine work still ran";
  auto again = h->create_vgpu(vm("next", 4));
  ASSERT_TRUE(again) << again.error().what();
  EXPECT_EQ((*again)->partition().base, base);
}

// ---- threads

// VM 0 completes short launches as fast as it can (a stream of idle events
// from the PFIFO thread) while VM 1 runs `other`; both must finish. A hang
// is reported by the deadline: a deadlocked thread cannot be joined, so the
// program ends there.
void run_beside_launches(const std::function<Status(testbed::Vm&)>& other,
                         bool ring_ahead = mediator::HostConfig{}.ring_ahead) {
  testbed::TestbedConfig tc = two_fv_opt_vms();
  tc.ring_ahead = ring_ahead;
  auto tb = testbed::Testbed::create(tc);
  ASSERT_TRUE(tb) << tb.error().what();
  constexpr uint32_t COUNT = 64;
  constexpr auto DEADLINE = std::chrono::seconds(120);
  std::atomic<bool> other_done{false}, finished{false};
  std::atomic<int> launches{0};
  std::thread deadline([&] {
    const auto end = std::chrono::steady_clock::now() + DEADLINE;
    while (!finished && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (finished) return;
    std::fprintf(stderr, "HostThreads: no progress for %lld s: the mediator deadlocked\n",
                 static_cast<long long>(DEADLINE.count()));
    std::abort();
  });
  const auto statuses = (*tb)->run([&](testbed::Vm& vm) -> Status {
    if (vm.index == 1) {
      const Status s = other(vm);
      other_done = true;
      return s;
    }
    auto ctx = vm.device.create_context();
    if (!ctx) return std::unexpected(ctx.error());
    auto buf = (*ctx)->alloc(COUNT * sizeof(float));
    if (!buf) return std::unexpected(buf.error());
    // Two launches in flight: the second doorbell usually lands during the
    // first one's turn, so it is rung ahead even when this thread is slow
    // to come back after a fence (one at a time, a loaded machine missed
    // the turn's hold in 4 of 20 runs and nothing was rung ahead).
    while (!other_done) {
      auto first = (*ctx)->fill({*buf, COUNT, 1.f});
      if (!first) return std::unexpected(first.error());
      auto second = (*ctx)->fill({*buf, COUNT, 2.f});
      if (!second) return std::unexpected(second.error());
      if (Status s = (*ctx)->wait(*first); !s) return s;
      if (Status s = (*ctx)->wait(*second); !s) return s;
      launches += 2;
    }
    return {};
  });
  finished = true;
  deadline.join();
  for (const Status& st : statuses) EXPECT_TRUE(st) << st.error().what();
  EXPECT_GT(launches.load(), 0);
  if (ring_ahead) {
    EXPECT_GT((*tb)->vgpu(0)->counters().rung_ahead, 0u) << "no entry was rung ahead: nothing checked";
  }
}

// The GPU model delivers a channel event on whichever thread lets it, and
// that can be a VM's thread inside a host register write made under a
// mediator lock. Before MediatorLock, the handler then took the host's
// mutex a second time on that thread and everything stopped (seen in CI,
// in Host::set_runnable). VM 1 turns its idle channel off and on: host
// register writes under the host's mutex.
Status toggle_a_channel(testbed::Vm& vm) {
  constexpr int TOGGLES = 100000;
  auto ctx = vm.device.create_context();
  if (!ctx) return std::unexpected(ctx.error());
  const uint32_t state = pf::CHAN_STATE[(*ctx)->channel_id()].offset;
  for (int i = 0; i < TOGGLES; ++i) {
    vm.port.write32(Bar::bar0, state, pf::ChanStateRunnable::make(0));
    vm.port.write32(Bar::bar0, state, pf::ChanStateRunnable::make(1));
  }
  return {};
}

// Ringing ahead off: since it is on by default, the test below would be
// this one again.
TEST(HostThreads, ChannelTogglingBesideAStreamOfCompletionsDoesNotDeadlock) {
  run_beside_launches(toggle_a_channel, false);
}

// The same with ringing ahead: each turn may see two idle events, and the
// second can be handled after the turn ended and the channel's next
// submission was put in flight, before its dispatch. Taken for that turn's
// end, it ended a turn that had not started, and the channel then never
// ran again (a lost fence in about a third of runs under ASan on two
// loaded cores; Turn::piece_ran now asks ShadowChannels::in_turn_of).
TEST(HostThreads, ChannelTogglingBesideAStreamOfRungAheadCompletionsLosesNoFence) {
  run_beside_launches(toggle_a_channel, true);
}

// A context is destroyed as soon as its fence signals, when the GPU may
// still be inside that channel's slice, and the next one takes the same
// channel id, shadow instance block and shadow directory at once. Before
// the host waited out the slice (PREEMPT) on unbind, the old slice wrote
// GP_GET into the new binding's instance block and the new channel ran
// stale GPFIFO entries: an MMU fault at the fence's VA before its first
// submission (26 of 160 runs under load).
TEST(HostThreads, ChannelChurnBesideAStreamOfCompletionsKeepsEveryChannelSound) {
  constexpr int CHURNS = 150;
  run_beside_launches([](testbed::Vm& vm) -> Status {
    for (int i = 0; i < CHURNS; ++i) {
      auto ctx = vm.device.create_context();  // destroyed again at once
      if (!ctx) return std::unexpected(ctx.error());
    }
    return {};
  });
}

// ---- the turn observer (HostConfig::on_turn, QEMU's turn trace events)

// Two VMs fill buffers at once: the observer sees one turn at a time,
// each start followed by the same VM's end, and turns of both VMs.
TEST(HostTurns, TheObserverSeesEachTurnStartThenItsEndOneVmAtATime) {
  std::mutex mu;
  std::vector<TurnEvent> events;
  testbed::TestbedConfig tc;
  tc.mode = testbed::Mode::fv_opt;
  tc.vms = 2;
  tc.vram_per_vm = VM_VRAM;
  tc.on_turn = [&](const TurnEvent& e) {
    std::lock_guard lock(mu);
    events.push_back(e);
  };
  auto tb = testbed::Testbed::create(tc);
  ASSERT_TRUE(tb) << tb.error().what();
  constexpr int FILLS = 8;
  constexpr uint32_t WORDS = 4096;
  auto work = [&](uint32_t vm) {
    auto dev = driver::Device::open((*tb)->port(vm));
    ASSERT_TRUE(dev);
    auto ctx = (*dev)->create_context();
    ASSERT_TRUE(ctx);
    auto buf = (*ctx)->alloc(WORDS * sizeof(float));
    ASSERT_TRUE(buf);
    for (int i = 0; i < FILLS; ++i) {
      auto f = (*ctx)->fill({*buf, WORDS, static_cast<float>(i)});
      ASSERT_TRUE(f);
      ASSERT_TRUE((*ctx)->wait(*f));
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  // A turn may end (a held one, after its hold) after its fence was seen.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  auto settled = [&] {
    std::lock_guard lock(mu);
    return !events.empty() && !events.back().start && !(*tb)->host()->queued_submissions((*tb)->vgpu(0)->id()) &&
           !(*tb)->host()->queued_submissions((*tb)->vgpu(1)->id());
  };
  while (!settled() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::lock_guard lock(mu);
  ASSERT_FALSE(events.empty());
  std::set<uint32_t> vms;
  for (size_t i = 0; i < events.size(); ++i) {
    const TurnEvent& e = events[i];
    ASSERT_EQ(e.start, i % 2 == 0) << "event " << i << " of VM " << e.vm;
    if (e.start)
      vms.insert(e.vm);
    else
      EXPECT_EQ(e.vm, events[i - 1].vm) << "event " << i;
  }
  EXPECT_FALSE(events.back().start);
  EXPECT_EQ(vms, (std::set<uint32_t>{(*tb)->vgpu(0)->id(), (*tb)->vgpu(1)->id()}));
  uint64_t gpu_ns = 0;
  for (const TurnEvent& e : events) gpu_ns += e.start ? 0 : e.gpu_ns;
  EXPECT_GT(gpu_ns, 0u);
}

}  // namespace
}  // namespace vgpu::mediator
