// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's shadow channels against a fake physical side: binding, the
// runlist, doorbells, dispatch and teardown, with no host or GPU.
#include "channels/shadow_channels.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "shadow/testing/fixture.h"
#include "vgpu/formats.h"

namespace vgpu::mediator {
namespace {

using shadow::testing::Fixture;
namespace pf = regs::pfifo;

constexpr uint32_t CHANNELS = 4;
constexpr uint32_t PCHID_BASE = 40;
constexpr uint64_t INST = 0x10000, PD = 0x100000, USERD = 0x20000, RUNLIST = 0x30000;
constexpr uint64_t RING_VA = 0x1'0000'0000;
constexpr uint32_t LIMIT2 = 4;  // 16 entries

class FakePhysical final : public PhysicalChannels {
 public:
  explicit FakePhysical(Fixture& f) : userd_base_(f.reserved.alloc(regs::NUM_CHANNELS * regs::userd::SIZE).value()) {}
  void bind(uint32_t pchid, uint64_t inst) override { bound[pchid] = inst; }
  void unbind(uint32_t pchid) override {
    bound.erase(pchid);
    ++unbinds;
  }
  void set_runnable(uint32_t pchid, bool r) override { runnable[pchid] = r; }
  uint32_t state(uint32_t pchid) override {
    return (engine_busy.contains(pchid) ? pf::ChanStateEngineOutstanding::mask : 0) |
           (acquire_pending.contains(pchid) ? pf::ChanStateAcquirePending::mask : 0) |
           (slice_held.contains(pchid) ? pf::ChanStateSliceHeld::mask : 0);
  }
  void set_runlist(std::vector<uint32_t> p) override {
    runlist = std::move(p);
    ++commits;
  }
  uint64_t userd(uint32_t pchid) const override { return userd_base_ + uint64_t{pchid} * regs::userd::SIZE; }
  void ring(uint32_t pchid, uint32_t put) override { rung.emplace_back(pchid, put); }

  std::map<uint32_t, uint64_t> bound;
  std::map<uint32_t, bool> runnable;
  std::map<uint32_t, bool> engine_busy;
  std::map<uint32_t, bool> acquire_pending;
  std::set<uint32_t> slice_held;  // stopped at a slice boundary (ChanStateSliceHeld)
  std::vector<uint32_t> runlist;
  std::vector<std::pair<uint32_t, uint32_t>> rung;
  int unbinds = 0, commits = 0;

 private:
  uint64_t userd_base_;
};

struct Channels {
  Fixture f;
  VirtualRegisters regs;
  Counters counters;
  std::vector<std::string> errors;
  ShadowSpaces spaces{f.guest, f.reserved, f.counters, [](uint64_t) {},
                      [this](const std::string& e) { errors.push_back(e); }};
  FakePhysical physical{f};
  const bool entry_pieces;
  const bool sliced;
  ShadowChannels ch{ShadowChannels::Env{f.guest, *f.vram, f.reserved, spaces, regs, physical, counters,
                                        [this](const std::string& e) { errors.push_back(e); }, true, entry_pieces,
                                        sliced},
                    CHANNELS, PCHID_BASE};

