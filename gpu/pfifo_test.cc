// SPDX-License-Identifier: GPL-2.0-or-later
// Channel bring-up, GPFIFO submission with each push-buffer form, runlist
// gating, idle and non-stall events.
#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "common/launch_trace.h"
#include "gpu/testing/harness.h"
#include "vgpu/classes.h"

namespace vgpu::gpu {
namespace {

using namespace regs;
using namespace cls::host;
using fmt::mthd::Op;
using testing::Harness;

uint32_t legacy(Op op, uint32_t method, uint32_t count) {
  return fmt::mthd::Opcode::make(uint32_t(op)) | fmt::mthd::LegacyCount::make(count) |
         fmt::mthd::LegacyAddr::make(method >> 2);
}
constexpr uint32_t END_SEGMENT = fmt::mthd::Opcode::make(uint32_t(Op::end_segment));

struct OneChannel : ::testing::Test {
  Harness h;
  testing::Channel& c = h.add_channel(1);
  void SetUp() override { h.commit_runlist({1}); }
  uint32_t ref() { return h.userd(c, userd::REF); }
};

TEST_F(OneChannel, ImmediateSetReferenceReachesUserd) {
  h.submit(c, {fmt::mthd::immediate(0, SET_REFERENCE, 0x77)});
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(ref(), 0x77u);
  EXPECT_EQ(h.vram().read32(c.inst + ramfc::REF), 0x77u);
}

TEST_F(OneChannel, GpGetIsWrittenBackToUserdAndRamfc) {
  h.submit(c, {fmt::mthd::immediate(0, NOP, 0)});
  h.submit(c, {fmt::mthd::immediate(0, NOP, 0)});
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.userd(c, userd::GP_GET), 2u);
  EXPECT_EQ(h.vram().read32(c.inst + ramfc::GP_GET), 2u);
}

TEST_F(OneChannel, IncrementingFormReleasesSemaphore) {
  h.submit(c, testing::sem_release(c.va(testing::DATA_OFF), 0xabc, true));
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.vram().read32(c.phys(testing::DATA_OFF)), 0xabcu);
}

TEST_F(OneChannel, NonIncrementingFormSendsEveryWordToOneMethod) {
  h.submit(c, {fmt::mthd::non_inc(0, SET_REFERENCE, 3), 1, 2, 3});
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(ref(), 3u);
}

TEST_F(OneChannel, OneIncFormAdvancesOnce) {
  const uint64_t va = c.va(testing::DATA_OFF);
  h.submit(c,
           {fmt::mthd::inc(0, SEMAPHORE_A, 2), SemAHi::make(hi32(va)), lo32(va), fmt::mthd::one_inc(0, SEMAPHORE_C, 2),
            0x55, SemDOperation::make(uint32_t(SemOp::release)) | SemDReleaseSize4::mask});
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.vram().read32(c.phys(testing::DATA_OFF)), 0x55u);
}

TEST_F(OneChannel, LegacyIncrementingForm) {
  h.submit(c, {legacy(Op::legacy_inc, SET_REFERENCE, 1), 0x31});
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(ref(), 0x31u);
}

TEST_F(OneChannel, LegacyNonIncrementingForm) {
  h.submit(c, {legacy(Op::legacy_non_inc, SET_REFERENCE, 2), 0x41, 0x42});
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(ref(), 0x42u);
}

TEST_F(OneChannel, ZeroWordsAndSubdeviceMaskHeadersAreSkipped) {
  h.submit(c, {0, fmt::mthd::LegacyTert::make(1), 0, fmt::mthd::immediate(0, SET_REFERENCE, 9)});
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(ref(), 9u);
}

TEST_F(OneChannel, EndSegmentIgnoresTheRestOfTheSegment) {
  h.submit(c, {fmt::mthd::immediate(0, SET_REFERENCE, 1), END_SEGMENT, fmt::mthd::immediate(0, SET_REFERENCE, 2)});
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(ref(), 1u);
  EXPECT_EQ(h.userd(c, userd::GP_GET), 1u);
}

