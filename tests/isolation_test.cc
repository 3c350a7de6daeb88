// SPDX-License-Identifier: GPL-2.0-or-later
// The isolation catalog (docs/isolation.md): one test per attack. In each,
// VM 1 (the victim) runs a real workload through the unchanged driver
// while VM 0 (the attacker) opens a normal context and then corrupts its
// own tables and registers through raw BAR accesses, aiming at the
// victim's memory and channels. Every test checks three things: the
// attack went through the mediator (its counters or error record moved),
// the attacker got the specific fault or error, and the victim's results
// and the checksum of its data in VRAM are unchanged.
//
// The attacker is VM 0 and the victim VM 1, so the victim's partition
// lies right after the attacker's: an attacker guest address past its own
// partition's end is exactly where the victim's data would be if the
// mediator did not check it (Attack::foreign).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "common/text.h"
#include "driver/compute.h"
#include "driver/copy_engine.h"
#include "driver/pushbuf.h"
#include "gpu/kernels/reference.h"
#include "tests/testing/guest_attacker.h"
#include "testbed/mediated_port.h"
#include "testbed/testbed.h"

namespace vgpu::mediator {
namespace {

using attack::GuestAttacker;
using driver::Bar;
using testbed::Mode;
using testbed::Testbed;
using testbed::TestbedConfig;
using testbed::Vm;
namespace pf = regs::pfifo;
namespace pbus = regs::pbus;
namespace pmc = regs::pmc;

constexpr uint32_t ATTACKER = 0;
constexpr uint32_t VICTIM = 1;
constexpr uint64_t VM_VRAM = 64 * MiB;
// Guest RAM: not a whole number of big pages, so that a big page can
// straddle its end.
constexpr uint64_t VM_RAM = 16 * MiB + 64 * KiB;
constexpr uint32_t CHANNELS = 8;
constexpr uint32_t SPARE_CHID = CHANNELS - 1;  // a channel id of the attacker's range it never uses
constexpr uint64_t INST_HEAP = 8 * MiB;        // BAR3 [8, 16) MiB stays unmapped
constexpr uint64_t BAR3_UNUSED = 12 * MiB;
constexpr uint64_t BAR1_UNUSED = 100 * MiB;           // below the first PDE's end, above what the driver maps
constexpr uint64_t SMALL_SENTINEL = 16 * KiB;         // small pages
constexpr uint64_t BIG_SENTINEL = 2 * fmt::BIG_PAGE;  // big pages
constexpr uint32_t MIN_ROUNDS = 3;
constexpr uint32_t WORK_FLOATS = 4096;
constexpr uint32_t GEMM = 32;
constexpr auto READY_TIMEOUT = std::chrono::seconds(60);

uint32_t pattern(uint64_t i, uint32_t salt) { return static_cast<uint32_t>(i * 2654435761u) ^ salt; }

// ---------------------------------------------------------------- the victim

struct VictimShared {
  std::atomic<bool> ready{false};
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> rounds{0};
  // Guest addresses, published before `ready`.
  uint64_t small_gaddr = 0, big_gaddr = 0, inst = 0, pd = 0, userd = 0;
  uint64_t sum_before = 0, sum_after = 0;  // host VRAM checksum of both sentinels
};

uint64_t host_checksum(Testbed& tb, uint64_t host_addr, uint64_t bytes) {
  std::vector<uint32_t> words(bytes / sizeof(uint32_t));
  for (size_t i = 0; i < words.size(); ++i) words[i] = tb.gpu().vram().read32(host_addr + i * sizeof(uint32_t));
  return attack::checksum(words.data(), words.size());
}

uint64_t victim_sum(Testbed& tb, const VictimShared& sh) {
  const uint64_t base = tb.vgpu(VICTIM)->partition().base;
  return host_checksum(tb, base + sh.small_gaddr, SMALL_SENTINEL) ^
         (host_checksum(tb, base + sh.big_gaddr, BIG_SENTINEL) * 31);
}

Status check_sentinel(driver::Context& ctx, driver::Buffer b, uint64_t bytes, uint32_t salt) {
  std::vector<uint32_t> got(bytes / sizeof(uint32_t));
  if (auto s = ctx.download(b, std::span<uint32_t>(got)); !s) return s;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != pattern(i, salt)) return fail(Errc::device_error, strfmt("victim sentinel word %zu changed", i));
  return {};
}

Status victim_round(driver::Context& ctx, driver::Buffer work, driver::Buffer a, driver::Buffer b, driver::Buffer c,
                    uint32_t round) {
  const float value = static_cast<float>(round + 1);
  auto f = ctx.fill({work, WORK_FLOATS, value});
  if (!f) return std::unexpected(f.error());
  if (auto s = ctx.wait(*f); !s) return s;
  std::vector<float> got(WORK_FLOATS);
  if (auto s = ctx.download(work, std::span<float>(got)); !s) return s;
  if (std::any_of(got.begin(), got.end(), [&](float x) { return x != value; }))
    return fail(Errc::device_error, strfmt("victim fill of round %u wrong", round));

  std::mt19937 rng(round);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> ha(GEMM * GEMM), hb(GEMM * GEMM), hc(GEMM * GEMM, 0.f), want(GEMM * GEMM, 0.f);
  for (auto& x : ha) x = d(rng);
  for (auto& x : hb) x = d(rng);
  if (auto s = ctx.upload(a, std::span<const float>(ha)); !s) return s;
  if (auto s = ctx.upload(b, std::span<const float>(hb)); !s) return s;
  auto g = ctx.sgemm({a, b, c, GEMM, GEMM, GEMM, 1.f, 0.f});
  if (!g) return std::unexpected(g.error());
  if (auto s = ctx.wait(*g); !s) return s;
  if (auto s = ctx.download(c, std::span<float>(hc)); !s) return s;
  gpu::kernels::reference::sgemm(cls::SgemmArgs{0, 0, 0, GEMM, GEMM, GEMM, 1.f, 0.f, 0}, ha.data(), hb.data(),
                                 want.data());
  for (size_t i = 0; i < hc.size(); ++i)
    if (std::abs(hc[i] - want[i]) > 1e-4f * (1.f + std::abs(want[i])))
      return fail(Errc::device_error, strfmt("victim sgemm of round %u differs at %zu", round, i));
  return {};
}

Status victim(Vm& vm, Testbed& tb, VictimShared& sh) {
  auto ctx = vm.device.create_context();
  if (!ctx) return std::unexpected(ctx.error());
  driver::Context& c = **ctx;
  auto small = c.alloc(SMALL_SENTINEL), big = c.alloc(BIG_SENTINEL), work = c.alloc(WORK_FLOATS * sizeof(float));
  auto ga = c.alloc(GEMM * GEMM * 4), gb = c.alloc(GEMM * GEMM * 4), gc = c.alloc(GEMM * GEMM * 4);
  if (!small || !big || !work || !ga || !gb || !gc) return fail(Errc::out_of_memory, "victim buffers");
  for (auto [buf, bytes, salt] :
       {std::tuple{*small, SMALL_SENTINEL, 0x5a5a0000u}, std::tuple{*big, BIG_SENTINEL, 0xa5a50000u}}) {
    std::vector<uint32_t> words(bytes / sizeof(uint32_t));
    for (size_t i = 0; i < words.size(); ++i) words[i] = pattern(i, salt);
    if (auto s = c.upload(buf, std::span<const uint32_t>(words)); !s) return s;
  }
  driver::PageTables& vmm = c.address_space().vmm();
  auto small_pte = vmm.pte(c.gpu_va(*small).value(), fmt::PageSize::small);
  auto big_pte = vmm.pte(c.gpu_va(*big).value(), fmt::PageSize::big);
  if (!small_pte || !big_pte) return fail(Errc::not_found, "victim sentinel PTEs not found");
  sh.small_gaddr = fmt::pte::addr(*small_pte);
  sh.big_gaddr = fmt::pte::addr(*big_pte);
  sh.inst = c.channel().inst();
  sh.pd = vmm.pd_addr();
  sh.sum_before = victim_sum(tb, sh);
  sh.ready.store(true, std::memory_order_release);

  for (uint32_t r = 0; !sh.stop.load(std::memory_order_acquire) || r < MIN_ROUNDS; ++r) {
    if (auto s = victim_round(c, *work, *ga, *gb, *gc, r); !s) return s;
    sh.rounds.fetch_add(1, std::memory_order_relaxed);
  }
  if (auto s = check_sentinel(c, *small, SMALL_SENTINEL, 0x5a5a0000u); !s) return s;
  if (auto s = check_sentinel(c, *big, BIG_SENTINEL, 0xa5a50000u); !s) return s;
  sh.sum_after = victim_sum(tb, sh);
  // After the attack the victim can still set up new work: a new context
  // (channel, address space, shadows) and a round on it.
  auto fresh = vm.device.create_context();
  if (!fresh) return std::unexpected(fresh.error().context("victim context after the attack"));
  driver::Context& f = **fresh;
  auto fw = f.alloc(WORK_FLOATS * sizeof(float)), fa = f.alloc(GEMM * GEMM * 4), fb = f.alloc(GEMM * GEMM * 4),
       fc = f.alloc(GEMM * GEMM * 4);
  if (!fw || !fa || !fb || !fc) return fail(Errc::out_of_memory, "victim buffers after the attack");
  return victim_round(f, *fw, *fa, *fb, *fc, MIN_ROUNDS);
}

// ---------------------------------------------------------------- the attacker

struct Attack {
  Testbed& tb;
  Vm& vm;
  driver::Context& ctx;
  GuestAttacker raw;
  Vgpu& self;
  const VictimShared& victim;

