// SPDX-License-Identifier: GPL-2.0-or-later
// The isolation catalog (docs/isolation.md), page tables: rows 1-9. The
// attacker rewrites its own PTEs and PDEs (small and big pages, and
// through a BAR1 alias of a table page), its BAR1/BAR3 page tables and its
// BAR1 instance block to name the victim's memory; each entry is refused
// (a faulting shadow entry) and the attacker's access faults. The harness
// (victim, Attack, run_isolation) is tests/testing/isolation_harness.h.
#include <gtest/gtest.h>

#include "tests/testing/isolation_harness.h"

namespace vgpu::mediator::isolation {
namespace {

// ================================================================ page tables

// A PTE of the attacker's own buffer redirected at a victim sentinel; its
// fill over the buffer faults at the buffer's VA instead of writing.
void pte_outside_partition_faults(Attack& a, fmt::PageSize size, uint64_t bytes, uint64_t victim_gaddr) {
  driver::Buffer b = a.buffer(bytes);
  const uint64_t va = a.va(b);
  const uint64_t bad_before = a.counters().bad_entries;
  a.redirect(va, size, a.foreign(victim_gaddr));
  ASSERT_NO_FATAL_FAILURE(a.expect_fill_fails(b, bytes));
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
    ASSERT_NO_FATAL_FAILURE(a.expect_fill_fails(b, BIG_SENTINEL));
    a.expect_fault(regs::FaultUnit::pgraph, regs::FaultReason::page_not_present, va);
    EXPECT_GT(a.counters().bad_entries, bad_before);
  });
}

// Points one half of the PDE behind `b` (Target and Addr: its small- or
// big-page table) at `foreign_table`, then checks that the attacker's next
// work (a fill of `fill_bytes`) faults with page_not_present, that the
// mediator counted a bad entry, and that the shadow PDE names no table in
// that half: the foreign table was refused, not shadowed.
template <typename Target, typename Addr>
void expect_foreign_pde_table_refused(Attack& a, driver::Buffer b, uint64_t fill_bytes, uint64_t foreign_table) {
  const uint64_t va = a.va(b);
  const uint64_t bad_before = a.counters().bad_entries;
  const uint64_t at = GuestAttacker::pde_addr(a.pd(), va);
  const uint64_t pde = a.raw.vram64(at);
  ASSERT_EQ(Target::get(pde), uint64_t(fmt::PdeTarget::vram));
  a.raw.set_vram64(at, Addr::set(pde, foreign_table >> fmt::TABLE_ALIGN_SHIFT));
  a.raw.invalidate(a.pd());
  ASSERT_NO_FATAL_FAILURE(a.expect_fill_fails(b, fill_bytes));
  EXPECT_EQ(a.raw.chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::mmu_fault));
  a.expect_pending_fault(regs::FaultReason::page_not_present);
  EXPECT_GT(a.counters().bad_entries, bad_before);
  EXPECT_EQ(Target::get(a.shadow_pde(va)), uint64_t(fmt::PdeTarget::none))
      << "the mediator shadowed a page table outside the VM's VRAM";
}

// A PDE whose small-page table is the victim's page directory: the victim's
// tables would become the attacker's. The shadow PDE gets no table.
// Every mapping of this PDE (ring, push buffer, fence) is gone: the channel
// faults on its first fetch, whatever the work. The PDE keeps its big-page
// half, so the walk ends at the missing small-page entry. (GuestMemory's
// bounds would read the foreign table as empty, but the mediator must not
// take it as a table at all.)
TEST_P(Isolation, PdeSmallTableOutsidePartitionFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    expect_foreign_pde_table_refused<fmt::pde::SptTarget, fmt::pde::SptAddr>(a, a.buffer(SMALL_SENTINEL), 64,
                                                                             a.foreign(a.victim.pd));
  });
}

// A PDE whose big-page table is the victim's big sentinel. Every big page
// of this PDE is gone (the push buffer too): the first access to one
// faults, the small table under it has no entry.
TEST_P(Isolation, PdeBigTableOutsidePartitionFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    expect_foreign_pde_table_refused<fmt::pde::LptTarget, fmt::pde::LptAddr>(a, a.buffer(BIG_SENTINEL), BIG_SENTINEL,
                                                                             a.foreign(a.victim.big_gaddr));
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
    ASSERT_NO_FATAL_FAILURE(a.expect_fill_fails(b, SMALL_SENTINEL));
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

}  // namespace
}  // namespace vgpu::mediator::isolation