// Segments are fetched in windows of SEGMENT_WINDOW_WORDS: a command
// whose data crosses windows, and one after them, run as if fetched whole.
TEST_F(OneChannel, LongSegmentCrossingFetchWindowsRunsEveryWord) {
  const uint32_t n = Pfifo::SEGMENT_WINDOW_WORDS + 3000;
  std::vector<uint32_t> words{fmt::mthd::non_inc(0, SET_REFERENCE, n)};
  for (uint32_t i = 1; i <= n; ++i) words.push_back(i);
  ASSERT_EQ(ref(), 0u);
  words.push_back(fmt::mthd::immediate(0, NOP, 0));
  words.insert(words.end(), Pfifo::SEGMENT_WINDOW_WORDS, 0u);  // headers with no methods, into a third window
  words.push_back(fmt::mthd::non_inc(0, SET_REFERENCE, 1));
  words.push_back(0x5eed);
  h.submit(c, words);
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(ref(), 0x5eedu);
  EXPECT_EQ(h.chan_error(c.chid), 0u);
}

// A segment whose later window is not mapped faults when the fetch gets
// there, at the first unmapped word.
TEST_F(OneChannel, SegmentRunningPastTheMappingFaultsAtTheFirstUnmappedWord) {
  const uint64_t start = testing::CHAN_MEM_BYTES - 4 * KiB;  // the window's last page
  const uint64_t unmapped = c.va(testing::CHAN_MEM_BYTES);
  h.vram().write32(c.phys(start), fmt::mthd::immediate(0, SET_REFERENCE, 0x42));
  h.submit_entry(c, fmt::gp::make(c.va(start), Pfifo::SEGMENT_WINDOW_WORDS + 8));
  ASSERT_TRUE(h.wait_error(c.chid));
  EXPECT_EQ(pfifo::ChanErrorCode::get(h.chan_error(c.chid)), static_cast<uint32_t>(ChannelError::mmu_fault));
  EXPECT_EQ(join64(h.rd(pfifo::FAULT_VA_HI[uint32_t(FaultUnit::pfifo)]),
                   h.rd(pfifo::FAULT_VA_LO[uint32_t(FaultUnit::pfifo)])),
            unmapped);
}

TEST_F(OneChannel, ControlNopEntryIsConsumed) {
  h.submit_entry(c, fmt::gp::Entry{0, 0});
  h.submit(c, {fmt::mthd::immediate(0, SET_REFERENCE, 5)});
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(ref(), 5u);
  EXPECT_EQ(h.userd(c, userd::GP_GET), 2u);
  EXPECT_EQ(h.chan_error(1), 0u);
}

TEST_F(OneChannel, IdleEventCarriesTheBusyPeriod) {
  h.submit(c, {fmt::mthd::immediate(0, SET_REFERENCE, 1)});
  ASSERT_TRUE(h.idle());
  std::optional<ChannelEvent> idle;
  for (int i = 0; i < 1000 && !idle; ++i) {
    for (const auto& e : h.events())
      if (e.kind == ChannelEvent::Kind::idle) idle = e;
    if (!idle) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(idle.has_value());
  EXPECT_EQ(idle->chid, 1u);
  EXPECT_LE(idle->start_ns, idle->end_ns);
}

TEST_F(OneChannel, NonStallInterruptIsReportedPerChannel) {
  h.submit(c, {fmt::mthd::immediate(0, NON_STALL_INTERRUPT, 0)});
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.rd(pfifo::NONSTALL_PENDING[0]), 1u << 1);
  EXPECT_TRUE(h.rd(pfifo::INTR) & pfifo::IntrNonStall::mask);
  EXPECT_TRUE(testing::line_becomes(h.gpu(), true));
  bool seen = false;
  for (const auto& e : h.events()) seen |= e.kind == ChannelEvent::Kind::nonstall && e.chid == 1;
  EXPECT_TRUE(seen);
  h.wr(pfifo::NONSTALL_PENDING[0], 1u << 1);
  EXPECT_EQ(h.rd(pfifo::INTR) & pfifo::IntrNonStall::mask, 0u);
}