  // The attacker guest address that names victim guest address `gaddr`
  // if the mediator failed to confine guest addresses to the partition.
  uint64_t foreign(uint64_t gaddr) const { return tb.vgpu(VICTIM)->partition().base - self.partition().base + gaddr; }
  uint32_t chid() const { return ctx.channel_id(); }
  uint64_t pd() { return ctx.address_space().vmm().pd_addr(); }
  CounterSnapshot counters() const { return self.counters(); }
  bool logged(const std::string& needle) const {
    for (const std::string& e : self.guest_errors())
      if (e.find(needle) != std::string::npos) return true;
    return false;
  }
  driver::Buffer buffer(uint64_t bytes) {
    auto b = ctx.alloc(bytes);
    EXPECT_TRUE(b) << b.error().what();
    return b.value_or(driver::Buffer{});
  }
  uint64_t va(driver::Buffer b) { return ctx.gpu_va(b).value(); }
  // Rewrites the PTE behind `va` to name guest address `target`.
  void redirect(uint64_t va_, fmt::PageSize ps, uint64_t target) {
    auto at = raw.pte_addr(pd(), va_, ps);
    ASSERT_TRUE(at) << "no page table behind VA " << va_;
    ASSERT_TRUE(fmt::pte::Valid::get(raw.vram64(*at))) << "the walk found no valid PTE";
    raw.set_vram64(*at, fmt::pte::make(target));
    raw.invalidate(pd());
  }
  // The unit whose FAULT_INFO record is pending (one expected).
  std::optional<uint32_t> pending_fault_unit() {
    const uint32_t pending = raw.reg(pf::FAULT_UNIT_PENDING);
    for (uint32_t u = 0; u < pf::NUM_FAULT_UNITS; ++u)
      if (pending & (1u << u)) return u;
    return std::nullopt;
  }
  // Some unit's FAULT_INFO record is pending, with `reason`.
  void expect_pending_fault(regs::FaultReason reason) {
    auto unit = pending_fault_unit();
    ASSERT_TRUE(unit) << "no FAULT_INFO record pending";
    EXPECT_EQ(pf::FaultReason::get(raw.reg(pf::FAULT_TYPE[*unit].offset)), static_cast<uint32_t>(reason));
  }
  void expect_fault(regs::FaultUnit unit, regs::FaultReason reason, uint64_t fault_va) {
    const uint32_t u = static_cast<uint32_t>(unit);
    EXPECT_TRUE(raw.reg(pf::FAULT_UNIT_PENDING) & (1u << u))
        << "no fault pending on unit " << u << " (pending " << raw.reg(pf::FAULT_UNIT_PENDING) << ", CHAN_ERROR addr "
        << raw.reg(pf::CHAN_ERROR_ADDR_LO[chid()].offset) << ")";
    const uint32_t type = raw.reg(pf::FAULT_TYPE[u].offset);
    EXPECT_EQ(pf::FaultReason::get(type), static_cast<uint32_t>(reason));
    EXPECT_EQ(join64(raw.reg(pf::FAULT_VA_HI[u].offset), raw.reg(pf::FAULT_VA_LO[u].offset)), fault_va);
  }
  // Submits raw push-buffer words on the attacker's channel.
  void submit(const driver::PushBuffer& pb) {
    auto s = ctx.channel().submit(pb.words());
    EXPECT_TRUE(s) << s.error().what();
  }
};

struct StopOnExit {
  std::atomic<bool>& stop;
  ~StopOnExit() { stop.store(true, std::memory_order_release); }
};

TestbedConfig config(Mode mode) {
  TestbedConfig tc;
  tc.mode = mode;
  tc.vms = 2;
  tc.vram_per_vm = VM_VRAM;
  tc.ram_per_vm = VM_RAM;
  tc.channels_per_vm = CHANNELS;
  tc.device.inst_heap_bytes = INST_HEAP;
  tc.device.timeout_ns = 5'000'000'000;
  return tc;
}

// Runs `attack` as VM 0 while VM 1 runs its workload; checks the victim.
void run_isolation(Mode mode, const std::function<void(Attack&)>& attack_fn) {
  auto tb = Testbed::create(config(mode));
  ASSERT_TRUE(tb) << tb.error().what();
  Testbed& t = **tb;
  ASSERT_LT(t.vgpu(ATTACKER)->partition().base, t.vgpu(VICTIM)->partition().base);
  // The victim's RAM holds a pattern it never touches itself: any change
  // is someone else's DMA.
  auto* victim_ram = reinterpret_cast<uint32_t*>(t.ram(VICTIM).data());
  const size_t ram_words = t.ram(VICTIM).size() / sizeof(uint32_t);
  for (size_t i = 0; i < ram_words; ++i) victim_ram[i] = pattern(i, 0x3c3c0000u);
  const uint64_t ram_sum_before = attack::checksum(victim_ram, ram_words);
  VictimShared sh;
  bool attacked = false;
  auto results = t.run([&](Vm& vm) -> Status {
    if (vm.index == VICTIM) return victim(vm, t, sh);
    StopOnExit stop{sh.stop};
    auto ctx = vm.device.create_context();
    if (!ctx) return std::unexpected(ctx.error());
    const auto deadline = std::chrono::steady_clock::now() + READY_TIMEOUT;
    while (!sh.ready.load(std::memory_order_acquire)) {
      if (std::chrono::steady_clock::now() > deadline) return fail(Errc::timeout, "victim never got ready");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    Attack a{t, vm, **ctx, GuestAttacker(vm.port), *t.vgpu(ATTACKER), sh};
    attack_fn(a);
    attacked = true;
    return {};
  });
  EXPECT_TRUE(attacked);
  for (auto& r : results) EXPECT_TRUE(r) << r.error().what();
  EXPECT_GE(sh.rounds.load(), MIN_ROUNDS);
  EXPECT_EQ(sh.sum_before, sh.sum_after) << "the victim's data in VRAM changed";
  EXPECT_EQ(attack::checksum(victim_ram, ram_words), ram_sum_before) << "the victim's RAM changed";
  EXPECT_TRUE(t.vgpu(VICTIM)->guest_errors().empty()) << t.vgpu(VICTIM)->guest_errors().front();
}

class Isolation : public ::testing::TestWithParam<Mode> {};

std::string mode_param_name(const ::testing::TestParamInfo<Mode>& p) {
  std::string n = testbed::mode_name(p.param);
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

INSTANTIATE_TEST_SUITE_P(Modes, Isolation, ::testing::Values(Mode::fv_opt, Mode::fv_naive), mode_param_name);

// ================================================================ page tables

// A PTE of the attacker's own buffer redirected at a victim sentinel; its
// fill over the buffer faults at the buffer's VA instead of writing.
void pte_outside_partition_faults(Attack& a, fmt::PageSize size, uint64_t bytes, uint64_t victim_gaddr) {
  driver::Buffer b = a.buffer(bytes);
  const uint64_t va = a.va(b);
  const uint64_t bad_before = a.counters().bad_entries;
  a.redirect(va, size, a.foreign(victim_gaddr));
  auto f = a.ctx.fill({b, static_cast<uint32_t>(bytes / 4), 1.f});
  ASSERT_TRUE(f);
  EXPECT_FALSE(a.ctx.wait(*f));
  EXPECT_EQ(a.raw.chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::mmu_fault));
  a.expect_fault(regs::FaultUnit::pgraph, regs::FaultReason::page_not_present, va);
  EXPECT_GT(a.counters().bad_entries, bad_before);
}

// A small-page PTE naming the victim's sentinel: the shadow entry is left
// faulting, so the attacker's fill faults instead of writing.
TEST_P(Isolation, SmallPteOutsidePartitionFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    pte_outside_partition_faults(a, fmt::PageSize::small, SMALL_SENTINEL, a.victim.small_gaddr);
  });
}

// The same with a big-page PTE (128 KiB pages).
TEST_P(Isolation, BigPteOutsidePartitionFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    pte_outside_partition_faults(a, fmt::PageSize::big, BIG_SENTINEL, a.victim.big_gaddr);
  });
}

// A big-page PTE whose page starts inside the partition but runs past its
// end (the last 64 KiB): rejected as a whole.
TEST(IsolationPageTables, BigPteStraddlingPartitionEndFaults) {
  run_isolation(Mode::fv_opt, [](Attack& a) {
    driver::Buffer b = a.buffer(BIG_SENTINEL);
    const uint64_t va = a.va(b);
    const uint64_t bad_before = a.counters().bad_entries;
    a.redirect(va, fmt::PageSize::big, VM_VRAM - fmt::BIG_PAGE / 2);
    auto f = a.ctx.fill({b, static_cast<uint32_t>(BIG_SENTINEL / 4), 1.f});
    ASSERT_TRUE(f);
    EXPECT_FALSE(a.ctx.wait(*f));
    a.expect_fault(regs::FaultUnit::pgraph, regs::FaultReason::page_not_present, va);
    EXPECT_GT(a.counters().bad_entries, bad_before);
  });
}

// A PDE whose small-page table is the victim's page directory: the victim's
// tables would become the attacker's. The shadow PDE gets no table.
TEST_P(Isolation, PdeSmallTableOutsidePartitionFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Buffer b = a.buffer(SMALL_SENTINEL);
    const uint64_t va = a.va(b);
    const uint64_t bad_before = a.counters().bad_entries;
    const uint64_t at = GuestAttacker::pde_addr(a.pd(), va);
    const uint64_t pde = a.raw.vram64(at);
    ASSERT_EQ(fmt::pde::SptTarget::get(pde), uint64_t(fmt::PdeTarget::vram));
    a.raw.set_vram64(at, fmt::pde::SptAddr::set(pde, a.foreign(a.victim.pd) >> fmt::TABLE_ALIGN_SHIFT));
    a.raw.invalidate(a.pd());
    // Every mapping of this PDE (ring, push buffer, fence) is gone: the
    // channel faults on its first fetch, whatever the work.
    auto f = a.ctx.fill({b, 16, 1.f});
    ASSERT_TRUE(f);
    EXPECT_FALSE(a.ctx.wait(*f));
    EXPECT_EQ(a.raw.chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::mmu_fault));
    // The PDE keeps its big-page half, so the walk ends at the missing
    // small-page entry.
    a.expect_pending_fault(regs::FaultReason::page_not_present);
    EXPECT_GT(a.counters().bad_entries, bad_before);
  });
}

// A PDE whose big-page table is the victim's big sentinel.
TEST_P(Isolation, PdeBigTableOutsidePartitionFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Buffer b = a.buffer(BIG_SENTINEL);
    const uint64_t va = a.va(b);
    const uint64_t bad_before = a.counters().bad_entries;
    const uint64_t at = GuestAttacker::pde_addr(a.pd(), va);
    const uint64_t pde = a.raw.vram64(at);
    ASSERT_EQ(fmt::pde::LptTarget::get(pde), uint64_t(fmt::PdeTarget::vram));
    a.raw.set_vram64(at, fmt::pde::LptAddr::set(pde, a.foreign(a.victim.big_gaddr) >> fmt::TABLE_ALIGN_SHIFT));
    a.raw.invalidate(a.pd());
    auto f = a.ctx.fill({b, static_cast<uint32_t>(BIG_SENTINEL / 4), 1.f});
    ASSERT_TRUE(f);
    EXPECT_FALSE(a.ctx.wait(*f));
    EXPECT_EQ(a.raw.chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::mmu_fault));
    // Every big page of this PDE is gone (the push buffer too): the first
    // access to one faults, the small table under it has no entry.
    a.expect_pending_fault(regs::FaultReason::page_not_present);
    EXPECT_GT(a.counters().bad_entries, bad_before);
  });
}


