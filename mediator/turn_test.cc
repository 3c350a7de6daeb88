// SPDX-License-Identifier: GPL-2.0-or-later
// A turn with its collaborators and no Host: a FIFO dispatcher on a
// virtual clock, fake channels for each VM, the turn between them. Each
// test drives the GPU's reports by hand (piece_ran) and checks what the
// turn decided: another piece, a hold, an entry rung ahead, an end and
// what it was charged.
#include "mediator/turn.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "common/clock.h"

namespace vgpu::mediator {
namespace {

constexpr uint64_t MS = 1'000'000;
constexpr uint64_t TURN_NS = 10 * MS;
constexpr uint64_t HOLD_NS = 1 * MS;
constexpr uint32_t VM_A = 1, VM_B = 2;
constexpr uint32_t CH = 0;

// One VM's channels: `pieces` entries the channel can still run, and
// what the turn asked of it.
struct FakeChannels final : TurnChannels {
  uint32_t pieces = 0;
  bool in_turn = false;
  uint64_t seq = 0;
  uint32_t rung = 0, rung_ahead = 0, ended = 0, done = 0;
  uint32_t host_work = 0;  // dispatches whose host work runs out of the budget
  std::vector<uint64_t> budgets;
  // Where the VMs' dispatches are logged, in order (if set), and what
  // end_turn does besides (the real channels queue what they have left).
  std::vector<uint32_t>* dispatches = nullptr;
  uint32_t id = 0;
  std::function<void()> on_end;

  bool run() {
    if (pieces == 0) return false;
    --pieces;
    ++rung;
    return true;
  }
  Dispatch dispatch(uint32_t, uint64_t s, uint64_t budget_ns) override {
    budgets.push_back(budget_ns);
    if (dispatches) dispatches->push_back(id);
    seq = s;
    if (host_work > 0) {
      --host_work;
      return Dispatch::host_work_left;
    }
    in_turn = run();
    return in_turn ? Dispatch::ran : Dispatch::nothing;
  }
  Dispatch continue_turn(uint32_t, uint64_t budget_ns) override {
    budgets.push_back(budget_ns);
    return in_turn && run() ? Dispatch::ran : Dispatch::nothing;
  }
  bool ring_ahead(uint32_t, uint64_t) override {
    ++rung_ahead;
    return run();
  }
  bool piece_pending(uint32_t) const override { return false; }
  bool in_turn_of(uint32_t, uint64_t s) const override { return in_turn && seq == s; }
  void end_turn(uint32_t) override {
    in_turn = false;
    ++ended;
    if (on_end) on_end();
  }
  void piece_done(uint32_t) override { ++done; }
};

struct TurnTest : ::testing::Test {
  VirtualClock clock;
  std::map<uint32_t, std::shared_ptr<FakeChannels>> vms{{VM_A, std::make_shared<FakeChannels>()},
                                                        {VM_B, std::make_shared<FakeChannels>()}};
  std::vector<TurnEvent> events;
  uint32_t watchdog_wakes = 0;
  std::unique_ptr<Turn> turn;
  std::unique_ptr<sched::Dispatcher> dispatcher;

