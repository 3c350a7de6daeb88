// SPDX-License-Identifier: GPL-2.0-or-later
// BAR0 register blocks of the model: PMC, PBUS/PRAMIN, VRAM size, MMU
// control, PFIFO globals, and the interrupt line.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "gpu/testing/harness.h"

namespace vgpu::gpu {
namespace {

using namespace regs;
using testing::Harness;

std::unique_ptr<GpuModel> bare_model() {
  auto g = GpuModel::create(GpuConfig{testing::VRAM_BYTES, ClockKind::virtual_time});
  EXPECT_TRUE(g.has_value());
  return std::move(*g);
}

TEST(PmcRegisters, Boot0ReportsGf100AndIgnoresWrites) {
  auto g = bare_model();
  EXPECT_EQ(g->read32(pmc::BOOT_0.offset), pmc::BOOT_0_VALUE);
  EXPECT_EQ(pmc::Boot0Chipset::get(g->read32(pmc::BOOT_0.offset)), CHIPSET_GF100);
  g->write32(pmc::BOOT_0.offset, 0);
  EXPECT_EQ(g->read32(pmc::BOOT_0.offset), pmc::BOOT_0_VALUE);
}

TEST(PmcRegisters, Boot1StaysLittleEndian) {
  auto g = bare_model();
  g->write32(pmc::BOOT_1.offset, 0x01000001);
  EXPECT_EQ(g->read32(pmc::BOOT_1.offset), 0u);
}

TEST(PmcRegisters, EnableKeepsImplementedUnitBits) {
  auto g = bare_model();
  g->write32(pmc::ENABLE.offset, ~0u);
  EXPECT_EQ(g->read32(pmc::ENABLE.offset), pmc::enable::ALL);
}

TEST(PmcRegisters, PbdmaEnableProbeCountsThree) {
  auto g = bare_model();
  g->write32(pmc::PBDMA_ENABLE.offset, ~0u);
  EXPECT_EQ(std::popcount(g->read32(pmc::PBDMA_ENABLE.offset)), static_cast<int>(NUM_PBDMA));
}

TEST(PmcRegisters, UnknownOffsetReadsBadRegisterAndIsCounted) {
  auto g = bare_model();
  EXPECT_EQ(g->read32(0x00bffc), BAD_REGISTER);
  g->write32(0x00bffc, 1);
  EXPECT_EQ(g->register_stats().bad_reads, 1u);
  EXPECT_EQ(g->register_stats().bad_writes, 1u);
}

TEST(PmcRegisters, UnitsInResetReadBadDisabledUnit) {
  auto g = bare_model();
  EXPECT_EQ(g->read32(pfifo::CTRL.offset), BAD_DISABLED_UNIT);
  EXPECT_EQ(g->read32(ptimer::TIME_0.offset), BAD_DISABLED_UNIT);
  g->write32(pmc::ENABLE.offset, pmc::enable::Pfifo::mask);
  EXPECT_EQ(g->read32(pfifo::CTRL.offset), 0u);
  EXPECT_EQ(g->read32(ptimer::TIME_0.offset), BAD_DISABLED_UNIT);
}

TEST(PmcRegisters, ClearingPfifoEnableResetsChannelTable) {
  Harness h;
  h.add_channel(3);
  ASSERT_NE(h.rd(pfifo::CHAN_INST[3]), 0u);
  h.wr(pmc::ENABLE, pmc::enable::ALL & ~pmc::enable::Pfifo::mask);
  h.wr(pmc::ENABLE, pmc::enable::ALL);
  EXPECT_EQ(h.rd(pfifo::CHAN_INST[3]), 0u);
  EXPECT_EQ(h.rd(pfifo::CHAN_STATE[3]), 0u);
  EXPECT_EQ(h.rd(pfifo::CTRL), 0u);
}

// The mediator reads CHAN_STATE on every dispatch through channel_state,
// which skips read32's clock poll and delivery: the same value in every
// state, the unit's gate included.
TEST(PfifoRegisters, ChannelStateReadsWhatRead32Gives) {
  Harness h;
  h.add_channel(3);
  const auto same = [&](uint32_t chid) {
    EXPECT_EQ(h.gpu().channel_state(chid), h.gpu().read32(pfifo::CHAN_STATE[chid].offset));
  };
  same(3);
  EXPECT_TRUE(pfifo::ChanStateRunnable::get(h.gpu().channel_state(3)));
  h.wr(pfifo::CHAN_STATE[3], 0);
  same(3);
  EXPECT_EQ(h.gpu().channel_state(3), 0u);
  same(4);  // never bound
  h.wr(pmc::ENABLE, pmc::enable::ALL & ~pmc::enable::Pfifo::mask);
  same(3);
  EXPECT_EQ(h.gpu().channel_state(NUM_CHANNELS), BAD_REGISTER);
  Gpu& base = h.gpu();  // the interface's own reading, for a GPU without a faster one
  EXPECT_EQ(base.Gpu::channel_state(3), h.gpu().read32(pfifo::CHAN_STATE[3].offset));
  EXPECT_EQ(base.Gpu::channel_state(NUM_CHANNELS), BAD_REGISTER);
}

TEST(PbusRegisters, PraminWindowMapsVram) {
  auto g = bare_model();
  const uint64_t addr = 0x1230000;
  g->write32(pbus::PRAMIN_WINDOW.offset,
             pbus::PraminBase::make(static_cast<uint32_t>(addr >> pbus::PRAMIN_BASE_SHIFT)));
  g->write32(pramin::BASE + 0x84, 0xcafe0001);
  EXPECT_EQ(g->vram().read32(addr + 0x84), 0xcafe0001u);
  (void)g->vram().write32(addr + 0xffffc, 0x5a5a5a5a);
  EXPECT_EQ(g->read32(pramin::BASE + 0xffffc), 0x5a5a5a5au);
}

TEST(PbusRegisters, PraminBeyondVramReadsAllOnes) {
  auto g = bare_model();
  g->write32(pbus::PRAMIN_WINDOW.offset,
             pbus::PraminBase::make(static_cast<uint32_t>((1 * GiB) >> pbus::PRAMIN_BASE_SHIFT)));
  EXPECT_EQ(g->read32(pramin::BASE), ~0u);
}

TEST(PbusRegisters, IntrIsWriteOneToClear) {
  Harness h;
  h.gpu().bar_read32(Bar::bar1, 0);  // unmapped: MMIO fault
  ASSERT_TRUE(h.rd(pbus::INTR) & pbus::IntrMmioFault::mask);
  h.wr(pbus::INTR, 0);
  EXPECT_TRUE(h.rd(pbus::INTR) & pbus::IntrMmioFault::mask);
  h.wr(pbus::INTR, pbus::IntrMmioFault::mask);
  EXPECT_EQ(h.rd(pbus::INTR), 0u);
}

TEST(PbusRegisters, FlushNeverReadsPending) {
  auto g = bare_model();
  g->write32(pflush::FLUSH.offset, pflush::FlushTrigger::mask);
  EXPECT_EQ(pflush::FlushPending::get(g->read32(pflush::FLUSH.offset)), 0u);
}

TEST(FbRegisters, VramSizeDiscovery) {
  auto g = bare_model();
  EXPECT_EQ(g->read32(punits::FBP_COUNT.offset), 1u);
  EXPECT_EQ(g->read32(punits::FBP_DISABLED_MASK.offset), 0u);
  EXPECT_EQ(g->read32(pfb::FBPA_MIB[0].offset), testing::VRAM_BYTES / MiB);
}

TEST(FbRegisters, MmuCtrlHasFreeSlotsAndDone) {
  auto g = bare_model();
  const uint32_t ctrl = g->read32(mmu::CTRL.offset);
  EXPECT_NE(mmu::CtrlFreeSlots::get(ctrl), 0u);
  EXPECT_TRUE(mmu::CtrlInvalidateDone::get(ctrl));
  EXPECT_FALSE(mmu::CtrlBigPage64K::get(ctrl));
}

TEST(FbRegisters, InvalidateFlushesTlbAndBumpsBarGeneration) {
  auto g = bare_model();
  const uint64_t gen = g->bar_generation();
  const uint64_t before = g->mmu().stats().invalidates;
  g->write32(mmu::INVALIDATE_PDB.offset, mmu::InvalidatePdbAddr::make(0x400));
  g->write32(mmu::INVALIDATE.offset, mmu::InvalidateTrigger::mask | mmu::InvalidatePageAll::mask);
  EXPECT_GT(g->mmu().stats().invalidates, before);
  EXPECT_NE(g->bar_generation(), gen);
  EXPECT_EQ(g->read32(mmu::INVALIDATE.offset), 0u);  // write-only
}

TEST(FbRegisters, InvalidateWithoutTriggerDoesNothing) {
  auto g = bare_model();
  const uint64_t gen = g->bar_generation();
  g->write32(mmu::INVALIDATE.offset, mmu::InvalidateAllPdb::mask);
  EXPECT_EQ(g->bar_generation(), gen);
}

TEST(PfifoRegisters, RunlistSubmitCompletesWithInterrupt) {
  Harness h;
  h.commit_runlist({1, 2});
  EXPECT_EQ(pfifo::RunlistPending::get(h.rd(pfifo::RUNLIST_STATUS)), 0u);
  EXPECT_TRUE(h.rd(pfifo::RUNLIST_INTR) & pfifo::RunlistIntrDone::mask);
  EXPECT_TRUE(h.rd(pfifo::INTR) & pfifo::IntrRunlist::mask);
  EXPECT_TRUE(h.rd(pmc::INTR_0) & pmc::intr::Pfifo::mask);
  h.wr(pfifo::RUNLIST_INTR, pfifo::RunlistIntrDone::mask);
  h.wr(pfifo::INTR, pfifo::IntrRunlist::mask);
  EXPECT_EQ(h.rd(pfifo::INTR), 0u);
  EXPECT_EQ(h.rd(pmc::INTR_0), 0u);
}

TEST(PfifoRegisters, RunlistEntryWithBadChidIsATableError) {
  Harness h;
  h.commit_runlist({1, NUM_CHANNELS + 5});
  EXPECT_EQ(h.rd(pfifo::CHAN_TABLE_ERROR), uint32_t(pfifo::ChanTableError::invalid_chid));
  EXPECT_TRUE(h.rd(pfifo::INTR) & pfifo::IntrChanTableError::mask);
}

TEST(PfifoRegisters, ChanStateKeepsRunnableAndEngine) {
  Harness h;
  h.wr(pfifo::CHAN_STATE[7], ~0u);
  EXPECT_EQ(h.rd(pfifo::CHAN_STATE[7]), pfifo::ChanStateRunnable::mask | pfifo::ChanStateEngine::mask);
}

TEST(PfifoRegisters, PreemptCompletesAtOnce) {
  Harness h;
  h.wr(pfifo::PREEMPT, 9);
  EXPECT_EQ(pfifo::PreemptPending::get(h.rd(pfifo::PREEMPT)), 0u);
  EXPECT_EQ(pfifo::PreemptChid::get(h.rd(pfifo::PREEMPT)), 9u);
}

TEST(PfifoRegisters, ErrorRecordsAreReadOnly) {
  Harness h;
  h.wr(pfifo::CHAN_ERROR_METHOD[2], 5);
  EXPECT_EQ(h.rd(pfifo::CHAN_ERROR_METHOD[2]), 0u);
  h.wr(pfifo::FAULT_VA_LO[4], 5);
  EXPECT_EQ(h.rd(pfifo::FAULT_VA_LO[4]), 0u);
}

TEST(Interrupts, LineFollowsEnableAndMask) {
  Harness h;
  h.commit_runlist({});
  EXPECT_TRUE(testing::line_becomes(h.gpu(), true));
  h.wr(pmc::INTR_MASK_0, 0);
  EXPECT_TRUE(testing::line_becomes(h.gpu(), false));
  h.wr(pmc::INTR_MASK_0, pmc::intr::Pfifo::mask);
  EXPECT_TRUE(testing::line_becomes(h.gpu(), true));
  h.wr(pmc::INTR_EN_0, 0);
  EXPECT_TRUE(testing::line_becomes(h.gpu(), false));
  EXPECT_GE(h.interrupt_edges(), 4);
}

// Writes that change no interrupt input skip the line's update (write32):
// the line, its edges and its messages stay as they were, and the next
// write that does change one is delivered.
TEST(Interrupts, WritesThatChangeNoInterruptInputLeaveTheLineAndItsMessages) {
  Harness h;
  h.commit_runlist({});
  ASSERT_TRUE(testing::line_becomes(h.gpu(), true));
  const int edges = h.interrupt_edges();
  const uint64_t messages = h.gpu().interrupt_messages();
  h.wr(pfifo::INTR, 0);                                     // acknowledges nothing
  h.wr(pfifo::NONSTALL_PENDING[0], ~0u);                    // nothing pending
  h.wr(pmc::INTR_MASK_0, h.rd(pmc::INTR_MASK_0));           // the same mask
  h.wr(pfifo::RUNLIST_INTR, pfifo::RunlistIntrDone::mask);  // not an input of the line
  EXPECT_TRUE(h.gpu().interrupt_asserted());
  EXPECT_EQ(h.interrupt_edges(), edges);
  EXPECT_EQ(h.gpu().interrupt_messages(), messages);
  h.wr(pfifo::INTR, pfifo::IntrRunlist::mask);
  EXPECT_FALSE(h.gpu().interrupt_asserted());
  EXPECT_EQ(h.interrupt_edges(), edges + 1);
  h.commit_runlist({});
  EXPECT_TRUE(h.gpu().interrupt_asserted());
  EXPECT_EQ(h.interrupt_edges(), edges + 2);
  EXPECT_GT(h.gpu().interrupt_messages(), messages);
}

TEST(Interrupts, PfifoIntrEnGatesThePmcBit) {
  Harness h;
  h.wr(pfifo::INTR_EN, 0);
  h.commit_runlist({});
  EXPECT_TRUE(h.rd(pfifo::INTR) & pfifo::IntrRunlist::mask);
  EXPECT_EQ(h.rd(pmc::INTR_0) & pmc::intr::Pfifo::mask, 0u);
  EXPECT_FALSE(h.gpu().interrupt_asserted());
}

}  // namespace
}  // namespace vgpu::gpu