// A PTE written through a BAR1 alias of the page table: the guest maps its
// own table page into BAR1 and writes a foreign PTE there, hoping the write
// bypasses the mediator. Table pages are never mapped straight into the VM,
// so the write traps, marks the table dirty, and the entry is rejected.
TEST_P(Isolation, PteWrittenThroughBar1AliasFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Buffer b = a.buffer(SMALL_SENTINEL);
    const uint64_t va = a.va(b);
    auto pte_at = a.raw.pte_addr(a.pd(), va, fmt::PageSize::small);
    ASSERT_TRUE(pte_at);
    const uint64_t table_page = align_down(*pte_at, fmt::SMALL_PAGE);
    const uint64_t bar1_pd = a.raw.bar_pd(Bar::bar1);
    auto bar1_pte = a.raw.pte_addr(bar1_pd, BAR1_UNUSED, fmt::PageSize::small);
    ASSERT_TRUE(bar1_pte);
    a.raw.set_vram64(*bar1_pte, fmt::pte::make(table_page));
    a.raw.invalidate(bar1_pd);
    EXPECT_TRUE(a.raw.port().map(Bar::bar1, BAR1_UNUSED, fmt::SMALL_PAGE).empty())
        << "a page-table page is mapped straight into the VM";
    const uint64_t off = BAR1_UNUSED + *pte_at - table_page;
    ASSERT_EQ(join64(a.raw.bar_read(Bar::bar1, off + 4), a.raw.bar_read(Bar::bar1, off)), a.raw.vram64(*pte_at))
        << "the BAR1 alias does not show the page table";
    const uint64_t bad_before = a.counters().bad_entries;
    const uint64_t trapped_before = a.counters().trapped_writes;
    const uint64_t evil = fmt::pte::make(a.foreign(a.victim.small_gaddr));
    a.raw.bar_write(Bar::bar1, off, lo32(evil));
    a.raw.bar_write(Bar::bar1, off + 4, hi32(evil));
    EXPECT_GE(a.counters().trapped_writes, trapped_before + 2);
    a.raw.invalidate(a.pd());
    auto f = a.ctx.fill({b, static_cast<uint32_t>(SMALL_SENTINEL / 4), 1.f});
    ASSERT_TRUE(f);
    EXPECT_FALSE(a.ctx.wait(*f));
    a.expect_fault(regs::FaultUnit::pgraph, regs::FaultReason::page_not_present, va);
    EXPECT_GT(a.counters().bad_entries, bad_before);
  });
}

// ================================================================ BAR1 / BAR3

// A BAR page-table entry naming the victim: first a control (the same
// entry naming the attacker's own page works), then the foreign one, whose
// accesses fault with a FAULT_INFO record and a PBUS MMIO fault.
void bar_pte_attack(Attack& a, Bar bar, uint64_t offset) {
  const regs::FaultUnit unit = bar == Bar::bar1 ? regs::FaultUnit::bar1 : regs::FaultUnit::bar3;
  const char* name = bar == Bar::bar1 ? "BAR1" : "BAR3";
  driver::Buffer own = a.buffer(fmt::SMALL_PAGE);
  auto own_gaddr = a.raw.translate(a.pd(), a.va(own), fmt::PageSize::small);
  ASSERT_TRUE(own_gaddr);
  const uint64_t bar_pd = a.raw.bar_pd(bar);
  auto pte_at = a.raw.pte_addr(bar_pd, offset, fmt::PageSize::small);
  ASSERT_TRUE(pte_at) << name << " has no page table at " << offset;

  a.raw.set_vram64(*pte_at, fmt::pte::make(*own_gaddr));
  a.raw.invalidate(bar_pd);
  a.raw.bar_write(bar, offset, 0x600d600d);
  ASSERT_EQ(a.tb.gpu().vram().read32(a.self.partition().host(*own_gaddr)), 0x600d600du) << "control mapping broken";

  const uint64_t bad_before = a.counters().bad_entries;
  a.raw.set_vram64(*pte_at, fmt::pte::make(a.foreign(a.victim.small_gaddr)));
  a.raw.invalidate(bar_pd);
  EXPECT_GT(a.counters().bad_entries, bad_before);
  EXPECT_EQ(a.raw.bar_read(bar, offset), ~uint32_t{0});
  a.expect_fault(unit, regs::FaultReason::page_not_present, offset);
  a.raw.bar_write(bar, offset, 0xbadbad);
  EXPECT_TRUE(pbus::IntrMmioFault::get(a.raw.reg(pbus::INTR)));
  EXPECT_TRUE(a.logged(std::string(name) + " write at"));
  EXPECT_TRUE(a.raw.port().map(bar, offset, fmt::SMALL_PAGE).empty());
}

TEST_P(Isolation, Bar1PteOutsidePartitionFaults) {
  run_isolation(GetParam(), [](Attack& a) { bar_pte_attack(a, Bar::bar1, BAR1_UNUSED); });
}

TEST_P(Isolation, Bar3PteOutsidePartitionFaults) {
  run_isolation(GetParam(), [](Attack& a) { bar_pte_attack(a, Bar::bar3, BAR3_UNUSED); });
}

// BAR1_INST naming the victim's channel instance block: refused, BAR1
// faults from then on (nothing of the victim's shows through).
TEST_P(Isolation, Bar1InstanceOutsidePartitionFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    a.raw.set_reg(pbus::BAR1_INST, pbus::BarInstMode::mask | pbus::BarInstAddr::make(static_cast<uint32_t>(
                                                                 a.foreign(a.victim.inst) >> pbus::BAR_INST_SHIFT)));
    EXPECT_TRUE(a.logged("BAR1: instance block"));
    a.expect_fault(regs::FaultUnit::bar1, regs::FaultReason::pt_not_present, 0);
    EXPECT_EQ(a.raw.bar_read(Bar::bar1, 0), ~uint32_t{0});
    EXPECT_TRUE(pbus::IntrMmioFault::get(a.raw.reg(pbus::INTR)));
  });
}

// ================================================================ channels

// A copy of the attacker's own instance block, at a fresh guest address:
// binding it unchanged works (the control), then `mutate` edits it.
uint64_t copy_instance(Attack& a) {
  driver::Buffer b = a.buffer(regs::inst::SIZE);
  auto at = a.raw.translate(a.pd(), a.va(b), fmt::PageSize::small);
  EXPECT_TRUE(at);
  a.raw.copy_vram(*at, a.ctx.channel().inst(), regs::inst::LIMIT_HI + sizeof(uint32_t));
  return *at;
}

uint32_t chan_inst_value(uint64_t inst) {
  return pf::ChanInstValid::mask | pf::ChanInstAddr::make(static_cast<uint32_t>(inst >> pf::CHAN_INST_SHIFT));
}

void bind_bad_instance(Attack& a, uint64_t inst, const char* what) {
  a.raw.set_reg(pf::CHAN_INST[SPARE_CHID].offset, chan_inst_value(inst));
  EXPECT_EQ(a.raw.chan_error(SPARE_CHID), static_cast<uint32_t>(regs::ChannelError::bad_instance));
  EXPECT_TRUE(pf::IntrChannelError::get(a.raw.reg(pf::INTR)));
  EXPECT_TRUE(a.raw.reg(pf::CHAN_ERROR_PENDING[0].offset) & (1u << SPARE_CHID));
  EXPECT_TRUE(a.logged(what)) << "no guest error naming: " << what;
}

void bind_copy_then(Attack& a, const std::function<void(uint64_t)>& mutate, const char* what) {
  const uint64_t inst = copy_instance(a);
  a.raw.set_reg(pf::CHAN_INST[SPARE_CHID].offset, chan_inst_value(inst));
  ASSERT_EQ(a.raw.chan_error(SPARE_CHID), 0u) << "the unchanged copy should bind";
  a.raw.set_reg(pf::CHAN_INST[SPARE_CHID].offset, 0);
  mutate(inst);
  bind_bad_instance(a, inst, what);
}

// CHAN_INST naming the victim's instance block.
TEST_P(Isolation, InstanceBlockOutsidePartitionIsRefused) {
  run_isolation(GetParam(), [](Attack& a) {
    bind_bad_instance(a, a.foreign(a.victim.inst), "not an aligned block inside the VM's VRAM");
  });
}

// An instance block whose page directory is the victim's.
TEST_P(Isolation, PageDirectoryOutsidePartitionIsRefused) {
  run_isolation(GetParam(), [](Attack& a) {
    bind_copy_then(
        a,
        [&](uint64_t inst) {
          const uint64_t pd = a.foreign(a.victim.pd);
          a.raw.set_vram32(inst + regs::inst::PDB_LO, lo32(pd) & regs::inst::PdbAddrLo::mask);
          a.raw.set_vram32(inst + regs::inst::PDB_HI, regs::inst::PdbAddrHi::make(hi32(pd)));
        },
        "page directory outside the VM's VRAM");
  });
}

// An instance block whose USERD page is outside the partition.
TEST_P(Isolation, UserdOutsidePartitionIsRefused) {
  run_isolation(GetParam(), [](Attack& a) {
    bind_copy_then(
        a,
        [&](uint64_t inst) {
          a.raw.set_vram32(inst + regs::ramfc::USERD_LO, lo32(a.foreign(a.victim.inst)));
          a.raw.set_vram32(inst + regs::ramfc::USERD_HI, hi32(a.foreign(a.victim.inst)));
        },
        "USERD page outside the VM's VRAM");
  });
}

std::vector<uint32_t> owned_pchids(Vgpu& v) {
  std::vector<uint32_t> out;
  for (uint32_t p = 0; p < regs::NUM_CHANNELS; ++p)
    if (v.owns_pchid(p)) out.push_back(p);
  return out;
}

std::vector<uint32_t> physical_chan_inst(Testbed& tb, const std::vector<uint32_t>& pchids) {
  std::vector<uint32_t> out;
  for (uint32_t p : pchids) out.push_back(tb.gpu().read32(pf::CHAN_INST[p].offset));
  return out;
}

// CHAN_INST / CHAN_STATE of channel ids past the VM's range (which would
// be the victim's physical channels if ids were not virtualized).
TEST_P(Isolation, ChannelTableEntriesOutsideRangeAreRefused) {
  run_isolation(GetParam(), [](Attack& a) {
    Vgpu& victim = *a.tb.vgpu(VICTIM);
    const auto victim_pchids = owned_pchids(victim);
    const auto before = physical_chan_inst(a.tb, victim_pchids);
    for (uint32_t chid : {CHANNELS, CHANNELS + 1, regs::NUM_CHANNELS / 2, regs::NUM_CHANNELS - 1}) {
      a.raw.set_reg(pf::CHAN_INST[chid].offset, chan_inst_value(a.ctx.channel().inst()));
      a.raw.set_reg(pf::CHAN_STATE[chid].offset, pf::ChanStateRunnable::mask);
      EXPECT_TRUE(a.logged(strfmt("CHAN_INST of channel %u outside", chid)));
      EXPECT_TRUE(a.logged(strfmt("CHAN_STATE of channel %u outside", chid)));
      EXPECT_EQ(a.raw.reg(pf::CHAN_INST[chid].offset), 0u);
    }
    EXPECT_EQ(a.raw.reg(pf::CHAN_TABLE_ERROR), static_cast<uint32_t>(pf::ChanTableError::invalid_chid));
    EXPECT_TRUE(pf::IntrChanTableError::get(a.raw.reg(pf::INTR)));
    EXPECT_EQ(physical_chan_inst(a.tb, victim_pchids), before);
  });
}

