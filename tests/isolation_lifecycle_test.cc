// SPDX-License-Identifier: GPL-2.0-or-later
// The isolation catalog (docs/isolation.md), lifecycle: rows 29-31.
// Translations cached in the physical TLB must not outlive their shadow
// directory: across a destroyed VM, a freed context and a guest reset, a
// hand-built channel on an empty directory at the old address faults.
// These tests build VMs on a host by hand; they share the harness's
// constants and checks (tests/testing/isolation_harness.h).
#include <gtest/gtest.h>

#include <memory>
#include <utility>
#include <vector>

#include "shadow/reserved_vram.h"
#include "testbed/mediated_port.h"
#include "tests/testing/isolation_harness.h"

namespace vgpu::mediator::isolation {
namespace {

// ================================================================ lifecycle: stale translations

// The physical TLB caches translations by page-directory address. Shadow
// memory that held a directory goes back to a pool when its VM, context
// or reset lets go of it; were it handed out again before the TLB forgot
// it, a new shadow directory at the same address whose first sync writes
// nothing (an empty guest directory) would be served the old
// translations. In each test a channel built by hand on an empty
// directory rings its doorbell at the GPFIFO VA an earlier channel used:
// its fetch must fault, not read what the old translation names.

constexpr uint32_t RAW_CHID = CHANNELS - 1;
constexpr uint64_t RAW_PD = VM_VRAM -
                            192 * KiB;  // 64 KiB, zero: the partition is zeroed and the driver allocates bottom-up
constexpr uint64_t RAW_INST = VM_VRAM - 64 * KiB;
constexpr uint64_t RAW_USERD = VM_VRAM - 60 * KiB;
constexpr uint64_t RAW_RUNLIST = VM_VRAM - 56 * KiB;
constexpr uint64_t LIFECYCLE_SHADOW = 1 * MiB;
constexpr uint64_t FULL_POOL_SHADOW = 2 * MiB;  // a few contexts' shadows fill it

// A VM created on a host by hand (the testbed's VMs live as long as it).
struct LiveVm {
  Vgpu* vgpu = nullptr;
  std::unique_ptr<testbed::MediatedPort> port;
  std::unique_ptr<driver::Device> dev;
};

VgpuConfig lifecycle_vm(const char* name, Mode mode, uint64_t shadow_bytes) {
  VgpuConfig c;
  c.name = name;
  c.vram_bytes = VM_VRAM;
  c.channels = CHANNELS;
  c.bar_remap = c.lazy_shadow = mode == Mode::fv_opt;
  c.shadow_bytes = shadow_bytes;
  return c;
}

void open_vm(Host& h, const VgpuConfig& c, LiveVm& vm) {
  auto v = h.create_vgpu(c);
  ASSERT_TRUE(v) << v.error().what();
  vm.vgpu = *v;
  auto port = testbed::MediatedPort::create(**v, h.gpu().vram());
  ASSERT_TRUE(port) << port.error().what();
  vm.port = std::move(*port);
  driver::DeviceOptions o;
  o.inst_heap_bytes = INST_HEAP;
  auto dev = driver::Device::open(*vm.port, o);
  ASSERT_TRUE(dev) << dev.error().what();
  vm.dev = std::move(*dev);
}

// The page directory the physical GPU walks for a physical channel.
uint64_t physical_pd(Host& h, uint32_t pchid) {
  const uint64_t inst = fmt::decode_chan_inst(h.gpu().read32(pf::CHAN_INST[pchid].offset)).inst;
  return fmt::decode_address_space(h.gpu().vram().reader(inst)).pdb;
}

// A context that ran one fill: the physical TLB holds its GPFIFO's,
// push buffer's and buffer's translations. Returns the GPFIFO VA.
uint64_t run_a_fill(driver::Context& ctx) {
  auto b = ctx.alloc(WORK_FLOATS * sizeof(float));
  EXPECT_TRUE(b) << b.error().what();
  auto f = ctx.fill({b.value_or(driver::Buffer{}), WORK_FLOATS, 2.f});
  EXPECT_TRUE(f) << f.error().what();
  if (f) {
    EXPECT_TRUE(ctx.wait(*f));
  }
  return ctx.channel().gpfifo_va();
}

// Binds the hand-built channel on an empty directory and rings it once:
// its GPFIFO fetch at `ring_va` must fault: the directory names no table.
void expect_raw_fetch_faults(LiveVm& vm, uint64_t ring_va) {
  GuestAttacker raw(*vm.port);
  raw.bind_raw_channel({RAW_CHID, RAW_INST, RAW_PD, RAW_USERD, RAW_RUNLIST, ring_va});
  raw.doorbell(RAW_CHID, 1);
  ASSERT_EQ(raw.wait_chan_error(RAW_CHID), static_cast<uint32_t>(regs::ChannelError::mmu_fault))
      << "the channel on an empty directory fetched its GPFIFO through a translation nobody made for it";
  const uint32_t u = static_cast<uint32_t>(regs::FaultUnit::pfifo);
  ASSERT_TRUE(raw.reg(pf::FAULT_UNIT_PENDING) & (1u << u));
  const uint32_t type = raw.reg(pf::FAULT_TYPE[u].offset);
  EXPECT_EQ(pf::FaultReason::get(type), static_cast<uint32_t>(regs::FaultReason::pt_not_present));
  EXPECT_EQ(join64(raw.reg(pf::FAULT_VA_HI[u].offset), raw.reg(pf::FAULT_VA_LO[u].offset)), ring_va);
}

class IsolationLifecycle : public ::testing::TestWithParam<Mode> {
 protected:
  // A host of 256 MiB (64 MiB reserved) and one VM on it, "vm", with a
  // shadow pool of `shadow_bytes`.
  void open_one_vm(uint64_t shadow_bytes) {
    auto h = Host::create(HostConfig{.vram_bytes = 256 * MiB, .reserved_bytes = 64 * MiB});
    ASSERT_TRUE(h) << h.error().what();
    host = std::move(*h);
    open_vm(*host, lifecycle_vm("vm", GetParam(), shadow_bytes), vm);
    ASSERT_TRUE(vm.dev);
  }