  void make(bool real_clock, bool ring_ahead = true) {
    turn = std::make_unique<Turn>(
        Turn::Config{.turn_ns = TURN_NS,
                     .hold_ns = HOLD_NS,
                     .ring_ahead = ring_ahead,
                     .real_clock = real_clock,
                     .on_turn = [this](const TurnEvent& e) { events.push_back(e); }},
        Turn::Deps{.find = [this](uint32_t vm) -> std::shared_ptr<TurnChannels> { return vms.at(vm); },
                   .now_ns = [this] { return clock.now_ns(); },
                   .wake_watchdog = [this] { ++watchdog_wakes; },
                   .internal_failure = [](const char* doing, const char* what) { ADD_FAILURE() << doing << what; }});
    dispatcher = std::make_unique<sched::Dispatcher>(std::move(*sched::make_policy("fifo")), clock, *turn);
    turn->attach(*dispatcher);
    ASSERT_TRUE(dispatcher->add_vm(VM_A, 1));
    ASSERT_TRUE(dispatcher->add_vm(VM_B, 1));
  }
  FakeChannels& vm(uint32_t id) { return *vms.at(id); }
  // The GPU reports that VM `id`'s piece ran from start_ns to end_ns.
  void piece_ran(uint32_t id, uint64_t start_ns, uint64_t end_ns, bool at_slice = false) {
    clock.advance_to(end_ns);
    turn->piece_ran(vm(id), id, CH, start_ns, end_ns, at_slice);
  }
};

TEST_F(TurnTest, GoesOnPieceByPieceAndEndsAtItsSliceChargingTheWholeTurn) {
  make(false);
  vm(VM_A).pieces = 5;
  ASSERT_TRUE(dispatcher->submit(VM_A, CH));
  EXPECT_EQ(vm(VM_A).rung, 1u);
  piece_ran(VM_A, 0, 4 * MS);  // time left: the next piece
  EXPECT_EQ(vm(VM_A).rung, 2u);
  piece_ran(VM_A, 4 * MS, 11 * MS);  // past the 10 ms slice: the turn ends with work left
  EXPECT_EQ(vm(VM_A).rung, 2u);
  EXPECT_EQ(vm(VM_A).ended, 1u);
  EXPECT_EQ(turn->counts().out_of_time, 1u);
  EXPECT_EQ(dispatcher->gpu_ns(VM_A), 11 * MS);  // from its first piece's start
  ASSERT_EQ(events.size(), 2u);
  EXPECT_TRUE(events[0].start);
  EXPECT_EQ(events[1].end, TurnEnd::out_of_time);
  EXPECT_EQ(events[1].gpu_ns, 11 * MS);
}

TEST_F(TurnTest, AChannelThatRunsDryWithNoOneWaitingEndsAtOnce) {
  make(true);
  vm(VM_A).pieces = 1;
  ASSERT_TRUE(dispatcher->submit(VM_A, CH));
  piece_ran(VM_A, 0, 1 * MS);
  EXPECT_EQ(turn->counts().dry, 1u);
  EXPECT_FALSE(turn->hold_deadline_ns());
  EXPECT_FALSE(dispatcher->busy());
}

TEST_F(TurnTest, ADryTurnIsHeldWhileAnotherVmWaitsAndGoesOnWithTheVmsNextLaunch) {
  make(true);
  vm(VM_A).pieces = 1;
  ASSERT_TRUE(dispatcher->submit(VM_A, CH));
  ASSERT_TRUE(dispatcher->submit(VM_B, CH));  // B waits behind A's turn
  piece_ran(VM_A, 0, 1 * MS);
  ASSERT_TRUE(turn->hold_deadline_ns());
  EXPECT_EQ(*turn->hold_deadline_ns(), 2 * MS);  // the piece's end plus the hold
  EXPECT_EQ(watchdog_wakes, 1u);
  vm(VM_A).pieces = 1;  // A launches again
  turn->rung_in_turn(VM_A, CH);
  EXPECT_EQ(turn->counts().holds_kept, 1u);
  EXPECT_EQ(vm(VM_A).rung, 2u);
  EXPECT_EQ(vm(VM_B).rung, 0u);  // still A's turn
}

TEST_F(TurnTest, AHeldTurnEndsWhenItsHoldRunsOutAndTheWaitingVmGoes) {
  make(true);
  vm(VM_A).pieces = 1;
  vm(VM_B).pieces = 1;
  ASSERT_TRUE(dispatcher->submit(VM_A, CH));
  ASSERT_TRUE(dispatcher->submit(VM_B, CH));
  piece_ran(VM_A, 0, 1 * MS);
  turn->check_held();  // not yet
  EXPECT_EQ(vm(VM_B).rung, 0u);
  clock.advance_to(2 * MS);
  turn->check_held();
  EXPECT_EQ(turn->counts().holds_expired, 1u);
  EXPECT_EQ(dispatcher->gpu_ns(VM_A), 2 * MS);  // the hold is A's time
  EXPECT_EQ(vm(VM_B).rung, 1u);
}

TEST_F(TurnTest, ADoorbellDuringTheTurnRingsAheadOnlyWhileNoOtherVmWaits) {
  make(false);
  vm(VM_A).pieces = 1;
  ASSERT_TRUE(dispatcher->submit(VM_A, CH));
  vm(VM_A).pieces = 1;
  turn->rung_in_turn(VM_A, CH);
  EXPECT_EQ(vm(VM_A).rung_ahead, 1u);
  ASSERT_TRUE(dispatcher->submit(VM_B, CH));
  turn->rung_in_turn(VM_A, CH);
  EXPECT_EQ(vm(VM_A).rung_ahead, 1u);  // B waits: no entry ahead
}

TEST_F(TurnTest, RingingAheadOffRingsNothingAhead) {
  make(false, false);
  vm(VM_A).pieces = 2;
  ASSERT_TRUE(dispatcher->submit(VM_A, CH));
  turn->rung_in_turn(VM_A, CH);
  EXPECT_EQ(vm(VM_A).rung_ahead, 0u);
}

TEST_F(TurnTest, ADispatchWithNothingToRunEndsTheTurnEmptyAtOnce) {
  make(false);
  ASSERT_TRUE(dispatcher->submit(VM_A, CH));  // no pieces
  EXPECT_FALSE(dispatcher->busy());
  EXPECT_EQ(turn->counts().started, 0u);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].end, TurnEnd::empty);
}