// A runlist naming channel ids past the VM's range.
TEST_P(Isolation, RunlistEntriesOutsideRangeAreRefused) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Buffer b = a.buffer(fmt::SMALL_PAGE);
    auto rl = a.raw.translate(a.pd(), a.va(b), fmt::PageSize::small);
    ASSERT_TRUE(rl);
    const uint32_t entries[] = {a.chid(), CHANNELS, CHANNELS + 1, regs::NUM_CHANNELS - 1, regs::NUM_CHANNELS};
    for (uint32_t i = 0; i < std::size(entries); ++i) {
      a.raw.set_vram32(*rl + i * regs::runlist::ENTRY_BYTES + regs::runlist::ENTRY_CHID, entries[i]);
      a.raw.set_vram32(*rl + i * regs::runlist::ENTRY_BYTES + regs::runlist::ENTRY_FLAGS, 0);
    }
    a.raw.set_reg(pf::RUNLIST_BASE, pf::RunlistAddr::make(static_cast<uint32_t>(*rl >> pf::RUNLIST_SHIFT)));
    a.raw.set_reg(pf::RUNLIST_SUBMIT, pf::RunlistCount::make(static_cast<uint32_t>(std::size(entries))));
    EXPECT_EQ(a.raw.reg(pf::CHAN_TABLE_ERROR), static_cast<uint32_t>(pf::ChanTableError::invalid_chid));
    EXPECT_TRUE(a.logged("runlist entry 1 names channel 8 outside"));
    const auto listed = a.self.runlist_pchids();
    ASSERT_EQ(listed.size(), 1u);  // its own channel only
    EXPECT_TRUE(a.self.owns_pchid(listed[0]));
    for (uint32_t p : a.tb.vgpu(VICTIM)->runlist_pchids()) EXPECT_TRUE(a.tb.vgpu(VICTIM)->owns_pchid(p));
  });
}

// A runlist whose base lies outside the partition.
TEST_P(Isolation, RunlistOutsidePartitionIsRefused) {
  run_isolation(GetParam(), [](Attack& a) {
    a.raw.set_reg(pf::RUNLIST_BASE,
                  pf::RunlistAddr::make(static_cast<uint32_t>(a.foreign(a.victim.inst) >> pf::RUNLIST_SHIFT)));
    a.raw.set_reg(pf::RUNLIST_SUBMIT, pf::RunlistCount::make(1));
    EXPECT_EQ(a.raw.reg(pf::CHAN_TABLE_ERROR), static_cast<uint32_t>(pf::ChanTableError::invalid_target));
    EXPECT_TRUE(a.logged("lies outside the VM's VRAM"));
    EXPECT_TRUE(a.self.runlist_pchids().empty());
  });
}

// ================================================================ engines

constexpr uint64_t UNMAPPED_VA = uint64_t{1} << 38;  // never mapped by the driver

// Copy-engine writes to a VA nothing maps.
TEST_P(Isolation, CopyToUnmappedVaFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Buffer src = a.buffer(fmt::SMALL_PAGE);
    driver::PushBuffer pb;
    driver::emit_copy(pb, UNMAPPED_VA, a.va(src), fmt::SMALL_PAGE);
    a.submit(pb);
    EXPECT_EQ(a.raw.wait_chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::mmu_fault));
    a.expect_fault(regs::FaultUnit::ce0, regs::FaultReason::pt_not_present, UNMAPPED_VA);
  });
}

// Copy-engine writes through a PTE naming the victim's sentinel: a guest
// can only name its own VAs, and this VA faults instead of copying.
TEST_P(Isolation, CopyThroughForeignPteFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Buffer src = a.buffer(SMALL_SENTINEL), dst = a.buffer(SMALL_SENTINEL);
    a.redirect(a.va(dst), fmt::PageSize::small, a.foreign(a.victim.small_gaddr));
    auto f = a.ctx.copy(dst, 0, src, 0, SMALL_SENTINEL);
    ASSERT_TRUE(f);
    EXPECT_FALSE(a.ctx.wait(*f));
    EXPECT_EQ(a.raw.chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::mmu_fault));
    a.expect_fault(regs::FaultUnit::ce0, regs::FaultReason::page_not_present, a.va(dst));
  });
}

// Copy-engine reads through a PTE naming the victim's sentinel (stealing
// its data): faults, and the attacker's destination stays zero.
TEST_P(Isolation, CopyFromForeignPteFaultsAndLeaksNothing) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Buffer src = a.buffer(SMALL_SENTINEL), dst = a.buffer(SMALL_SENTINEL);
    auto dst_gaddr = a.raw.translate(a.pd(), a.va(dst), fmt::PageSize::small);
    ASSERT_TRUE(dst_gaddr);
    a.redirect(a.va(src), fmt::PageSize::small, a.foreign(a.victim.small_gaddr));
    auto f = a.ctx.copy(dst, 0, src, 0, SMALL_SENTINEL);
    ASSERT_TRUE(f);
    EXPECT_FALSE(a.ctx.wait(*f));
    a.expect_fault(regs::FaultUnit::ce0, regs::FaultReason::page_not_present, a.va(src));
    const uint64_t host = a.self.partition().host(*dst_gaddr);
    for (uint64_t off = 0; off < SMALL_SENTINEL; off += sizeof(uint32_t))
      ASSERT_EQ(a.tb.gpu().vram().read32(host + off), 0u) << "victim data leaked at offset " << off;
  });
}

// ================================================================ host resources

// A kernel over a huge range that aliases one page: one big-page table of
// the attacker's own, every entry naming one of its own big pages (legal),
// named by 128 PDEs: 16 GiB of VA over 128 KiB of VRAM. Saxpy over it
// would need a 32 GiB host copy (no host view of such a range exists);
// before the engines' limits the allocation threw on the compute engine's
// thread and the whole process (QEMU, the daemon) terminated.
TEST_P(Isolation, KernelOverAHugeAliasedRangeIsRefusedWithoutHostMemory) {
  run_isolation(GetParam(), [](Attack& a) {
    constexpr uint64_t ALIAS_VA = uint64_t{1} << 38;
    constexpr uint64_t PDES = 128;
    driver::Buffer page = a.buffer(BIG_SENTINEL), table = a.buffer(fmt::LPT.table_bytes());
    auto page_gaddr = a.raw.translate(a.pd(), a.va(page), fmt::PageSize::big);
    auto table_gaddr = a.raw.translate(a.pd(), a.va(table), fmt::PageSize::small);
    ASSERT_TRUE(page_gaddr && table_gaddr);
    const uint64_t big = align_down(*page_gaddr, fmt::BIG_PAGE);
    for (uint64_t i = 0; i < fmt::LPT.entries(); ++i) a.raw.set_vram64(*table_gaddr + i * 8, fmt::pte::make(big));
    for (uint64_t p = 0; p < PDES; ++p)
      a.raw.set_vram64(GuestAttacker::pde_addr(a.pd(), ALIAS_VA + p * fmt::PDE_SPAN), fmt::pde::make(0, *table_gaddr));
    a.raw.invalidate(a.pd());

    // A compute launch of its own: program descriptors, then saxpy over
    // the aliased range with a count of 2^32 - 1 floats.
    driver::Buffer code = a.buffer(driver::CODE_BYTES), cb = a.buffer(driver::ARG_CB_BYTES);
    std::vector<cls::ProgramDescriptor> programs;
    for (cls::Kernel k : driver::KERNELS) programs.push_back(driver::program_descriptor(k));
    ASSERT_TRUE(a.ctx.upload(code, std::span<const cls::ProgramDescriptor>(programs)));
    const cls::SaxpyArgs args{ALIAS_VA, ALIAS_VA, 0xffffffffu, 2.f};
    std::vector<uint32_t> words(sizeof args / sizeof(uint32_t));
    std::memcpy(words.data(), &args, sizeof args);
    driver::PushBuffer pb;
    driver::emit_compute_bind(pb, a.va(code));
    driver::emit_launch(pb, cls::Kernel::saxpy, a.va(cb), words, driver::LaunchShape{{256, 1, 1}, {256, 1, 1}});
    a.submit(pb);
    EXPECT_EQ(a.raw.wait_chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::bad_argument));
    EXPECT_EQ(join64(a.raw.reg(pf::CHAN_ERROR_ADDR_HI[a.chid()].offset),
                     a.raw.reg(pf::CHAN_ERROR_ADDR_LO[a.chid()].offset)),
              ALIAS_VA);
  });
}

void semaphore_release(driver::PushBuffer& pb, uint64_t va, uint32_t payload) {
  namespace h = cls::host;
  pb.inc(driver::subch::HOST, h::SEMAPHORE_A,
         {h::SemAHi::make(hi32(va)), lo32(va) & h::SemBLo::mask, payload,
          h::SemDOperation::make(static_cast<uint32_t>(h::SemOp::release)) | h::SemDReleaseSize4::mask});
}

// A semaphore release through a PTE naming the victim's sentinel.
TEST_P(Isolation, SemaphoreReleaseToForeignAddressFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Buffer b = a.buffer(SMALL_SENTINEL);
    a.redirect(a.va(b), fmt::PageSize::small, a.foreign(a.victim.small_gaddr));
    driver::PushBuffer pb;
    semaphore_release(pb, a.va(b), 0xdeadbeef);
    a.submit(pb);
    EXPECT_EQ(a.raw.wait_chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::mmu_fault));
    a.expect_fault(regs::FaultUnit::pfifo, regs::FaultReason::page_not_present, a.va(b));
  });
}

// A semaphore release to a VA nothing maps.
TEST_P(Isolation, SemaphoreReleaseToUnmappedVaFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::PushBuffer pb;
    semaphore_release(pb, UNMAPPED_VA, 0xdeadbeef);
    a.submit(pb);
    EXPECT_EQ(a.raw.wait_chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::mmu_fault));
    a.expect_fault(regs::FaultUnit::pfifo, regs::FaultReason::pt_not_present, UNMAPPED_VA);
  });
}

