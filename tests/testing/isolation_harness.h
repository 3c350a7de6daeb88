// SPDX-License-Identifier: GPL-2.0-or-later
// The harness of the isolation catalog (docs/isolation.md), shared by the
// tests/isolation_*_test.cc files, one a section. In each test VM 1 (the
// victim) runs a real workload through the unchanged driver while VM 0
// (the attacker) opens a normal context and then corrupts its own tables
// and registers through raw BAR accesses, aiming at the victim's memory
// and channels. Every test checks three things: the attack went through
// the mediator (its counters or error record moved), the attacker got the
// specific fault or error, and the victim's results and the checksum of
// its data in VRAM are unchanged.
//
// The attacker is VM 0 and the victim VM 1, so the victim's partition
// lies right after the attacker's: an attacker guest address past its own
// partition's end is exactly where the victim's data would be if the
// mediator did not check it (Attack::foreign).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "driver/pushbuf.h"
#include "tests/testing/guest_attacker.h"
#include "testbed/testbed.h"

namespace vgpu::mediator::isolation {

using attack::GuestAttacker;
using driver::Bar;
using testbed::Mode;
using testbed::Testbed;
using testbed::TestbedConfig;
using testbed::Vm;
namespace pf = regs::pfifo;
namespace pbus = regs::pbus;
namespace pmc = regs::pmc;

inline constexpr uint32_t ATTACKER = 0;
inline constexpr uint32_t VICTIM = 1;
inline constexpr uint64_t VM_VRAM = 64 * MiB;
// Guest RAM: not a whole number of big pages, so that a big page can
// straddle its end.
inline constexpr uint64_t VM_RAM = 16 * MiB + 64 * KiB;
inline constexpr uint32_t CHANNELS = 8;
inline constexpr uint32_t SPARE_CHID = CHANNELS - 1;  // a channel id of the attacker's range it never uses
inline constexpr uint64_t INST_HEAP = 8 * MiB;        // BAR3 [8, 16) MiB stays unmapped
inline constexpr uint64_t BAR3_UNUSED = 12 * MiB;
inline constexpr uint64_t BAR1_UNUSED = 100 * MiB;           // below the first PDE's end, above what the driver maps
inline constexpr uint64_t SMALL_SENTINEL = 16 * KiB;         // small pages
inline constexpr uint64_t BIG_SENTINEL = 2 * fmt::BIG_PAGE;  // big pages
inline constexpr uint32_t MIN_ROUNDS = 3;
inline constexpr uint32_t WORK_FLOATS = 4096;
inline constexpr uint32_t GEMM = 32;
inline constexpr auto READY_TIMEOUT = std::chrono::seconds(60);
inline constexpr uint32_t WATCHDOG_MS = 3000;  // every VM's operation watchdog here (60 s by default)

uint32_t pattern(uint64_t i, uint32_t salt);

// ---------------------------------------------------------------- the victim

struct VictimShared {
  std::atomic<bool> ready{false};
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> rounds{0};
  // Guest addresses, published before `ready`.
  uint64_t small_gaddr = 0, big_gaddr = 0, inst = 0, pd = 0, userd = 0;
  uint64_t sum_before = 0, sum_after = 0;  // host VRAM checksum of both sentinels
};

// The FNV-1a checksum of `bytes` of host VRAM at `host_addr`.
uint64_t host_checksum(Testbed& tb, uint64_t host_addr, uint64_t bytes);
// The checksum of both victim sentinels in host VRAM.
uint64_t victim_sum(Testbed& tb, const VictimShared& sh);
// A sentinel buffer still holds pattern(i, salt), read back through `ctx`.
Status check_sentinel(driver::Context& ctx, driver::Buffer b, uint64_t bytes, uint32_t salt);
// One round of the victim's work (a fill and an sgemm), checked.
Status victim_round(driver::Context& ctx, driver::Buffer work, driver::Buffer a, driver::Buffer b, driver::Buffer c,
                    uint32_t round);
// VM 1's thread: sentinels, then rounds until the attacker is done, then
// the checks and a round on a fresh context.
Status victim(Vm& vm, Testbed& tb, VictimShared& sh);

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
  bool logged(const std::string& needle) const;
  driver::Buffer buffer(uint64_t bytes);
  uint64_t va(driver::Buffer b) { return ctx.gpu_va(b).value(); }
  // Rewrites the PTE behind `va` to name guest address `target`.
  void redirect(uint64_t va_, fmt::PageSize ps, uint64_t target);
  // The entry for `va` in the shadow page directory that the GPU walks for
  // the attacker's channel (read from host VRAM).
  uint64_t shadow_pde(uint64_t va_);
  // The unit whose FAULT_INFO record is pending (one expected).
  std::optional<uint32_t> pending_fault_unit();
  // Some unit's FAULT_INFO record is pending, with `reason`.
  void expect_pending_fault(regs::FaultReason reason);
  // Some unit's FAULT_INFO record is pending, with one of `reasons`.
  void expect_pending_fault_among(std::initializer_list<regs::FaultReason> reasons);
  void expect_fault(regs::FaultUnit unit, regs::FaultReason reason, uint64_t fault_va);
  // The address in the attacker channel's CHAN_ERROR record.
  uint64_t chan_error_addr();
  // The attacker's channel stops with `error` (waits for its CHAN_ERROR).
  void expect_chan_error(regs::ChannelError error);
  // A new SMALL_SENTINEL buffer of the attacker's, its PTE rewritten to name
  // the victim's small-page sentinel: its VA.
  uint64_t va_onto_victim_sentinel();
  // A semaphore release to `va` is submitted raw: the channel stops with
  // mmu_fault and PFIFO's fault record names `va` with `reason`.
  void expect_release_faults(uint64_t va, regs::FaultReason reason);
  // Work `f` was submitted and never completes: the channel stops with `error`.
  void expect_stops(const Result<driver::Fence>& f, regs::ChannelError error);
  // A fill of the first `bytes` of `b` is submitted and never completes.
  void expect_fill_fails(driver::Buffer b, uint64_t bytes);
  // Submits raw push-buffer words on the attacker's channel.
  void submit(const driver::PushBuffer& pb);
};

struct StopOnExit {
  std::atomic<bool>& stop;
  ~StopOnExit() { stop.store(true, std::memory_order_release); }
};

TestbedConfig config(Mode mode);

// Runs `attack` as VM 0 while VM 1 runs its workload; checks the victim.
void run_isolation(Mode mode, const std::function<void(Attack&)>& attack_fn);

// The fixture of the catalog's TEST_P tests, in every section's file; its
// INSTANTIATE_TEST_SUITE_P (fv-opt and fv-naive) is in isolation_harness.cc.
class Isolation : public ::testing::TestWithParam<Mode> {};

std::string mode_param_name(const ::testing::TestParamInfo<Mode>& p);

// ---------------------------------------------------------------- used by several sections

// The physical channel ids `v` owns, lowest first.
std::vector<uint32_t> owned_pchids(Vgpu& v);

// A host-class semaphore release of `payload` at `va`.
void semaphore_release(driver::PushBuffer& pb, uint64_t va, uint32_t payload);

// The attacker guest-physical address that would reach the victim's RAM
// at `offset` if the mediator only added the attacker's bus slot base.
uint64_t foreign_ram(Attack& a, uint64_t offset);

}  // namespace vgpu::mediator::isolation