  std::unique_ptr<Host> host;
  LiveVm vm;  // after host: goes first
};
INSTANTIATE_TEST_SUITE_P(Modes, IsolationLifecycle, ::testing::Values(Mode::fv_opt, Mode::fv_naive), mode_param_name);

// VM A computes and is destroyed; the victim C gets A's partition, and the
// attacker B gets A's shadow pool, so B's first channel directory lies
// exactly where A's was. (A VM F created after A keeps A's pool from
// merging with the free space beyond it, so C's larger pool does not fit
// there; the host's reserved VRAM holds A's, F's and C's pools and not a
// fourth.) B's channel must not reach C's memory through A's cached
// translations.
TEST_P(IsolationLifecycle, ADestroyedVmsTranslationsDoNotServeTheNextVm) {
  HostConfig hc;
  hc.reserved_bytes = 5 * MiB;
  hc.vram_bytes = hc.reserved_bytes + 3 * VM_VRAM;
  auto made = Host::create(hc);
  ASSERT_TRUE(made) << made.error().what();
  Host& h = **made;

  uint64_t ring_va = 0, old_pd = 0, old_base = 0;
  {
    LiveVm a;
    open_vm(h, lifecycle_vm("old", GetParam(), LIFECYCLE_SHADOW), a);
    ASSERT_TRUE(a.dev);
    auto ctx = a.dev->create_context();
    ASSERT_TRUE(ctx) << ctx.error().what();
    ring_va = run_a_fill(**ctx);
    old_pd = physical_pd(h, a.vgpu->pchid_of((*ctx)->channel_id()));
    old_base = a.vgpu->partition().base;
    auto filler = h.create_vgpu(lifecycle_vm("filler", GetParam(), LIFECYCLE_SHADOW));
    ASSERT_TRUE(filler) << filler.error().what();
    ctx->reset();
    a.dev.reset();
    a.port.reset();
    h.destroy_vgpu(a.vgpu);
  }

  LiveVm c;  // the victim, in A's old partition, with a pool A's does not fit
  open_vm(h, lifecycle_vm("victim", GetParam(), 2 * LIFECYCLE_SHADOW), c);
  ASSERT_TRUE(c.dev);
  ASSERT_EQ(c.vgpu->partition().base, old_base);
  auto victim_ctx = c.dev->create_context();
  ASSERT_TRUE(victim_ctx) << victim_ctx.error().what();
  driver::Context& vc = **victim_ctx;
  auto sentinel = vc.alloc(SMALL_SENTINEL);
  ASSERT_TRUE(sentinel);
  std::vector<uint32_t> words(SMALL_SENTINEL / sizeof(uint32_t));
  for (size_t i = 0; i < words.size(); ++i) words[i] = pattern(i, 0x5a5a0000u);
  ASSERT_TRUE(vc.upload(*sentinel, std::span<const uint32_t>(words)));
  run_a_fill(vc);  // the victim's GPFIFO, at the VA A's used, now holds its entries

  LiveVm b;  // the attacker: A's shadow pool
  open_vm(h, lifecycle_vm("attacker", GetParam(), LIFECYCLE_SHADOW), b);
  ASSERT_TRUE(b.dev);
  expect_raw_fetch_faults(b, ring_va);
  EXPECT_EQ(physical_pd(h, b.vgpu->pchid_of(RAW_CHID)), old_pd)
      << "the attacker's directory did not land where the destroyed VM's was: the test checked nothing";

  EXPECT_TRUE(check_sentinel(vc, *sentinel, SMALL_SENTINEL, 0x5a5a0000u));
  run_a_fill(vc);
  EXPECT_TRUE(c.vgpu->guest_errors().empty()) << c.vgpu->guest_errors().front();
}

// The same within one VM: its context goes (its channel unbinds and its
// shadow space is freed), and a new directory must not inherit it.
TEST_P(IsolationLifecycle, AFreedContextsTranslationsDoNotServeTheNextDirectory) {
  ASSERT_NO_FATAL_FAILURE(open_one_vm(LIFECYCLE_SHADOW * 4));
  auto ctx = vm.dev->create_context();
  ASSERT_TRUE(ctx) << ctx.error().what();
  const uint64_t ring_va = run_a_fill(**ctx);
  ctx->reset();
  expect_raw_fetch_faults(vm, ring_va);
}

// And across a guest reset (PMC.ENABLE clearing PFIFO): everything the VM
// had is reclaimed, the driver brings the device up again.
TEST_P(IsolationLifecycle, TranslationsDoNotSurviveAGuestReset) {
  ASSERT_NO_FATAL_FAILURE(open_one_vm(LIFECYCLE_SHADOW * 4));
  uint64_t ring_va = 0;
  {
    auto ctx = vm.dev->create_context();
    ASSERT_TRUE(ctx) << ctx.error().what();
    ring_va = run_a_fill(**ctx);
    GuestAttacker(*vm.port).set_reg(pmc::ENABLE, 0);
  }
  vm.dev.reset();
  auto dev = driver::Device::open(*vm.port, driver::DeviceOptions{.inst_heap_bytes = INST_HEAP});
  ASSERT_TRUE(dev) << dev.error().what();
  vm.dev = std::move(*dev);
  expect_raw_fetch_faults(vm, ring_va);
}

// The same from a full pool: the VM's shadow pool holds the freed
// context's memory in quarantine and too little else for a directory,
// so the hand-built channel's directory can only be the freed one, handed
// out after the shootdown that makes the physical TLB forget it. (The
// tests above find room elsewhere in the pool; only this one needs the
// shootdown itself.)
TEST_P(IsolationLifecycle, AFullShadowPoolHandsOutAFreedDirectoryOnlyAfterAShootdown) {
  ASSERT_NO_FATAL_FAILURE(open_one_vm(FULL_POOL_SHADOW));
  const shadow::ReservedVram& pool = vm.vgpu->shadow_pool();
  const auto room = [&] { return pool.size() - pool.used() - pool.quarantined(); };
  auto ctx = vm.dev->create_context();
  ASSERT_TRUE(ctx) << ctx.error().what();
  const uint64_t ring_va = run_a_fill(**ctx);
  const uint64_t old_pd = physical_pd(*host, vm.vgpu->pchid_of((*ctx)->channel_id()));
  // Contexts with work until no directory fits in what is left (the
  // hand-built channel keeps the last channel); the one that finds the
  // pool exhausted fails (its channel faults) and is dropped.
  std::vector<std::unique_ptr<driver::Context>> fillers;
  while (room() >= fmt::PD.table_bytes() && fillers.size() + 2 < CHANNELS) {
    auto f = vm.dev->create_context();
    if (!f) break;
    fillers.push_back(std::move(*f));
    run_a_fill(*fillers.back());
  }
  ASSERT_LT(room(), fmt::PD.table_bytes()) << "the pool still has room for a directory: the test would check nothing";
  const uint64_t shootdowns = pool.shootdowns();
  ctx->reset();
  expect_raw_fetch_faults(vm, ring_va);
  EXPECT_GT(pool.shootdowns(), shootdowns) << "the freed memory came back without the pool running out";
  EXPECT_EQ(physical_pd(*host, vm.vgpu->pchid_of(RAW_CHID)), old_pd)
      << "the new directory did not land where the freed one was: the test checked nothing";
}

}  // namespace
}  // namespace vgpu::mediator::isolation