TEST_F(TurnTest, APieceOfAnEndedTurnOnlyRequeuesWhatItsChannelHasLeft) {
  make(false);
  vm(VM_A).pieces = 2;
  ASSERT_TRUE(dispatcher->submit(VM_A, CH));
  turn->stop({VM_A, CH, std::nullopt}, std::nullopt, clock.now_ns());  // unbound, say
  EXPECT_EQ(vm(VM_A).ended, 1u);
  piece_ran(VM_A, 0, 1 * MS);  // its piece's end, handled late
  EXPECT_EQ(vm(VM_A).done, 1u);
  EXPECT_EQ(vm(VM_A).rung, 1u);
}

// Issue 37 item 5: a VM whose host work (its shadow sync) outlasts the
// turn's bound ends its turn there, charged for it, and goes behind the
// VM that waited; its work goes on at its next dispatch.
TEST_F(TurnTest, HostWorkPastTheTurnsBoundEndsTheTurnChargedAndLetsTheWaitingVmGo) {
  make(false);
  vm(VM_A).host_work = 1;
  vm(VM_A).pieces = 1;
  vm(VM_B).pieces = 1;
  ASSERT_TRUE(dispatcher->submit(VM_A, CH));
  ASSERT_TRUE(dispatcher->submit(VM_B, CH));  // B waits behind A's turn
  ASSERT_EQ(vm(VM_A).budgets.size(), 1u);
  EXPECT_EQ(vm(VM_A).budgets[0], TURN_NS);  // the host work is bounded by the turn
  EXPECT_EQ(turn->counts().host_work, 1u);
  EXPECT_EQ(vm(VM_A).ended, 1u);  // A's turn ended and what it has left is requeued
  EXPECT_EQ(vm(VM_B).rung, 1u);   // B went next
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[1].end, TurnEnd::out_of_time);
}

// Issue 37 item 5: a VM whose turn ends is queued again before the next
// turn is picked. That pick may run another VM's host work on this thread
// for a whole turn and then pick again: the VM that waited must be in
// that second pick. (It was not: B's channel was requeued only after the
// chain of A's host-work turns, and B waited three of A's 30 ms turns.)
TEST_F(TurnTest, AVmWhoseTurnEndsIsQueuedBeforeAnotherVmsHostWorkTurnIsPicked) {
  make(false);
  std::vector<uint32_t> dispatches;
  for (uint32_t id : {VM_A, VM_B}) {
    FakeChannels& v = vm(id);
    v.id = id;
    v.dispatches = &dispatches;
    v.on_end = [this, &v, id] {  // as ShadowChannels::end_turn: work left is queued again
      if (v.pieces > 0 || v.host_work > 0) {
        ASSERT_TRUE(dispatcher->submit(id, CH));
      }
    };
  }
  vm(VM_B).pieces = 3;
  ASSERT_TRUE(dispatcher->submit(VM_B, CH));  // B's turn
  vm(VM_A).host_work = 3;                     // A's sync needs three turns
  vm(VM_A).pieces = 1;
  ASSERT_TRUE(dispatcher->submit(VM_A, CH));  // A waits
  piece_ran(VM_B, 0, TURN_NS + 1);            // B's turn is over with work left: A goes
  // A's first turn ends in its host work; B, queued again before that
  // turn was picked, goes before A's second.
  EXPECT_EQ(dispatches, (std::vector<uint32_t>{VM_B, VM_A, VM_B}));
  EXPECT_EQ(turn->counts().host_work, 1u);
  EXPECT_EQ(vm(VM_A).host_work, 2u);
  // And so on, turn about; once B has run its last piece, A's last turn
  // of host work and then its piece follow each other.
  piece_ran(VM_B, TURN_NS + 1, 3 * TURN_NS);
  piece_ran(VM_B, 3 * TURN_NS, 5 * TURN_NS);
  EXPECT_EQ(dispatches, (std::vector<uint32_t>{VM_B, VM_A, VM_B, VM_A, VM_B, VM_A, VM_A}));
  EXPECT_EQ(turn->counts().host_work, 3u);
  EXPECT_EQ(vm(VM_A).rung, 1u);  // its piece runs once its sync is done
}

}  // namespace
}  // namespace vgpu::mediator
