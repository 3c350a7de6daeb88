// SPDX-License-Identifier: GPL-2.0-or-later
// The isolation catalog's harness (isolation_harness.h): the victim's
// workload and checks, the attacker's helpers, run_isolation, and the one
// instantiation of the Isolation fixture, whose tests sit in the
// tests/isolation_*_test.cc files.
#include "tests/testing/isolation_harness.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <span>
#include <thread>

#include "common/text.h"
#include "gpu/kernels/reference.h"

namespace vgpu::mediator::isolation {

uint32_t pattern(uint64_t i, uint32_t salt) { return static_cast<uint32_t>(i * 2654435761u) ^ salt; }

// ---------------------------------------------------------------- the victim

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

bool Attack::logged(const std::string& needle) const {
  for (const std::string& e : self.guest_errors())
    if (e.find(needle) != std::string::npos) return true;
  return false;
}

driver::Buffer Attack::buffer(uint64_t bytes) {
  auto b = ctx.alloc(bytes);
  EXPECT_TRUE(b) << b.error().what();
  return b.value_or(driver::Buffer{});
}

void Attack::redirect(uint64_t va_, fmt::PageSize ps, uint64_t target) {
  auto at = raw.pte_addr(pd(), va_, ps);
  ASSERT_TRUE(at) << "no page table behind VA " << va_;
  ASSERT_TRUE(fmt::pte::Valid::get(raw.vram64(*at))) << "the walk found no valid PTE";
  raw.set_vram64(*at, fmt::pte::make(target));
  raw.invalidate(pd());
}

uint64_t Attack::shadow_pde(uint64_t va_) {
  gpu::Gpu& g = tb.gpu();
  const uint64_t inst = fmt::decode_chan_inst(g.read32(pf::CHAN_INST[self.pchid_of(chid())].offset)).inst;
  const uint64_t pdb = fmt::decode_address_space(g.vram().reader(inst)).pdb;
  return g.vram().read64(pdb + fmt::PD.index(va_) * fmt::PD.entry_bytes);
}

std::optional<uint32_t> Attack::pending_fault_unit() {
  const uint32_t pending = raw.reg(pf::FAULT_UNIT_PENDING);
  for (uint32_t u = 0; u < pf::NUM_FAULT_UNITS; ++u)
    if (pending & (1u << u)) return u;
  return std::nullopt;
}

void Attack::expect_pending_fault(regs::FaultReason reason) {
  auto unit = pending_fault_unit();
  ASSERT_TRUE(unit) << "no FAULT_INFO record pending";
  EXPECT_EQ(pf::FaultReason::get(raw.reg(pf::FAULT_TYPE[*unit].offset)), static_cast<uint32_t>(reason));
}

void Attack::expect_pending_fault_among(std::initializer_list<regs::FaultReason> reasons) {
  auto unit = pending_fault_unit();
  ASSERT_TRUE(unit) << "no FAULT_INFO record pending";
  const uint32_t reason = pf::FaultReason::get(raw.reg(pf::FAULT_TYPE[*unit].offset));
  EXPECT_TRUE(std::any_of(reasons.begin(), reasons.end(), [&](regs::FaultReason r) {
    return reason == static_cast<uint32_t>(r);
  })) << reason;
}

void Attack::expect_stops(const Result<driver::Fence>& f, regs::ChannelError error) {
  ASSERT_TRUE(f);
  EXPECT_FALSE(ctx.wait(*f));
  EXPECT_EQ(raw.chan_error(chid()), static_cast<uint32_t>(error));
}

void Attack::expect_fill_fails(driver::Buffer b, uint64_t bytes) {
  auto f = ctx.fill({b, static_cast<uint32_t>(bytes / 4), 1.f});
  ASSERT_TRUE(f);
  EXPECT_FALSE(ctx.wait(*f));
}

void Attack::expect_fault(regs::FaultUnit unit, regs::FaultReason reason, uint64_t fault_va) {
  const uint32_t u = static_cast<uint32_t>(unit);
  EXPECT_TRUE(raw.reg(pf::FAULT_UNIT_PENDING) & (1u << u))
      << "no fault pending on unit " << u << " (pending " << raw.reg(pf::FAULT_UNIT_PENDING) << ", CHAN_ERROR addr "
      << raw.reg(pf::CHAN_ERROR_ADDR_LO[chid()].offset) << ")";
  const uint32_t type = raw.reg(pf::FAULT_TYPE[u].offset);
  EXPECT_EQ(pf::FaultReason::get(type), static_cast<uint32_t>(reason));
  EXPECT_EQ(join64(raw.reg(pf::FAULT_VA_HI[u].offset), raw.reg(pf::FAULT_VA_LO[u].offset)), fault_va);
}

uint64_t Attack::chan_error_addr() {
  return join64(raw.reg(pf::CHAN_ERROR_ADDR_HI[chid()].offset), raw.reg(pf::CHAN_ERROR_ADDR_LO[chid()].offset));
}

void Attack::expect_chan_error(regs::ChannelError error) {
  EXPECT_EQ(raw.wait_chan_error(chid()), static_cast<uint32_t>(error));
}

uint64_t Attack::va_onto_victim_sentinel() {
  const uint64_t at = va(buffer(SMALL_SENTINEL));
  redirect(at, fmt::PageSize::small, foreign(victim.small_gaddr));
  return at;
}

void Attack::expect_release_faults(uint64_t va_, regs::FaultReason reason) {
  driver::PushBuffer pb;
  semaphore_release(pb, va_, 0xdeadbeef);
  submit(pb);
  expect_chan_error(regs::ChannelError::mmu_fault);
  expect_fault(regs::FaultUnit::pfifo, reason, va_);
}

void Attack::submit(const driver::PushBuffer& pb) {
  auto s = ctx.channel().submit(pb.words());
  EXPECT_TRUE(s) << s.error().what();
}

TestbedConfig config(Mode mode) {
  TestbedConfig tc;
  tc.mode = mode;
  tc.vms = 2;
  tc.vram_per_vm = VM_VRAM;
  tc.ram_per_vm = VM_RAM;
  tc.channels_per_vm = CHANNELS;
  tc.device.inst_heap_bytes = INST_HEAP;
  tc.device.timeout_ns = 5'000'000'000;
  // The catalogue's operations are short (the longest, a 1 s spin): a
  // runaway, sliced by default and so never ended by max-gpu-ms, is ended
  // by this watchdog instead of the default 60 s.
  tc.watchdog_ms = WATCHDOG_MS;
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

std::string mode_param_name(const ::testing::TestParamInfo<Mode>& p) {
  std::string n = testbed::mode_name(p.param);
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

INSTANTIATE_TEST_SUITE_P(Modes, Isolation, ::testing::Values(Mode::fv_opt, Mode::fv_naive), mode_param_name);

// ---------------------------------------------------------------- used by several sections

std::vector<uint32_t> owned_pchids(Vgpu& v) {
  std::vector<uint32_t> out;
  for (uint32_t p = 0; p < regs::NUM_CHANNELS; ++p)
    if (v.owns_pchid(p)) out.push_back(p);
  return out;
}

void semaphore_release(driver::PushBuffer& pb, uint64_t va, uint32_t payload) {
  namespace h = cls::host;
  pb.inc(driver::subch::HOST, h::SEMAPHORE_A,
         {h::SemAHi::make(hi32(va)), lo32(va) & h::SemBLo::mask, payload,
          h::SemDOperation::make(static_cast<uint32_t>(h::SemOp::release)) | h::SemDReleaseSize4::mask});
}

uint64_t foreign_ram(Attack& a, uint64_t offset) {
  const uint64_t mine = a.self.guest_ram().regions().at(0).host_bus;
  const uint64_t theirs = a.tb.vgpu(VICTIM)->guest_ram().regions().at(0).host_bus;
  return theirs - mine + offset;
}

}  // namespace vgpu::mediator::isolation