  explicit Channels(bool pieces = false, bool sliced_launches = false) : entry_pieces(pieces), sliced(sliced_launches) {
    const auto wr = [&](uint32_t off, uint32_t v) { f.vram->write32(Fixture::PART_BASE + INST + off, v); };
    fmt::encode_address_space(fmt::AddressSpace{.pdb = PD, .limit = fmt::VA_LIMIT - 1}, wr);
    fmt::encode_ramfc(fmt::Ramfc{.gp_base = RING_VA, .limit2 = LIMIT2, .userd = USERD}, wr);
  }
  void bind(uint32_t c) { ch.write_inst(c, fmt::encode_chan_inst({.valid = true, .inst = INST})); }
  void list(std::vector<uint32_t> chids) {
    for (size_t i = 0; i < chids.size(); ++i)
      f.vram->write32(Fixture::PART_BASE + RUNLIST + i * regs::runlist::ENTRY_BYTES, chids[i]);
    regs.runlist_base = pf::RunlistAddr::make(RUNLIST >> pf::RUNLIST_SHIFT);
    ch.submit_runlist(static_cast<uint32_t>(chids.size()));
  }
  // The GPU finished channel c's entries up to `get`.
  void ran(uint32_t c, uint32_t get) { f.vram->write32(physical.userd(PCHID_BASE + c) + regs::userd::GP_GET, get); }
  void ready(uint32_t c) {
    bind(c);
    list({c});
    ch.write_state(c, pf::ChanStateRunnable::mask);
  }
  // Channel c's turn (submission 7) runs its entry 0, and the guest has
  // rung up to entry 4 meanwhile.
  void in_turn_with_more_rung(uint32_t c) {
    ready(c);
    ch.doorbell(c, 1);
    (void)ch.take_submits();
    ASSERT_EQ(ch.dispatch(c, 7), ShadowChannels::Dispatch::ran);
    ch.doorbell(c, 4);
  }
};

TEST(ShadowChannels, BindingGivesThePhysicalChannelAShadowInstanceBlock) {
  Channels t;
  t.bind(2);
  ASSERT_TRUE(t.ch.bound(2));
  ASSERT_TRUE(t.physical.bound.contains(PCHID_BASE + 2));
  const uint64_t shadow = t.physical.bound[PCHID_BASE + 2];
  EXPECT_TRUE(t.f.reserved.contains(shadow));
  const fmt::ChannelInstance c = fmt::decode_channel_instance(t.f.vram->reader(shadow));
  EXPECT_EQ(c.ramfc.userd, t.physical.userd(PCHID_BASE + 2)) << "the host's USERD, not the guest's";
  EXPECT_TRUE(t.f.reserved.contains(c.space.pdb)) << "the shadow directory";
  EXPECT_EQ(c.ramfc.gp_base, RING_VA);
  EXPECT_TRUE(t.ch.take_layout_changed());
}

TEST(ShadowChannels, ABadInstanceBlockIsAChannelErrorNamingIt) {
  Channels t;
  t.f.vram->write32(Fixture::PART_BASE + INST + regs::ramfc::SIGNATURE, 0);
  t.bind(1);
  EXPECT_FALSE(t.ch.bound(1));
  EXPECT_TRUE(t.regs.channel_errored(1));
  ASSERT_EQ(t.errors.size(), 1u);
  EXPECT_NE(t.errors[0].find("RAMFC signature"), std::string::npos) << t.errors[0];
  EXPECT_EQ(t.counters.faults.load(), 1u);
}

TEST(ShadowChannels, AChannelIdBeyondTheVmsIsATableError) {
  Channels t;
  t.ch.write_inst(CHANNELS, fmt::encode_chan_inst({.valid = true, .inst = INST}));
  t.ch.write_state(CHANNELS + 3, 1);
  EXPECT_EQ(t.errors.size(), 2u);
  EXPECT_TRUE(t.physical.bound.empty());
}

TEST(ShadowChannels, TheRunlistListsOnlyTheVmsBoundChannels) {
  Channels t;
  t.bind(0);
  t.bind(3);
  t.list({3, 0, CHANNELS, 200});
  EXPECT_EQ(t.physical.runlist, (std::vector<uint32_t>{PCHID_BASE, PCHID_BASE + 3}));
  EXPECT_EQ(t.errors.size(), 2u) << "two entries outside the VM's channels";
}

// A channel whose turn is on the GPU, taken off the VM's runlist: the GPU
// will neither run it nor report it idle, so its turn is over. (Found by
// the pushbuf fuzz target: that turn stayed in flight and every VM lost
// the GPU; docs/fuzzing.md.)
TEST(ShadowChannels, AChannelTakenOffTheRunlistInItsTurnEndsTheTurn) {
  Channels t;
  t.in_turn_with_more_rung(1);
  t.list({});
  EXPECT_EQ(t.ch.take_stopped(), (std::vector<std::pair<uint32_t, uint64_t>>{{1, 7}}));
  t.list({1});
  EXPECT_TRUE(t.ch.take_stopped().empty()) << "back on the runlist: no other turn is over";
}

// The same for a channel the guest makes unrunnable in its turn: the GPU
// stops picking it and reports nothing. (Found by the bar fuzz target:
// the victim's fill, and a fresh VM's first fence, waited behind that turn
// for ever; mediator/fuzz/findings/bar-*-stall.tar.gz.)
TEST(ShadowChannels, AChannelMadeUnrunnableInItsTurnEndsTheTurn) {
  Channels t;
  t.in_turn_with_more_rung(1);
  t.ch.write_state(1, 0);
  EXPECT_EQ(t.ch.take_stopped(), (std::vector<std::pair<uint32_t, uint64_t>>{{1, 7}}));
  t.ch.write_state(1, 0);
  EXPECT_TRUE(t.ch.take_stopped().empty()) << "already unrunnable: no other turn is over";
  t.ch.write_state(1, pf::ChanStateRunnable::mask);
  EXPECT_TRUE(t.ch.take_stopped().empty()) << "runnable again: no turn is over";
}

TEST(ShadowChannels, DoorbellsQueueOneSubmissionThatRunsToTheLatestPut) {
  Channels t;
  t.ready(1);
  t.ch.doorbell(1, 3);
  t.ch.doorbell(1, 5);
  t.ch.doorbell(1, 6);
  EXPECT_EQ(t.ch.take_submits(), (std::vector<uint32_t>{1}));
  EXPECT_EQ(t.ch.dispatch(1, 77), ShadowChannels::Dispatch::ran);
  ASSERT_EQ(t.physical.rung.size(), 1u);
  EXPECT_EQ(t.physical.rung[0], std::make_pair(PCHID_BASE + 1, 6u));
  t.ch.doorbell(1, 6);  // nothing new
  EXPECT_TRUE(t.ch.take_submits().empty());
  EXPECT_EQ(t.counters.doorbells.load(), 4u);
}

TEST(ShadowChannels, BoundedTurnsRingOneEntryAtATime) {
  Channels t(true);
  t.ready(1);
  t.ch.doorbell(1, 3);
  EXPECT_EQ(t.ch.take_submits(), (std::vector<uint32_t>{1}));
  ASSERT_EQ(t.ch.dispatch(1, 7), ShadowChannels::Dispatch::ran);
  EXPECT_EQ(t.ch.continue_turn(1), ShadowChannels::Dispatch::ran);
  EXPECT_EQ(t.ch.continue_turn(1), ShadowChannels::Dispatch::ran);
  EXPECT_EQ(t.ch.continue_turn(1), ShadowChannels::Dispatch::nothing) << "every entry rung";
  EXPECT_EQ(t.physical.rung, (std::vector<std::pair<uint32_t, uint32_t>>{{PCHID_BASE + 1, 1},
                                                                         {PCHID_BASE + 1, 2},
                                                                         {PCHID_BASE + 1, 3}}));
}

TEST(ShadowChannels, DoorbellsDuringATurnAreRequeuedAtItsEnd) {
  Channels t(true);
  t.in_turn_with_more_rung(1);
  EXPECT_TRUE(t.ch.take_submits().empty()) << "the turn's end queues it, behind whoever came meanwhile";
  t.ran(1, 1);
  t.ch.end_turn(1);
  EXPECT_EQ(t.ch.take_submits(), (std::vector<uint32_t>{1}));
  EXPECT_EQ(t.ch.continue_turn(1), ShadowChannels::Dispatch::nothing) << "the turn is over";
  ASSERT_EQ(t.ch.dispatch(1, 8), ShadowChannels::Dispatch::ran);
  EXPECT_EQ(t.physical.rung.back(), std::make_pair(PCHID_BASE + 1, 2u));
  t.ran(1, 2);
  t.ch.end_turn(1);
  t.ch.end_turn(1);
  EXPECT_EQ(t.ch.take_submits(), (std::vector<uint32_t>{1})) << "one queued submission, however many ends";
}

// The watchdog ends the turn of a channel parked in a semaphore acquire.
// Ringing its next entries at later turns would let them all run, outside
// the scheduler, the moment the acquire is satisfied.
TEST(ShadowChannels, NoPieceIsRungBehindAParkedOneUntilItHasRun) {
  Channels t(true);
  t.ready(1);
  t.ch.doorbell(1, 3);
  (void)t.ch.take_submits();
  ASSERT_EQ(t.ch.dispatch(1, 7), ShadowChannels::Dispatch::ran);  // entry 0 parks: the GPU's GP_GET stays 0
  t.ch.end_turn(1);
  EXPECT_TRUE(t.ch.take_submits().empty()) << "not requeued while its piece waits";
  EXPECT_EQ(t.ch.dispatch(1, 8), ShadowChannels::Dispatch::nothing)
      << "a stale submission rings nothing behind the parked piece";
  t.ch.piece_done(1);
  EXPECT_TRUE(t.ch.take_submits().empty()) << "the piece has not run yet";
  EXPECT_EQ(t.physical.rung.size(), 1u);
  t.ran(1, 1);  // the acquire was satisfied
  t.ch.piece_done(1);
  EXPECT_EQ(t.ch.take_submits(), (std::vector<uint32_t>{1})) << "the rest waits for the scheduler";
  ASSERT_EQ(t.ch.dispatch(1, 9), ShadowChannels::Dispatch::ran);
  EXPECT_EQ(t.physical.rung.back(), std::make_pair(PCHID_BASE + 1, 2u));
}

// The guest rang more while its turn's piece is on the GPU (the host
// decided the turn may go on: Turn::ring_ahead): the next entry is rung
// behind it, one at most.
TEST(ShadowChannels, RingingAheadRingsOneEntryBehindThePieceOnTheGpu) {
  Channels t(true);
  t.in_turn_with_more_rung(1);
  EXPECT_EQ(t.ch.take_rung_in_turn(), (std::vector<uint32_t>{1}));
  EXPECT_TRUE(t.ch.ring_ahead(1));
  EXPECT_EQ(t.physical.rung.back(), std::make_pair(PCHID_BASE + 1, 2u));
  EXPECT_FALSE(t.ch.ring_ahead(1)) << "two entries on the GPU: one is already ahead";
  t.ran(1, 1);
  EXPECT_TRUE(t.ch.piece_pending(1)) << "the entry rung ahead";
  EXPECT_TRUE(t.ch.ring_ahead(1));
  EXPECT_EQ(t.physical.rung.back(), std::make_pair(PCHID_BASE + 1, 3u));
  EXPECT_EQ(t.counters.rung_ahead.load(), 2u);
  t.ran(1, 3);
  EXPECT_FALSE(t.ch.piece_pending(1));
  // The piece ran and the host has not handled its end yet: the next one
  // goes now, and the host finds it pending.
  EXPECT_TRUE(t.ch.ring_ahead(1));
  EXPECT_EQ(t.physical.rung.back(), std::make_pair(PCHID_BASE + 1, 4u));
  EXPECT_TRUE(t.ch.piece_pending(1));
  t.ran(1, 4);
  EXPECT_FALSE(t.ch.ring_ahead(1)) << "nothing left to ring";
}

TEST(ShadowChannels, NothingIsRungAheadOutsideATurnBehindAParkedAcquireOrForSlicedLaunches) {
  Channels t(true);
  t.ready(1);
  t.ch.doorbell(1, 3);
  EXPECT_FALSE(t.ch.ring_ahead(1)) << "queued, not in its turn";
  (void)t.ch.take_submits();
  ASSERT_EQ(t.ch.dispatch(1, 7), ShadowChannels::Dispatch::ran);
  t.physical.acquire_pending[PCHID_BASE + 1] = true;
  EXPECT_FALSE(t.ch.ring_ahead(1)) << "its piece is parked in an acquire";
  t.physical.acquire_pending.clear();
  t.ran(1, 1);
  t.ch.end_turn(1);
  EXPECT_FALSE(t.ch.ring_ahead(1)) << "its turn is over";
  EXPECT_EQ(t.physical.rung.size(), 1u);

  Channels whole;  // unbounded turns: a turn already runs up to GP_PUT
  whole.ready(1);
  whole.ch.doorbell(1, 1);
  ASSERT_EQ(whole.ch.dispatch(1, 7), ShadowChannels::Dispatch::ran);
  whole.ch.doorbell(1, 2);
  EXPECT_FALSE(whole.ch.ring_ahead(1));

  Channels sliced(true, true);  // held at a slice boundary: the host decides
  sliced.ready(1);
  sliced.ch.doorbell(1, 1);
  ASSERT_EQ(sliced.ch.dispatch(1, 7), ShadowChannels::Dispatch::ran);
  sliced.ch.doorbell(1, 2);
  sliced.physical.slice_held.insert(PCHID_BASE + 1);
  EXPECT_FALSE(sliced.ch.ring_ahead(1));
  EXPECT_EQ(t.counters.rung_ahead.load() + whole.counters.rung_ahead.load() + sliced.counters.rung_ahead.load(), 0u);
  sliced.physical.slice_held.clear();  // a sliced VM's channel not held rings ahead as any other
  EXPECT_TRUE(sliced.ch.ring_ahead(1));
}

// A piece's end belongs to a turn only once that turn's submission was
// dispatched: before it, the end is the last turn's (a rung-ahead entry's
// end handled late, Turn::piece_ran).
TEST(ShadowChannels, ATurnIsTheChannelsOnlyFromItsDispatchToItsEnd) {
  Channels t(true);
  t.ready(1);
  t.ch.doorbell(1, 1);
  EXPECT_FALSE(t.ch.in_turn_of(1, 7)) << "queued, not dispatched";
  (void)t.ch.take_submits();
  ASSERT_EQ(t.ch.dispatch(1, 7), ShadowChannels::Dispatch::ran);
  EXPECT_TRUE(t.ch.in_turn_of(1, 7));
  EXPECT_FALSE(t.ch.in_turn_of(1, 8)) << "another submission";
  EXPECT_FALSE(t.ch.in_turn_of(0, 7)) << "another channel";
  EXPECT_FALSE(t.ch.in_turn_of(t.ch.count(), 7)) << "no such channel";
  t.ran(1, 1);
  t.ch.doorbell(1, 2);
  t.ch.end_turn(1);
  EXPECT_FALSE(t.ch.in_turn_of(1, 7)) << "its turn is over";
  EXPECT_EQ(t.ch.take_submits(), (std::vector<uint32_t>{1}));
  EXPECT_FALSE(t.ch.in_turn_of(1, 8)) << "the next submission is queued, not dispatched";
  ASSERT_EQ(t.ch.dispatch(1, 8), ShadowChannels::Dispatch::ran);
  EXPECT_TRUE(t.ch.in_turn_of(1, 8));
}

TEST(ShadowChannels, DispatchOfAChannelThatCannotRunRingsNothing) {
  Channels t;
  t.bind(0);  // not listed, not runnable
  t.ch.doorbell(0, 2);
  EXPECT_EQ(t.ch.dispatch(0, 1), ShadowChannels::Dispatch::nothing);
  t.ready(2);
  t.ch.doorbell(2, 1u << LIMIT2);  // beyond the 16-entry ring
  EXPECT_EQ(t.ch.dispatch(2, 2), ShadowChannels::Dispatch::nothing);
  EXPECT_TRUE(t.regs.channel_errored(2));
  EXPECT_TRUE(t.physical.rung.empty());
}

TEST(ShadowChannels, UnbindingAChannelThatRanEndsItsSubmissionsTurn) {
  Channels t;
  t.ready(1);
  t.ch.doorbell(1, 2);
  ASSERT_EQ(t.ch.dispatch(1, 9), ShadowChannels::Dispatch::ran);
  t.ch.write_inst(1, 0);
  EXPECT_FALSE(t.ch.bound(1));
  EXPECT_EQ(t.ch.take_stopped(), (std::vector<std::pair<uint32_t, uint64_t>>{{1, 9}}));
  EXPECT_TRUE(t.physical.runlist.empty());
  t.bind(1);
  t.ch.write_inst(1, 0);
  EXPECT_TRUE(t.ch.take_stopped().empty()) << "nothing ran since the bind";
}

TEST(ShadowChannels, ShadowsOfAChannelWithEngineWorkOutstandingLiveUntilItEnds) {
  Channels t;
  t.bind(1);
  const uint64_t used = t.f.reserved.used();
  t.physical.engine_busy[PCHID_BASE + 1] = true;
  t.ch.write_inst(1, 0);
  EXPECT_EQ(t.f.reserved.used(), used) << "freed under running engine work";
  t.physical.engine_busy.clear();
  t.bind(2);  // a bind reaps what has ended
  t.ch.write_inst(2, 0);
  EXPECT_LT(t.f.reserved.used(), used);
}

TEST(ShadowChannels, ResetUnbindsEverythingAndEmptiesTheRunlist) {
  Channels t;
  t.ready(0);
  t.ready(3);
  t.ch.doorbell(3, 1);
  t.ch.reset();
  EXPECT_TRUE(t.physical.bound.empty());
  EXPECT_TRUE(t.physical.runlist.empty());
  EXPECT_TRUE(t.ch.take_submits().empty()) << "a submission not handed on is dropped";
  t.ready(3);
  t.ch.doorbell(3, 1);
  EXPECT_EQ(t.ch.take_submits(), (std::vector<uint32_t>{3})) << "and may be queued again";
}

}  // namespace
}  // namespace vgpu::mediator
