// SPDX-License-Identifier: GPL-2.0-or-later
// The isolation catalog (docs/isolation.md), engines and host resources:
// rows 16-23 and 32. Copy-engine transfers to and from unmapped or
// foreign VAs, a compute kernel over a huge aliased range (refused
// without host memory), semaphore releases to foreign or unmapped VAs and
// an acquire that never succeeds (the victim keeps running), and raw
// GPFIFO entries and GP_PUT values out of range. Harness:
// tests/testing/isolation_harness.h.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "common/text.h"
#include "driver/compute.h"
#include "driver/copy_engine.h"
#include "tests/testing/isolation_harness.h"

namespace vgpu::mediator::isolation {
namespace {

// ================================================================ engines

constexpr uint64_t UNMAPPED_VA = uint64_t{1} << 38;  // never mapped by the driver

// Copy-engine writes to a VA nothing maps.
TEST_P(Isolation, CopyToUnmappedVaFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Buffer src = a.buffer(fmt::SMALL_PAGE);
    driver::PushBuffer pb;
    driver::emit_copy(pb, UNMAPPED_VA, a.va(src), fmt::SMALL_PAGE);
    a.submit(pb);
    a.expect_chan_error(regs::ChannelError::mmu_fault);
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
    ASSERT_NO_FATAL_FAILURE(a.expect_stops(f, regs::ChannelError::mmu_fault));
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
    a.expect_chan_error(regs::ChannelError::bad_argument);
    EXPECT_EQ(a.chan_error_addr(), ALIAS_VA);
  });
}

// A semaphore release through a PTE naming the victim's sentinel.
TEST_P(Isolation, SemaphoreReleaseToForeignAddressFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    a.expect_release_faults(a.va_onto_victim_sentinel(), regs::FaultReason::page_not_present);
  });
}

// A semaphore release to a VA nothing maps.
TEST_P(Isolation, SemaphoreReleaseToUnmappedVaFaults) {
  run_isolation(GetParam(), [](Attack& a) { a.expect_release_faults(UNMAPPED_VA, regs::FaultReason::pt_not_present); });
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
    a.expect_chan_error(regs::ChannelError::gpentry_invalid);
    EXPECT_EQ(a.chan_error_addr(), va);
  });
}

// A GPFIFO entry whose push buffer is the victim's sentinel, through a PTE.
TEST_P(Isolation, GpfifoEntryThroughForeignPteFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    const uint64_t va = a.va_onto_victim_sentinel();
    raw_gp_entry(a, va, 16);
    a.expect_chan_error(regs::ChannelError::mmu_fault);
    a.expect_fault(regs::FaultUnit::pfifo, regs::FaultReason::page_not_present, va);
  });
}

// GP_PUT past the end of the ring.
TEST_P(Isolation, GpPutBeyondRingIsInvalid) {
  run_isolation(GetParam(), [](Attack& a) {
    const uint32_t entries = a.vm.device.options().channel.gpfifo_entries;
    a.raw.doorbell(a.chid(), entries + 3);
    a.expect_chan_error(regs::ChannelError::gpentry_invalid);
    EXPECT_TRUE(a.logged(strfmt("beyond its %u-entry ring", entries)));
  });
}

}  // namespace
}  // namespace vgpu::mediator::isolation