// A semaphore acquire that nothing will ever satisfy (its payload never
// appears; the driver's RAMFC acquire timeout is nouveau's, about 35
// minutes). Submissions are not preemptive and a turn ends when the channel
// goes idle, so without the host's watchdog this turn would hold the GPU
// for every VM and the victim's fences would time out.
TEST_P(Isolation, SemaphoreAcquireThatNeverSucceedsDoesNotStallOthers) {
  run_isolation(GetParam(), [](Attack& a) {
    namespace h = cls::host;
    driver::Buffer b = a.buffer(SMALL_SENTINEL);  // zeroed: the payload never matches
    const uint64_t va = a.va(b);
    driver::PushBuffer pb;
    pb.inc(driver::subch::HOST, h::SEMAPHORE_A,
           {h::SemAHi::make(hi32(va)), lo32(va) & h::SemBLo::mask, 0x1234,
            h::SemDOperation::make(static_cast<uint32_t>(h::SemOp::acquire))});
    a.submit(pb);
    // The attacker's channel parks in the acquire and stays parked (its
    // context stays open) while the victim completes more rounds.
    const uint32_t state = pf::CHAN_STATE[a.chid()].offset;
    for (int i = 0; i < 2000 && !pf::ChanStateAcquirePending::get(a.raw.reg(state)); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(pf::ChanStateAcquirePending::get(a.raw.reg(state)));
    const uint32_t rounds = a.victim.rounds.load();
    constexpr uint32_t MORE_ROUNDS = 3;
    for (int i = 0; i < 20000 && a.victim.rounds.load() < rounds + MORE_ROUNDS; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_GE(a.victim.rounds.load(), rounds + MORE_ROUNDS) << "the victim made no progress behind the parked acquire";
    EXPECT_TRUE(pf::ChanStateAcquirePending::get(a.raw.reg(state))) << "the acquire is still parked";
  });
}

// Writes one raw GPFIFO entry at the channel's GP_PUT and rings it.
void raw_gp_entry(Attack& a, uint64_t pb_va, uint32_t dwords) {
  driver::Channel& ch = a.ctx.channel();
  auto ring = a.raw.translate(a.pd(), ch.gpfifo_va(), fmt::PageSize::small);
  ASSERT_TRUE(ring);
  const fmt::gp::Entry e = fmt::gp::make(pb_va, dwords);
  const uint64_t at = *ring + uint64_t{ch.gp_put()} * regs::ramfc::GP_ENTRY_BYTES;
  a.raw.set_vram32(at, e.w0);
  a.raw.set_vram32(at + 4, e.w1);
  const uint64_t before = a.counters().doorbells;
  a.raw.doorbell(a.chid(), ch.gp_put() + 1);
  EXPECT_EQ(a.counters().doorbells, before + 1);
}

// A GPFIFO entry whose push buffer runs past the end of the address space.
TEST_P(Isolation, GpfifoEntryOutsideAddressSpaceIsInvalid) {
  run_isolation(GetParam(), [](Attack& a) {
    const uint64_t va = fmt::VA_LIMIT - 8;
    raw_gp_entry(a, va, 4);
    EXPECT_EQ(a.raw.wait_chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::gpentry_invalid));
    EXPECT_EQ(join64(a.raw.reg(pf::CHAN_ERROR_ADDR_HI[a.chid()].offset),
                     a.raw.reg(pf::CHAN_ERROR_ADDR_LO[a.chid()].offset)),
              va);
  });
}

// A GPFIFO entry whose push buffer is the victim's sentinel, through a PTE.
TEST_P(Isolation, GpfifoEntryThroughForeignPteFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Buffer b = a.buffer(SMALL_SENTINEL);
    a.redirect(a.va(b), fmt::PageSize::small, a.foreign(a.victim.small_gaddr));
    raw_gp_entry(a, a.va(b), 16);
    EXPECT_EQ(a.raw.wait_chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::mmu_fault));
    a.expect_fault(regs::FaultUnit::pfifo, regs::FaultReason::page_not_present, a.va(b));
  });
}

// GP_PUT past the end of the ring.
TEST_P(Isolation, GpPutBeyondRingIsInvalid) {
  run_isolation(GetParam(), [](Attack& a) {
    const uint32_t entries = a.vm.device.options().channel.gpfifo_entries;
    a.raw.doorbell(a.chid(), entries + 3);
    EXPECT_EQ(a.raw.wait_chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::gpentry_invalid));
    EXPECT_TRUE(a.logged(strfmt("beyond its %u-entry ring", entries)));
  });
}

// ================================================================ global state

struct PhysicalGlobals {
  uint32_t enable, pbdma, intr_en, mask, fifo_ctrl, fifo_intr_en, fifo_pbdma;
  bool operator==(const PhysicalGlobals&) const = default;
};

PhysicalGlobals physical_globals(Testbed& tb) {
  gpu::Gpu& g = tb.gpu();
  return {g.read32(pmc::ENABLE.offset),      g.read32(pmc::PBDMA_ENABLE.offset), g.read32(pmc::INTR_EN_0.offset),
          g.read32(pmc::INTR_MASK_0.offset), g.read32(pf::CTRL.offset),          g.read32(pf::INTR_EN.offset),
          g.read32(pf::PBDMA_ENABLE.offset)};
}

// Writes to PMC, PFIFO, PBUS and MMU state that is global on the real GPU:
// each lands in the attacker's virtual copy only.
TEST_P(Isolation, GlobalRegisterWritesStayVirtual) {
  run_isolation(GetParam(), [](Attack& a) {
    const PhysicalGlobals before = physical_globals(a.tb);
    const uint64_t writes_before = a.counters().trapped_writes;
    const uint64_t inval_before = a.counters().tlb_invalidates;
    a.raw.set_reg(pmc::INTR_EN_0, 0);
    a.raw.set_reg(pmc::INTR_MASK_0, 0);
    a.raw.set_reg(pmc::PBDMA_ENABLE, 0);
    a.raw.set_reg(pf::CTRL, 0);
    a.raw.set_reg(pf::INTR_EN, 0);
    a.raw.set_reg(pf::PBDMA_ENABLE, 0);
    a.raw.set_reg(pf::INTR, ~uint32_t{0});
    a.raw.set_reg(pf::FAULT_UNIT_PENDING, ~uint32_t{0});
    a.raw.set_reg(pbus::INTR, ~uint32_t{0});
    for (uint32_t i = 0; i < regs::NUM_CHANNELS / 32; ++i)
      a.raw.set_reg(pf::CHAN_ERROR_PENDING[i].offset, ~uint32_t{0});
    for (uint32_t c = 0; c < regs::NUM_CHANNELS; ++c) a.raw.set_reg(pf::PREEMPT, pf::PreemptChid::make(c));
    a.raw.invalidate(0, true);  // ALL_PDB
    a.raw.set_reg(pmc::BOOT_0, 0);
    EXPECT_GE(a.counters().trapped_writes, writes_before + 12 + regs::NUM_CHANNELS);
    EXPECT_EQ(a.counters().tlb_invalidates, inval_before + 1);
    EXPECT_TRUE(a.logged("read-only register PMC.BOOT_0"));
    // The attacker sees its own view change...
    EXPECT_EQ(a.raw.reg(pf::CTRL), 0u);
    EXPECT_EQ(a.raw.reg(pmc::PBDMA_ENABLE), 0u);
    // ...and the GPU's does not.
    EXPECT_EQ(physical_globals(a.tb), before);
    EXPECT_TRUE(pf::CtrlEnable::get(before.fifo_ctrl));
  });
}

// PMC ENABLE clearing PFIFO: resets the attacker's own vGPU (its channels
// unbound, its runlist emptied), never the GPU.
TEST_P(Isolation, PmcResetOfOwnVgpuLeavesVictimRunning) {
  run_isolation(GetParam(), [](Attack& a) {
    const PhysicalGlobals before = physical_globals(a.tb);
    const uint32_t pchid = owned_pchids(a.self)[a.chid()];
    ASSERT_NE(a.tb.gpu().read32(pf::CHAN_INST[pchid].offset), 0u);
    a.raw.set_reg(pmc::ENABLE, pmc::enable::ALL & ~pmc::enable::Pfifo::mask);
    EXPECT_EQ(a.raw.reg(pf::CHAN_INST[a.chid()].offset), 0u);
    EXPECT_TRUE(a.self.runlist_pchids().empty());
    EXPECT_EQ(a.tb.gpu().read32(pf::CHAN_INST[pchid].offset), 0u);
    EXPECT_EQ(physical_globals(a.tb), before);
    a.raw.set_reg(pmc::ENABLE, pmc::enable::ALL);
  });
}

// A PRAMIN window placed past the partition's end (on the victim's
// sentinel), and one straddling it.
TEST_P(Isolation, PraminWindowBeyondPartitionFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    constexpr uint64_t GRANULE = uint64_t{1} << pbus::PRAMIN_BASE_SHIFT;
    const uint64_t target = a.foreign(a.victim.small_gaddr);
    const uint64_t base = align_down(target, GRANULE);
    const uint64_t faults_before = a.counters().faults;
    a.raw.set_reg(pbus::PRAMIN_WINDOW, pbus::PraminBase::make(static_cast<uint32_t>(base >> pbus::PRAMIN_BASE_SHIFT)));
    const uint32_t off = static_cast<uint32_t>(regs::pramin::BASE + target - base);
    EXPECT_EQ(a.raw.reg(off), ~uint32_t{0});
    EXPECT_TRUE(a.logged("PRAMIN read at"));
    a.raw.set_reg(off, 0xdeadbeef);
    EXPECT_TRUE(a.logged("PRAMIN write at"));
    EXPECT_TRUE(pbus::IntrMmioFault::get(a.raw.reg(pbus::INTR)));
    EXPECT_EQ(a.counters().faults, faults_before + 2);

    // Straddling: the window's first 64 KiB are the attacker's, the rest not.
    const uint64_t edge = VM_VRAM - GRANULE;
    a.raw.set_reg(pbus::PRAMIN_WINDOW, pbus::PraminBase::make(static_cast<uint32_t>(edge >> pbus::PRAMIN_BASE_SHIFT)));
    a.raw.set_reg(regs::pramin::BASE, 0x600d);
    EXPECT_EQ(a.raw.reg(regs::pramin::BASE), 0x600du);
    EXPECT_EQ(a.counters().faults, faults_before + 2);
    a.raw.set_reg(static_cast<uint32_t>(regs::pramin::BASE + GRANULE), 0xdeadbeef);
    EXPECT_EQ(a.raw.reg(static_cast<uint32_t>(regs::pramin::BASE + GRANULE)), ~uint32_t{0});
    EXPECT_EQ(a.counters().faults, faults_before + 4);
  });
}

// ================================================================ storms

// Thousands of TLB invalidates (own PD and ALL_PDB) and doorbells while the
// victim works; the attacker's own channel still works afterwards.
TEST_P(Isolation, InvalidateAndDoorbellStormsLeaveVictimCorrect) {
  run_isolation(GetParam(), [](Attack& a) {
    const uint32_t n = GetParam() == Mode::fv_opt ? 3000 : 200;  // naive rescans everything each time
    const auto c0 = a.counters();
    for (uint32_t i = 0; i < n; ++i) {
      a.raw.invalidate(a.pd(), i % 2 == 1);
      a.raw.doorbell(a.chid(), a.ctx.channel().gp_put());
    }
    const auto c1 = a.counters();
    EXPECT_EQ(c1.tlb_invalidates - c0.tlb_invalidates, n);
    EXPECT_EQ(c1.doorbells - c0.doorbells, n);
    driver::Buffer b = a.buffer(fmt::SMALL_PAGE);
    auto f = a.ctx.fill({b, 16, 2.f});
    ASSERT_TRUE(f);
    EXPECT_TRUE(a.ctx.wait(*f));
  });
}