namespace vgpu::gpu::testing {
namespace {

bool eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!done())
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  return true;
}

TEST(Interrupts, EachNonStallInterruptSendsAMessageWhileTheLineStaysHigh) {
  Harness h;
  std::atomic<int> nonstall{0}, error{0};
  h.gpu().set_message_handler(
      [&](regs::pci::MsiVector v) { ++(v == regs::pci::MsiVector::nonstall ? nonstall : error); });
  Channel& c = h.add_channel(1);
  h.commit_runlist({1});
  for (int i = 0; i < 3; ++i) {
    h.submit(c, {fmt::mthd::non_inc(0, cls::host::NON_STALL_INTERRUPT, 1), 0});
    // Never acknowledged, yet one message each.
    ASSERT_TRUE(eventually([&] { return nonstall.load() == i + 1; })) << nonstall.load();
  }
  EXPECT_TRUE(h.gpu().interrupt_asserted());
  EXPECT_EQ(error.load(), 1);     // the line's one rising edge
  h.wr(regs::pfifo::INTR_EN, 0);  // not enabled: no message
  h.submit(c, {fmt::mthd::non_inc(0, cls::host::NON_STALL_INTERRUPT, 1), 0});
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(nonstall.load(), 3);
  h.gpu().set_message_handler(nullptr);
}

}  // namespace
}  // namespace vgpu::gpu::testing