TEST_F(OneChannel, YieldDoesNotLoseWork) {
  h.submit(c, {fmt::mthd::immediate(0, YIELD, 0), fmt::mthd::immediate(0, SET_REFERENCE, 4)});
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(ref(), 4u);
}

TEST_F(OneChannel, MemOpInvalidateFlushesTheTlb) {
  const uint64_t before = h.gpu().mmu().stats().invalidates;
  h.submit(c, {fmt::mthd::inc(0, MEM_OP_A, 2), 0, MemOpBOperation::make(uint32_t(MemOp::mmu_tlb_invalidate))});
  ASSERT_TRUE(h.idle());
  EXPECT_GT(h.gpu().mmu().stats().invalidates, before);
}

TEST(Pfifo, ChannelOffTheRunlistDoesNotRun) {
  Harness h;
  auto& c = h.add_channel(2);
  h.commit_runlist({});
  h.submit(c, {fmt::mthd::immediate(0, SET_REFERENCE, 6)});
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(h.userd(c, userd::REF), 0u);
  h.commit_runlist({2});
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.userd(c, userd::REF), 6u);
}

TEST(Pfifo, ChannelNotRunnableWaits) {
  Harness h;
  auto& c = h.add_channel(2);
  h.wr(pfifo::CHAN_STATE[2], 0);
  h.commit_runlist({2});
  h.submit(c, {fmt::mthd::immediate(0, SET_REFERENCE, 6)});
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(h.userd(c, userd::REF), 0u);
  h.wr(pfifo::CHAN_STATE[2], pfifo::ChanStateRunnable::mask);
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.userd(c, userd::REF), 6u);
}

TEST(Pfifo, PfifoDisabledRunsNothing) {
  Harness h;
  auto& c = h.add_channel(2);
  h.commit_runlist({2});
  h.wr(pfifo::CTRL, 0);
  h.submit(c, {fmt::mthd::immediate(0, SET_REFERENCE, 6)});
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(h.userd(c, userd::REF), 0u);
  h.wr(pfifo::CTRL, pfifo::CtrlEnable::mask);
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.userd(c, userd::REF), 6u);
}

TEST(Pfifo, ManyChannelsAllComplete) {
  Harness h;
  std::vector<testing::Channel*> chans;
  std::vector<uint32_t> ids;
  for (uint32_t chid = 0; chid < 4; ++chid) {
    chans.push_back(&h.add_channel(chid * 7));
    ids.push_back(chid * 7);
  }
  h.commit_runlist(ids);
  for (int round = 0; round < 3; ++round)
    for (auto* c : chans)
      h.submit(*c, {fmt::mthd::immediate(0, SET_REFERENCE, c->chid + 100 * static_cast<uint32_t>(round))});
  ASSERT_TRUE(h.idle());
  for (auto* c : chans) EXPECT_EQ(h.userd(*c, userd::REF), c->chid + 200);
}

TEST(Pfifo, VirtualClockModelRunsChannels) {
  Harness h(ClockKind::virtual_time);
  auto& c = h.add_channel(0);
  h.commit_runlist({0});
  h.submit(c, testing::sem_release(c.va(testing::DATA_OFF), 3, false));
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.vram().read32(c.phys(testing::DATA_OFF)), 3u);
}