// ================================================================ resources

// Shadow-table flood: every PDE of the attacker's directory names the same
// (legal) small-page table, so each would need its own 256 KiB shadow
// table from the reserved VRAM all VMs share. The victim must still be
// able to create a context while the attacker holds its tables.
// NOT DEFENDED (docs/isolation.md, "Not defended"): there is no per-VM
// quota on reserved VRAM, and the pool runs dry. Disabled until the
// mediator gets one; run with --gtest_also_run_disabled_tests to see it.
// Every PDE pointed at one legal table: each gets its own shadow table.
// The shadows come from the attacker's own reserved budget, which runs out
// (a logged guest error); the victim's budget is untouched, and run_isolation
// has the victim open a new context and run work afterwards.
TEST(IsolationResources, ShadowTableFloodExhaustsOnlyTheAttackersBudget) {
  run_isolation(Mode::fv_opt, [](Attack& a) {
    const uint64_t victim_used = a.tb.vgpu(VICTIM)->shadow_pool().used();
    auto ring_pte = a.raw.pte_addr(a.pd(), a.ctx.channel().gpfifo_va(), fmt::PageSize::small);
    ASSERT_TRUE(ring_pte);
    const uint64_t spt = fmt::pde::spt_addr(a.raw.vram64(GuestAttacker::pde_addr(a.pd(), a.ctx.channel().gpfifo_va())));
    const uint32_t first = static_cast<uint32_t>(fmt::PD.index(a.ctx.channel().gpfifo_va())) + 1;
    for (uint32_t i = first; i < fmt::PD.entries(); ++i)
      a.raw.set_vram64(a.pd() + uint64_t{i} * fmt::PD.entry_bytes, fmt::pde::make(spt, 0));
    a.raw.invalidate(a.pd());
    driver::Buffer b = a.buffer(fmt::SMALL_PAGE);
    auto f = a.ctx.fill({b, 16, 1.f});
    ASSERT_TRUE(f);
    (void)a.ctx.wait(*f);
    EXPECT_GT(a.counters().entries_scanned, uint64_t{fmt::PD.entries()});
    // The attacker filled its own budget and was told so.
    const shadow::ReservedVram& own = a.self.shadow_pool();
    EXPECT_LT(own.size() - own.used(), fmt::SPT.table_bytes());
    EXPECT_TRUE(a.logged("no reserved VRAM to shadow"));
    // The victim's budget is as it was.
    EXPECT_EQ(a.tb.vgpu(VICTIM)->shadow_pool().used(), victim_used);
  });
}

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

class IsolationLifecycle : public ::testing::TestWithParam<Mode> {};
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
  auto host = Host::create(hc);
  ASSERT_TRUE(host) << host.error().what();
  Host& h = **host;

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
  auto host = Host::create(HostConfig{.vram_bytes = 256 * MiB, .reserved_bytes = 64 * MiB});
  ASSERT_TRUE(host) << host.error().what();
  LiveVm vm;
  open_vm(**host, lifecycle_vm("vm", GetParam(), LIFECYCLE_SHADOW * 4), vm);
  ASSERT_TRUE(vm.dev);
  auto ctx = vm.dev->create_context();
  ASSERT_TRUE(ctx) << ctx.error().what();
  const uint64_t ring_va = run_a_fill(**ctx);
  ctx->reset();
  expect_raw_fetch_faults(vm, ring_va);
}

