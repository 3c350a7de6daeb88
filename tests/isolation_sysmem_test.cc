// SPDX-License-Identifier: GPL-2.0-or-later
// The isolation catalog (docs/isolation.md), system memory (DMA): rows
// 38-45. Sysmem PTEs and page-table targets outside the VM's RAM (just
// past it, in the victim's RAM, at the top of the bus, straddling its
// end), a copy crossing RAM's end, a semaphore release into the victim's
// RAM, and DMA racing the removal of the VM's RAM from the bus. Harness:
// tests/testing/isolation_harness.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "tests/testing/isolation_harness.h"

namespace vgpu::mediator::isolation {
namespace {

// ================================================================ system memory (DMA)
// The attacker pins pages of its own RAM (sysmem PTEs the mediator moves
// into its bus slot), then rewrites one of those PTEs (or a PDE) to name
// a guest-physical address outside its RAM. The mediator must leave a
// faulting entry and count it; the victim's RAM (run_isolation) and VRAM
// stay unchanged. foreign_ram (also used by PV-11) is in the harness.

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
  ASSERT_NO_FATAL_FAILURE(a.expect_fill_fails(b, SMALL_SENTINEL));
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
    ASSERT_NO_FATAL_FAILURE(a.expect_fill_fails(b, BIG_SENTINEL));
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
    ASSERT_NO_FATAL_FAILURE(a.expect_fill_fails(b, SMALL_SENTINEL));
    EXPECT_EQ(a.raw.chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::mmu_fault));
    ASSERT_NO_FATAL_FAILURE(
        a.expect_pending_fault_among({regs::FaultReason::pt_not_present, regs::FaultReason::page_not_present}));
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
    a.expect_release_faults(a.va(b), regs::FaultReason::page_not_present);
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
    a.expect_pending_fault_among({regs::FaultReason::dma_error, regs::FaultReason::page_not_present});
  });
}

}  // namespace
}  // namespace vgpu::mediator::isolation