// The launch trace's pfifo_busy: marked at a ring that finds PFIFO's
// thread at work (here: inside the delivery of its idle event, whose
// handler rings again), not at rings that find it waiting for work.
TEST_F(OneChannel, LaunchTraceMarksPfifoBusyOnlyForRingsDuringItsWork) {
  const auto figures_of = [](LaunchPhase p) { return LaunchTrace::figures()[static_cast<size_t>(p)]; };
  LaunchTrace::reset();
  LaunchTrace::enable(true);
  std::atomic<bool> rang{false}, done{false};
  h.gpu().set_channel_event_handler([&](const ChannelEvent& e) {
    if (e.kind != ChannelEvent::Kind::idle || rang.exchange(true)) return;
    LaunchTrace::mark(LaunchPhase::api_entry);
    h.submit(c, {fmt::mthd::immediate(0, NOP, 0)});  // on PFIFO's thread, inside its delivery
    LaunchTrace::mark(LaunchPhase::doorbell);
    done = true;
  });
  h.submit(c, {fmt::mthd::immediate(0, NOP, 0)});
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!done && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  ASSERT_TRUE(done);
  ASSERT_TRUE(h.idle());
  LaunchTrace::mark(LaunchPhase::job_started);
  LaunchTrace::launch_waited();
  ASSERT_EQ(LaunchTrace::launches(), 1u);
  EXPECT_EQ(figures_of(LaunchPhase::doorbell_seen).samples, 1u);
  EXPECT_EQ(figures_of(LaunchPhase::pfifo_busy).samples, 1u);

  // Rings after PFIFO has run dry and waits (its poll, then its sleep):
  // not busy. A ring may land in the moment its 1 ms sleep ends, so five
  // rings and at most two marks.
  LaunchTrace::reset();
  constexpr int RINGS = 5;
  for (int i = 0; i < RINGS; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    LaunchTrace::mark(LaunchPhase::api_entry);
    h.submit(c, {fmt::mthd::immediate(0, NOP, 0)});
    LaunchTrace::mark(LaunchPhase::doorbell);
    ASSERT_TRUE(h.idle());
    LaunchTrace::mark(LaunchPhase::job_started);
    LaunchTrace::launch_waited();
  }
  EXPECT_EQ(LaunchTrace::launches(), uint64_t{RINGS});
  EXPECT_EQ(figures_of(LaunchPhase::doorbell_seen).samples, uint64_t{RINGS});
  EXPECT_LE(figures_of(LaunchPhase::pfifo_busy).samples, 2u);
  LaunchTrace::enable(false);
  LaunchTrace::reset();
}

// The launch trace's split of PFIFO's fetch -> engine job: a method that
// may start work marks launch_read (its words read, the operation begun)
// and launch_built (its object returned the engine work), in that order,
// after the fetch and before the engine takes the job.
TEST(Pfifo, LaunchTraceMarksAWorkMethodsReadAndBuildBetweenFetchAndJob) {
  const auto p50 = [](LaunchPhase p) { return LaunchTrace::figures()[static_cast<size_t>(p)]; };
  Harness h;
  auto& c = h.add_channel(2);
  h.commit_runlist({2});
  using namespace testing::copy_layout;
  LaunchTrace::reset();
  LaunchTrace::enable(true);
  LaunchTrace::mark(LaunchPhase::api_entry);
  h.submit(c, testing::copy_line(COPY_SUBCH, c.va(SRC_OFF), c.va(DST_OFF), BYTES, c.va(SEM_OFF), 1));
  LaunchTrace::mark(LaunchPhase::doorbell);
  ASSERT_TRUE(h.idle());
  LaunchTrace::launch_waited();
  LaunchTrace::enable(false);
  ASSERT_EQ(LaunchTrace::launches(), 1u);
  const LaunchPhase order[] = {LaunchPhase::gpfifo_fetch, LaunchPhase::launch_read, LaunchPhase::launch_built,
                               LaunchPhase::job_started};
  for (size_t i = 0; i < std::size(order); ++i) {
    ASSERT_EQ(p50(order[i]).samples, 1u) << LaunchTrace::name(order[i]);
    if (i > 0) {
      EXPECT_LE(p50(order[i - 1]).p50_us, p50(order[i]).p50_us) << LaunchTrace::name(order[i]);
    }
  }
  LaunchTrace::reset();
}

}  // namespace
}  // namespace vgpu::gpu