// And across a guest reset (PMC.ENABLE clearing PFIFO): everything the VM
// had is reclaimed, the driver brings the device up again.
TEST_P(IsolationLifecycle, TranslationsDoNotSurviveAGuestReset) {
  auto host = Host::create(HostConfig{.vram_bytes = 256 * MiB, .reserved_bytes = 64 * MiB});
  ASSERT_TRUE(host) << host.error().what();
  LiveVm vm;
  open_vm(**host, lifecycle_vm("vm", GetParam(), LIFECYCLE_SHADOW * 4), vm);
  ASSERT_TRUE(vm.dev);
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

// ================================================================ paravirtual page tables (spec §17)
//
// Both VMs run in pv mode: the victim's driver maps through hypercalls too.
// The attacker rings raw batches in slots 1..15 of its own slot area (its
// driver uses slot 0), filled through PRAMIN, aiming at the victim's
// sentinels. Each test checks the result code, that nothing of the bad
// operation applied (the attacker's PV spaces map only its own VRAM), and,
// through run_isolation, the victim.

namespace pv = regs::pv;
using PvR = pv::Result;

constexpr uint32_t RAW_SPACE = 200;  // an id the attacker's driver never reaches

struct PvOpRec {
  pv::Opcode code;
  uint32_t flags = 0;
  uint32_t space = RAW_SPACE;
  uint64_t va = 0, addr = 0;
  uint32_t pages = 0;
};

struct RawPv {
  Attack& a;
  uint32_t slot = 1;

  uint64_t slot_addr() {
    return (uint64_t{pv::SlotBaseAddr::get(a.raw.reg(pv::SLOT_BASE))} << pv::SLOT_BASE_SHIFT) +
           uint64_t{slot} * pv::SLOT_BYTES;
  }
  void put(uint64_t base, uint32_t i, const PvOpRec& op) {
    const uint64_t rec = base + pv::slot::OPS + uint64_t{i} * pv::slot::OP_BYTES;
    a.raw.set_vram32(rec + pv::op::CODE, uint32_t(op.code) | op.flags);
    a.raw.set_vram32(rec + pv::op::SPACE, op.space);
    a.raw.set_vram64(rec + pv::op::VA, op.va);
    a.raw.set_vram64(rec + pv::op::ADDR, op.addr);
    a.raw.set_vram32(rec + pv::op::PAGES, op.pages);
  }
  void fill(const std::vector<PvOpRec>& ops) {
    const uint64_t base = slot_addr();
    for (uint32_t i = 0; i < ops.size(); ++i) put(base, i, ops[i]);
    a.raw.set_vram32(base + pv::slot::COUNT, static_cast<uint32_t>(ops.size()));
  }
  PvR ring() {
    a.raw.set_reg(pv::DOORBELL, pv::DoorbellSlot::make(slot));
    return static_cast<PvR>(a.raw.reg(pv::STATUS));
  }
  PvR batch(const std::vector<PvOpRec>& ops) {
    fill(ops);
    return ring();
  }
  uint32_t result(uint32_t i) {
    return a.raw.vram32(slot_addr() + pv::slot::OPS + uint64_t{i} * pv::slot::OP_BYTES + pv::op::RESULT);
  }
  uint32_t done() { return a.raw.vram32(slot_addr() + pv::slot::DONE); }
  // A fresh raw space of the attacker's own.
  void create(uint32_t id = RAW_SPACE) { ASSERT_EQ(batch({{pv::Opcode::create_space, 0, id}}), PvR::ok); }
  // Every mapping of space `id` lies in the attacker's partition; returns their count.
  size_t own_mappings(uint32_t id = RAW_SPACE) {
    const auto& part = a.self.partition();
    size_t n = 0;
    EXPECT_TRUE(a.self.pv_mappings(id, [&](uint64_t, uint64_t host, uint64_t bytes, bool) {
      EXPECT_TRUE(host >= part.base && host + bytes <= part.base + part.size) << "a PV mapping left the partition";
      ++n;
    }));
    return n;
  }
};

void run_pv(const std::function<void(Attack&, RawPv&)>& fn) {
  run_isolation(Mode::pv, [&](Attack& a) {
    RawPv p{a};
    ASSERT_TRUE(pv::SlotBaseEnable::get(a.raw.reg(pv::SLOT_BASE))) << "the attacker's driver set no slot area";
    fn(a, p);
  });
}

constexpr uint64_t PV_VA = 0x40'0000'0000;  // far above what the attacker's driver maps
constexpr uint64_t OWN_PAGE = 40 * MiB;     // attacker VRAM its driver does not use (64 MiB VMs)

// The stride form, small pages, aimed at the victim's small sentinel.
TEST(IsolationPv, StrideMapOfSmallPagesOutsidePartitionIsRefused) {
  run_pv([](Attack& a, RawPv& p) {
    p.create();
    EXPECT_EQ(p.batch({{pv::Opcode::map, 0, RAW_SPACE, PV_VA, a.foreign(a.victim.small_gaddr), 4}}),
              PvR::outside_partition);
    EXPECT_EQ(p.result(0), uint32_t(PvR::outside_partition));
    // The single form straddling the partition's end: its second page is the victim's.
    EXPECT_EQ(p.batch({{pv::Opcode::map, 0, RAW_SPACE, PV_VA, VM_VRAM - fmt::SMALL_PAGE, 2}}), PvR::outside_partition);
    EXPECT_EQ(p.own_mappings(), 0u);
    EXPECT_TRUE(a.logged("outside_partition"));
  });
}

// The stride form, big pages, aimed at the victim's big sentinel; and big
// pages from the attacker's own last big page onward.
TEST(IsolationPv, StrideMapOfBigPagesOutsidePartitionIsRefused) {
  run_pv([](Attack& a, RawPv& p) {
    p.create();
    EXPECT_EQ(p.batch({{pv::Opcode::map, pv::op::Big::mask, RAW_SPACE, PV_VA, a.foreign(a.victim.big_gaddr), 2}}),
              PvR::outside_partition);
    EXPECT_EQ(p.batch({{pv::Opcode::map, pv::op::Big::mask, RAW_SPACE, PV_VA, VM_VRAM - fmt::BIG_PAGE, 2}}),
              PvR::outside_partition);
    // Control: the same op inside the partition applies.
    EXPECT_EQ(p.batch({{pv::Opcode::map, pv::op::Big::mask, RAW_SPACE, PV_VA, VM_VRAM - fmt::BIG_PAGE, 1}}), PvR::ok);
    EXPECT_EQ(p.own_mappings(), 1u);
  });
}

// The list form: an own page then a victim page, small and big; the whole
// operation is refused, its first (legal) page included.
TEST(IsolationPv, ListMapWithAForeignPageIsRefusedWhole) {
  run_pv([](Attack& a, RawPv& p) {
    p.create();
    const uint64_t list = p.slot_addr() + pv::slot::LIST;
    a.raw.set_vram64(list, OWN_PAGE);
    a.raw.set_vram64(list + 8, a.foreign(a.victim.small_gaddr));
    EXPECT_EQ(p.batch({{pv::Opcode::map_list, 0, RAW_SPACE, PV_VA, pv::slot::LIST, 2}}), PvR::outside_partition);
    a.raw.set_vram64(list + 8, a.foreign(a.victim.big_gaddr));
    EXPECT_EQ(p.batch({{pv::Opcode::map_list, pv::op::Big::mask, RAW_SPACE, PV_VA, pv::slot::LIST, 2}}),
              PvR::outside_partition);
    // A list that runs past the slot (into the next slot, or the victim).
    EXPECT_EQ(p.batch({{pv::Opcode::map_list, 0, RAW_SPACE, PV_VA, pv::SLOT_BYTES - 8, 4}}), PvR::bad_list);
    EXPECT_EQ(p.own_mappings(), 0u);
  });
}

// Batch counts and slot indices out of range; a slot area in the victim's VRAM.
TEST(IsolationPv, BatchCountOrSlotOutOfRangeIsRefused) {
  run_pv([](Attack& a, RawPv& p) {
    const auto c0 = a.counters();
    for (uint32_t count : {0u, pv::MAX_OPS + 1, 0xffffffffu}) {
      a.raw.set_vram32(p.slot_addr() + pv::slot::COUNT, count);
      EXPECT_EQ(p.ring(), PvR::bad_count) << count;
    }
    for (uint32_t v : {pv::SLOTS, 0xffu, 0x100u, 0xffffffffu}) {
      a.raw.set_reg(pv::DOORBELL, v);
      EXPECT_EQ(a.raw.reg(pv::STATUS), uint32_t(PvR::bad_slot)) << v;
    }
    EXPECT_EQ(a.counters().pv_failures - c0.pv_failures, 7u);
    // Last: a slot area in the victim's VRAM is refused (and this ends the
    // attacker driver's PV session: its context is not used again).
    a.raw.set_reg(pv::SLOT_BASE, pv::SlotBaseEnable::mask | pv::SlotBaseAddr::make(static_cast<uint32_t>(
                                                                a.foreign(0) >> pv::SLOT_BASE_SHIFT)));
    EXPECT_EQ(a.raw.reg(pv::SLOT_BASE), 0u);
    a.raw.set_reg(pv::DOORBELL, 1);
    EXPECT_EQ(a.raw.reg(pv::STATUS), uint32_t(PvR::not_enabled));
    EXPECT_TRUE(a.logged("slot area"));
  });
}

// Address space ids that are not the VM's: beyond the id range, the
// reserved BAR ids of another kind, ids the victim uses but the attacker
// never created. Each is bad_space; the attacker's own id 0 maps only its own VRAM.
TEST(IsolationPv, SpaceIdsThatAreNotTheVmsAreRefused) {
  run_pv([](Attack& a, RawPv& p) {
    for (uint32_t id : {pv::SPACES, 0xffff0002u, 0xffffffffu, 1u, 2u, 100u}) {
      EXPECT_EQ(p.batch({{pv::Opcode::map, 0, id, PV_VA, OWN_PAGE, 1}}), PvR::bad_space) << id;
      EXPECT_EQ(p.batch({{pv::Opcode::destroy_space, 0, id}}), PvR::bad_space) << id;
    }
    // Id 0 is the attacker's own context space here, whatever it is in the victim.
    EXPECT_EQ(p.batch({{pv::Opcode::map, 0, 0, PV_VA, a.foreign(a.victim.small_gaddr), 1}}), PvR::outside_partition);
    p.own_mappings(0);
  });
}

// Overlapping map and unmap of one range in one batch, the last op aiming
// outside: the ops run in order and the failing one applies nothing.
TEST(IsolationPv, OverlappingMapAndUnmapInOneBatchStayConfined) {
  run_pv([](Attack& a, RawPv& p) {
    p.create();
    EXPECT_EQ(p.batch({{pv::Opcode::map, 0, RAW_SPACE, PV_VA, OWN_PAGE, 8},
                       {pv::Opcode::unmap, 0, RAW_SPACE, PV_VA + 2 * fmt::SMALL_PAGE, 0, 4},
                       {pv::Opcode::map, 0, RAW_SPACE, PV_VA + fmt::SMALL_PAGE, OWN_PAGE + 0x10000, 2},
                       {pv::Opcode::map, 0, RAW_SPACE, PV_VA, a.foreign(a.victim.small_gaddr), 8},
                       {pv::Opcode::unmap, 0, RAW_SPACE, PV_VA, 0, 8}}),
              PvR::outside_partition);
    EXPECT_EQ(p.done(), 3u);
    EXPECT_EQ(p.result(4), uint32_t(PvR::not_run));
    // 8 mapped, 4 unmapped, 2 remapped (one of them over an unmapped page): 5 left.
    EXPECT_EQ(p.own_mappings(), 5u);
  });
}

// Flushes of ids that are not the attacker's reach nothing; its own flush
// drops only its own TLB entries (the victim never sees a fault or error).
TEST(IsolationPv, FlushOfAnotherVmsSpaceIsRefused) {
  run_pv([](Attack& a, RawPv& p) {
    const auto c0 = a.counters();
    uint32_t refused = 0;
    for (uint32_t id = 1; id < 16; ++id) refused += p.batch({{pv::Opcode::flush, 0, id}}) == PvR::bad_space;
    EXPECT_EQ(refused, 15u);
    EXPECT_EQ(p.batch({{pv::Opcode::flush, 0, pv::SPACE_BAR1}}), PvR::ok);  // its own BAR1
    EXPECT_EQ(a.counters().tlb_invalidates - c0.tlb_invalidates, 1u);
  });
}

// Four threads of the attacker ring their own slots at once, each batch a
// legal map and a map of a victim page; every batch stops at the second.
TEST(IsolationPv, ConcurrentHypercallsFromSeveralThreadsStayConfined) {
  run_pv([](Attack& a, RawPv&) {
    constexpr uint32_t THREADS = 4, RINGS = 200;
    for (uint32_t t = 0; t < THREADS; ++t) {
      RawPv q{a, 1 + t};
      q.create(RAW_SPACE + t);
      q.fill({{pv::Opcode::map, 0, RAW_SPACE + t, PV_VA, OWN_PAGE + t * fmt::SMALL_PAGE, 1},
              {pv::Opcode::map, 0, RAW_SPACE + t, PV_VA + fmt::SMALL_PAGE, a.foreign(a.victim.small_gaddr), 4}});
    }
    const auto c0 = a.counters();
    std::vector<std::thread> threads;
    for (uint32_t t = 0; t < THREADS; ++t)
      threads.emplace_back([&a, t] {
        for (uint32_t i = 0; i < RINGS; ++i) a.raw.set_reg(pv::DOORBELL, pv::DoorbellSlot::make(1 + t));
      });
    for (auto& th : threads) th.join();
    const auto c1 = a.counters();
    EXPECT_EQ(c1.pv_batches - c0.pv_batches, THREADS * RINGS);
    EXPECT_EQ(c1.pv_failures - c0.pv_failures, THREADS * RINGS);
    for (uint32_t t = 0; t < THREADS; ++t) {
      RawPv q{a, 1 + t};
      EXPECT_EQ(q.done(), 1u);
      EXPECT_EQ(q.result(1), uint32_t(PvR::outside_partition));
      EXPECT_EQ(q.own_mappings(RAW_SPACE + t), 1u);
    }
  });
}

// A second thread rewrites the batch (the target address and the page
// count) while the first rings it again and again: each run validated and
// applied one consistent copy, so nothing ever maps outside.
TEST(IsolationPv, BatchRewrittenDuringProcessingStaysConfined) {
  run_pv([](Attack& a, RawPv& p) {
    p.create();
    p.fill({{pv::Opcode::map, 0, RAW_SPACE, PV_VA, OWN_PAGE, 4}});
    const uint64_t rec = p.slot_addr() + pv::slot::OPS;
    std::atomic<bool> stop{false};
    std::atomic<uint32_t> rewrites{0};
    // The rewriter is the only PRAMIN user meanwhile; the ringer only writes DOORBELL.
    std::thread rewriter([&] {
      std::mt19937 rng(11);  // random choices: no fixed phase against the ringer
      for (uint32_t i = 0; !stop.load(std::memory_order_acquire); ++i) {
        a.raw.set_vram64(rec + pv::op::ADDR, rng() % 2 ? a.foreign(a.victim.small_gaddr) : OWN_PAGE);
        a.raw.set_vram32(rec + pv::op::PAGES, rng() % 3 ? 4 : pv::MAX_PAGES * 2);
        rewrites.fetch_add(1, std::memory_order_relaxed);
      }
    });
    const auto c0 = a.counters();
    // At least 2000 rings, and on until the rewriter has rewritten 500 times.
    constexpr uint32_t RINGS = 2000, REWRITES = 500, MAX_RINGS = 2'000'000;
    uint32_t rings = 0;
    while (rings < MAX_RINGS && (rings < RINGS || rewrites.load(std::memory_order_relaxed) < REWRITES)) {
      a.raw.set_reg(pv::DOORBELL, pv::DoorbellSlot::make(p.slot));
      ++rings;
    }
    stop.store(true, std::memory_order_release);
    rewriter.join();
    const auto c1 = a.counters();
    EXPECT_GE(rewrites.load(), REWRITES);
    EXPECT_EQ(c1.pv_batches - c0.pv_batches, rings);
    // How many runs saw a foreign or oversized copy depends on how the two
    // threads interleave (the unit test PvServer.TheBatchIsReadOnceFromACopy
    // pins copy-once down); what must hold is that none of them mapped
    // outside, whichever copy each saw.
    EXPECT_EQ(c1.pv_failures - c0.pv_failures, c1.guest_errors - c0.guest_errors);
    ::testing::Test::RecordProperty("refused_runs", static_cast<int>(c1.pv_failures - c0.pv_failures));
    const size_t n = p.own_mappings();
    EXPECT_LE(n, 4u);
  });
}

// set_pd naming the victim's page directory (or one past the partition):
// refused, so no instance block of the attacker can reach the victim's tables.
TEST(IsolationPv, SetPdOutsidePartitionIsRefused) {
  run_pv([](Attack& a, RawPv& p) {
    p.create();
    EXPECT_EQ(p.batch({{pv::Opcode::set_pd, 0, RAW_SPACE, 0, a.foreign(a.victim.pd)}}), PvR::outside_partition);
    EXPECT_EQ(p.batch({{pv::Opcode::set_pd, 0, RAW_SPACE, 0, VM_VRAM}}), PvR::outside_partition);
    // Its own driver's directory name is taken: pd_in_use, not a takeover.
    EXPECT_EQ(p.batch({{pv::Opcode::set_pd, 0, RAW_SPACE, 0, a.pd()}}), PvR::pd_in_use);
  });
}

// ================================================================ system memory (DMA)
// The attacker pins pages of its own RAM (sysmem PTEs the mediator moves
// into its bus slot), then rewrites one of those PTEs (or a PDE) to name
// a guest-physical address outside its RAM. The mediator must leave a
// faulting entry and count it; the victim's RAM (run_isolation) and VRAM
// stay unchanged.

// The attacker guest-physical address that would reach the victim's RAM
// at `offset` if the mediator only added the attacker's bus slot base.
uint64_t foreign_ram(Attack& a, uint64_t offset) {
  const uint64_t mine = a.self.guest_ram().regions().at(0).host_bus;
  const uint64_t theirs = a.tb.vgpu(VICTIM)->guest_ram().regions().at(0).host_bus;
  return theirs - mine + offset;
}

driver::Buffer pinned(Attack& a, uint64_t bytes) {
  auto b = a.ctx.alloc_host(bytes);
  EXPECT_TRUE(b) << b.error().what();
  return b.value_or(driver::Buffer{});
}

// Rewrites the small PTE behind `va` to name guest-physical `gpa` (sysmem).
void redirect_sysmem(Attack& a, uint64_t va, uint64_t gpa, fmt::PageSize ps = fmt::PageSize::small) {
  auto at = a.raw.pte_addr(a.pd(), va, ps);
  ASSERT_TRUE(at) << "no page table behind VA " << va;
  a.raw.set_vram64(*at, fmt::pte::make_sysmem(gpa));
  a.raw.invalidate(a.pd());
}

// A fill over a pinned buffer whose first PTE was redirected to `gpa`.
void sysmem_pte_faults(Attack& a, uint64_t gpa) {
  driver::Buffer b = pinned(a, SMALL_SENTINEL);
  const uint64_t va = a.va(b);
  const uint64_t bad_before = a.counters().bad_entries;
  redirect_sysmem(a, va, gpa);
  auto f = a.ctx.fill({b, static_cast<uint32_t>(SMALL_SENTINEL / 4), 1.f});
  ASSERT_TRUE(f);
  EXPECT_FALSE(a.ctx.wait(*f));
  EXPECT_EQ(a.raw.chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::mmu_fault));
  a.expect_fault(regs::FaultUnit::pgraph, regs::FaultReason::page_not_present, va);
  EXPECT_GT(a.counters().bad_entries, bad_before);
}

// A sysmem PTE naming the first page past the VM's RAM.
TEST_P(Isolation, SysmemPteJustPastRamFaults) {
  run_isolation(GetParam(), [](Attack& a) { sysmem_pte_faults(a, VM_RAM); });
}

// A sysmem PTE naming the middle of the victim's RAM (were the attacker's
// guest-physical address only offset by its bus slot).
TEST_P(Isolation, SysmemPteIntoAnotherVmsRamFaults) {
  run_isolation(GetParam(), [](Attack& a) { sysmem_pte_faults(a, foreign_ram(a, VM_RAM / 2)); });
}

// A sysmem PTE naming the last page of the 40-bit bus.
TEST_P(Isolation, SysmemPteAtTopOfBusFaults) {
  run_isolation(GetParam(), [](Attack& a) { sysmem_pte_faults(a, fmt::VA_LIMIT - fmt::SMALL_PAGE); });
}

// A big sysmem page that starts inside RAM and ends 64 KiB past it.
TEST_P(Isolation, SysmemBigPageStraddlingRamEndFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Buffer b = a.buffer(BIG_SENTINEL);
    const uint64_t va = a.va(b);
    const uint64_t bad_before = a.counters().bad_entries;
    redirect_sysmem(a, va, align_down(VM_RAM, fmt::BIG_PAGE), fmt::PageSize::big);
    auto f = a.ctx.fill({b, static_cast<uint32_t>(BIG_SENTINEL / 4), 1.f});
    ASSERT_TRUE(f);
    EXPECT_FALSE(a.ctx.wait(*f));
    a.expect_fault(regs::FaultUnit::pgraph, regs::FaultReason::page_not_present, va);
    EXPECT_GT(a.counters().bad_entries, bad_before);
  });
}

// A PDE whose small-page table target is system memory outside RAM: no
// table is shadowed, the attacker's accesses under it fault.
TEST_P(Isolation, SysmemPageTableOutsideRamFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Buffer b = pinned(a, SMALL_SENTINEL);
    const uint64_t va = a.va(b);
    const uint64_t bad_before = a.counters().bad_entries;
    const uint64_t pde_at = GuestAttacker::pde_addr(a.pd(), va);
    uint64_t pde = a.raw.vram64(pde_at);
    pde = fmt::pde::SptTarget::set(pde, uint64_t(fmt::PdeTarget::sysmem_coherent));
    pde = fmt::pde::SptAddr::set(pde, foreign_ram(a, 0) >> fmt::TABLE_ALIGN_SHIFT);
    a.raw.set_vram64(pde_at, pde);
    a.raw.invalidate(a.pd());
    auto f = a.ctx.fill({b, static_cast<uint32_t>(SMALL_SENTINEL / 4), 1.f});
    ASSERT_TRUE(f);
    EXPECT_FALSE(a.ctx.wait(*f));
    EXPECT_EQ(a.raw.chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::mmu_fault));
    auto unit = a.pending_fault_unit();
    ASSERT_TRUE(unit);
    const uint32_t reason = pf::FaultReason::get(a.raw.reg(pf::FAULT_TYPE[*unit].offset));
    EXPECT_TRUE(reason == uint32_t(regs::FaultReason::pt_not_present) ||
                reason == uint32_t(regs::FaultReason::page_not_present))
        << reason;
    EXPECT_GT(a.counters().bad_entries, bad_before);
  });
}

// A copy-engine transfer into pinned memory whose second page lies past
// the end of RAM: the copy faults there and writes none of its first page.
TEST_P(Isolation, CopyCrossingRamEndFaultsAndWritesNothing) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Buffer src = a.buffer(2 * fmt::SMALL_PAGE);
    driver::Buffer dst = pinned(a, 2 * fmt::SMALL_PAGE);
    const uint64_t va = a.va(dst);
    auto* last = a.tb.ram(ATTACKER).data() + VM_RAM - fmt::SMALL_PAGE;
    std::memset(last, 0x77, fmt::SMALL_PAGE);
    redirect_sysmem(a, va, VM_RAM - fmt::SMALL_PAGE);
    redirect_sysmem(a, va + fmt::SMALL_PAGE, VM_RAM);
    auto f = a.ctx.copy(dst, 0, src, 0, 2 * fmt::SMALL_PAGE);
    ASSERT_TRUE(f);
    EXPECT_FALSE(a.ctx.wait(*f));
    a.expect_fault(regs::FaultUnit::ce0, regs::FaultReason::page_not_present, va + fmt::SMALL_PAGE);
    EXPECT_TRUE(std::all_of(last, last + fmt::SMALL_PAGE, [](std::byte x) { return x == std::byte{0x77}; }))
        << "the faulting copy wrote its first page";
  });
}

// A semaphore release to a pinned VA whose PTE names the victim's RAM.
TEST_P(Isolation, SemaphoreReleaseToSysmemOutsideRamFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Buffer b = pinned(a, SMALL_SENTINEL);
    redirect_sysmem(a, a.va(b), foreign_ram(a, 0));
    driver::PushBuffer pb;
    semaphore_release(pb, a.va(b), 0xdeadbeef);
    a.submit(pb);
    EXPECT_EQ(a.raw.wait_chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::mmu_fault));
    a.expect_fault(regs::FaultUnit::pfifo, regs::FaultReason::page_not_present, a.va(b));
  });
}

// DMA racing the removal of the attacker's RAM from the GPU's bus (the
// step destroy_vgpu takes first): large copies into pinned memory are in
// flight while the host takes the RAM away. Whatever was in flight either
// finished before or faults; a copy after it faults (dma_error or, once
// rescanned, page_not_present);
// nothing reaches the victim's RAM (checked by run_isolation).
TEST_P(Isolation, DmaRacingRamTeardownFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    constexpr uint64_t BYTES = 8 * MiB;
    driver::Buffer src = a.buffer(BYTES);
    driver::Buffer dst = pinned(a, BYTES);
    std::vector<driver::Fence> fences;
    for (int i = 0; i < 4; ++i) {
      auto f = a.ctx.copy(dst, 0, src, 0, BYTES);
      ASSERT_TRUE(f);
      fences.push_back(*f);
    }
    ASSERT_TRUE(a.tb.host()->set_guest_ram(a.self, {}));
    (void)a.ctx.synchronize();
    auto f = a.ctx.copy(dst, 0, src, 0, BYTES);
    if (f) {
      EXPECT_FALSE(a.ctx.wait(*f));
    }
    EXPECT_EQ(a.raw.chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::mmu_fault));
    // dma_error while the shadow still names the removed window;
    // page_not_present once a rescan has rejected the entry.
    auto unit = a.pending_fault_unit();
    ASSERT_TRUE(unit);
    const uint32_t reason = pf::FaultReason::get(a.raw.reg(pf::FAULT_TYPE[*unit].offset));
    EXPECT_TRUE(reason == uint32_t(regs::FaultReason::dma_error) ||
                reason == uint32_t(regs::FaultReason::page_not_present))
        << reason;
  });
}

// PV-11: system-memory targets through a hypercall are confined to the
// VM's RAM as the hypervisor reports it, page by page (the scanning path's
// check): just past the end of RAM, into the victim's RAM (where an
// unchecked offset would land), at the top of the bus, and a range that
// starts inside RAM but runs past its end are refused and apply nothing;
// a range inside RAM maps (PinnedModes.*/pv moves data through such maps).
TEST(IsolationPv, SystemMemoryTargetsAreConfinedToTheVmsRam) {
  run_pv([](Attack& a, RawPv& p) {
    p.create();
    const uint64_t page = fmt::SMALL_PAGE;
    const auto map = [&](uint64_t gpa, uint32_t pages) {
      return p.batch({{pv::Opcode::map, pv::op::Sysmem::mask, RAW_SPACE, PV_VA, gpa, pages}});
    };
    // DONE: the count of operations the batch applied.
    EXPECT_EQ(map(VM_RAM, 1), PvR::target_refused);
    EXPECT_EQ(p.done(), 0u);
    EXPECT_EQ(map(foreign_ram(a, VM_RAM / 2), 4), PvR::target_refused);
    EXPECT_EQ(p.done(), 0u);
    EXPECT_EQ(map(fmt::VA_LIMIT - page, 1), PvR::target_refused);
    EXPECT_EQ(p.done(), 0u);
    EXPECT_EQ(map(VM_RAM - 2 * page, 4), PvR::target_refused) << "a range running past RAM's end";
    EXPECT_EQ(p.done(), 0u);
    EXPECT_EQ(map(VM_RAM - 4 * page, 4), PvR::ok);
    EXPECT_EQ(p.done(), 1u);
  });
}

}  // namespace
}  // namespace vgpu::mediator
