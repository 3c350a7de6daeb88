// SPDX-License-Identifier: GPL-2.0-or-later
// BAND's weighted turns (rule 3 in band.cc; docs/scheduler.md, "Weighted
// turns"): with bounded turns, each VM's turn is its weight's part of the
// turn, less its lead over the VMs waiting, and a VM whose turn ended while
// another waited goes behind it.
#include <algorithm>

#include "scheduler/script.h"

namespace vgpu::sched {
namespace {
using namespace testing;

constexpr uint64_t TURN = 30 * MS;
constexpr PolicyParams WEIGHTED{.turn_ns = TURN};

// Pick at `t`, expect a dispatch; returns it without completing it.
Submission dispatched(Policy& p, uint64_t t) {
  const Decision d = p.pick(t);
  EXPECT_TRUE(d.dispatch);
  return d.dispatch.value_or(Submission{});
}

TEST(WeightedTurns, ATurnIsTheTurnTimesTheWeightOverTheLargest) {
  auto p = policy("band", {1, 3}, WEIGHTED);
  arrive(*p, 1, 0);
  arrive(*p, 2, 0);
  const Submission a = dispatched(*p, 0);
  EXPECT_EQ(a.vm, 1u);
  EXPECT_EQ(a.turn_ns, 10 * MS);
  p->complete(1, 0, 10 * MS);
  const Submission b = dispatched(*p, 10 * MS);
  EXPECT_EQ(b.vm, 2u);
  EXPECT_EQ(b.turn_ns, TURN);
}

TEST(WeightedTurns, OffWithoutABoundedTurn) {
  auto p = policy("band", {1, 3});
  arrive(*p, 1, 0);
  EXPECT_EQ(dispatched(*p, 0).turn_ns, 0u);
}

// vm 1 is under its share and has budget (Gdev's rule 1 would keep it
// first), but its turn ended while vm 2 waited: vm 2 goes next.
TEST(WeightedTurns, AVmWhoseTurnEndedGoesBehindTheVmWaiting) {
  auto p = policy("band", {1, 1}, WEIGHTED);
  arrive(*p, 1, 0);
  arrive(*p, 2, 0);
  EXPECT_EQ(run(*p, 0, MS), 1u);
  arrive(*p, 1, MS);
  EXPECT_EQ(run(*p, MS, TURN), 2u);
  arrive(*p, 2, MS + TURN);
  EXPECT_EQ(run(*p, MS + TURN, MS), 1u);
}

TEST(WeightedTurns, ATurnThatRanOverShortensTheNextOne) {
  auto p = policy("band", {1, 1}, WEIGHTED);
  arrive(*p, 1, 0);
  arrive(*p, 2, 0);
  const uint64_t over = 7'500 * US;  // the piece that started just before the turn's end
  EXPECT_EQ(run(*p, 0, TURN + over), 1u);
  arrive(*p, 1, TURN + over);
  EXPECT_EQ(run(*p, TURN + over, TURN), 2u);
  arrive(*p, 2, 2 * TURN + over);
  const Submission next = dispatched(*p, 2 * TURN + over);
  EXPECT_EQ(next.vm, 1u);
  EXPECT_EQ(next.turn_ns, TURN - over);
}

// vm 1 was idle while vm 2 ran ten turns: it is owed no more than one of
// its own turns, so vm 2's turn after vm 1's is whole again.
TEST(WeightedTurns, AVmBackFromIdleCatchesUpAtMostOneTurn) {
  auto p = policy("band", {1, 1}, WEIGHTED);
  uint64_t t = 0;
  for (int i = 0; i < 10; ++i, t += TURN) {
    arrive(*p, 2, t);
    EXPECT_EQ(run(*p, t, TURN), 2u);
  }
  arrive(*p, 1, t);
  arrive(*p, 2, t);
  EXPECT_EQ(run(*p, t, TURN), 1u);
  arrive(*p, 1, t + TURN);
  const Submission next = dispatched(*p, t + TURN);
  EXPECT_EQ(next.vm, 2u);
  EXPECT_EQ(next.turn_ns, TURN);
}

// Three VMs: 1 and 2 busy with whole turns, 3 under its share (1 ms of
// work, then it comes back during vm 1's turn). vm 3 goes next, before
// vm 2, which waited longer but is ahead: a VM under its share is served
// within one turn of becoming runnable, not behind every busy VM.
TEST(WeightedTurns, AVmUnderItsShareGoesAfterTheTurnInProgress) {
  auto p = policy("band", {1, 1, 1}, WEIGHTED);
  arrive(*p, 1, 0);
  arrive(*p, 2, 0);
  arrive(*p, 3, 0);
  uint64_t t = 0;
  for (int i = 0; i < 3; ++i) {
    const Submission s = dispatched(*p, t);
    const uint64_t len = s.vm == 3 ? MS : TURN;
    p->complete(s.vm, t, t + len);
    t += len;
    if (s.vm != 3) arrive(*p, s.vm, t);
  }
  const Submission in_progress = dispatched(*p, t);
  ASSERT_EQ(in_progress.vm, 1u);
  arrive(*p, 3, t + MS);
  p->complete(1, t, t + TURN);
  arrive(*p, 1, t + TURN);
  EXPECT_EQ(dispatched(*p, t + TURN).vm, 3u);
}

// A turn the host stretched (its thread not run: vm 1's 1 ms launch took
// 200 ms) is repaid: vm 2 re-queues its remainder after each of its turns,
// which is not a return from idle, so it keeps what it is owed and vm 1's
// turns stay one launch long until they are level.
TEST(WeightedTurns, AStretchedTurnIsRepaidByTheVmAhead) {
  auto p = policy("band", {1, 1}, WEIGHTED);
  arrive(*p, 1, 0);
  arrive(*p, 2, 0);
  uint64_t t = 0, gpu[3] = {0, 0, 0};
  bool stretched = false;
  while (t < 2'000 * MS) {
    const Submission s = dispatched(*p, t);
    // vm 1 runs 1 ms launches (its turn: the first launch past its length),
    // vm 2 exactly its turn; vm 1's first turn is stretched to 200 ms.
    uint64_t len = s.vm == 1 ? std::max<uint64_t>((s.turn_ns + MS - 1) / MS, 1) * MS : s.turn_ns;
    if (s.vm == 1 && !stretched) len = 200 * MS, stretched = true;
    p->complete(s.vm, t, t + len);
    gpu[s.vm] += len;
    t += len;
    arrive(*p, s.vm, t);
  }
  EXPECT_NEAR(static_cast<double>(gpu[1]) / static_cast<double>(gpu[1] + gpu[2]), 0.5, 0.01);
}

// Two busy VMs as the mediator runs them: vm 1's turn is 1 ms launches
// (it ends at the first launch past its length), vm 2's 7.5 ms pieces; each
// VM queues its remainder as its turn ends. Shares follow the weights, and
// vm 1 waits for at most one turn of vm 2 (its length and one piece).
struct Outcome {
  double share1;
  uint64_t longest_wait_ns;
};

Outcome run_busy_pair(uint32_t w1, uint32_t w2) {
  auto p = policy("band", {w1, w2}, WEIGHTED);
  constexpr uint64_t PIECE[] = {0, MS, 7'500 * US};
  uint64_t t = 0, gpu[3] = {0, 0, 0}, queued1_at = 0, longest = 0;
  arrive(*p, 1, 0);
  arrive(*p, 2, 0);
  while (t < 20'000 * MS) {
    const Submission s = dispatched(*p, t);
    if (s.vm == 1) longest = std::max(longest, t - queued1_at);
    const uint64_t len = (s.turn_ns + PIECE[s.vm] - 1) / PIECE[s.vm] * PIECE[s.vm];
    p->complete(s.vm, t, t + len);
    gpu[s.vm] += len;
    t += len;
    arrive(*p, s.vm, t);
    if (s.vm == 1) queued1_at = t;
  }
  return {static_cast<double>(gpu[1]) / static_cast<double>(gpu[1] + gpu[2]), longest};
}

TEST(WeightedTurns, BusyVmsShareByWeightAndWaitAtMostOneTurn) {
  for (const auto& [w1, w2] : {std::pair{1u, 1u}, std::pair{1u, 3u}, std::pair{3u, 1u}}) {
    const Outcome o = run_busy_pair(w1, w2);
    const double target = static_cast<double>(w1) / (w1 + w2);
    EXPECT_NEAR(o.share1, target, 0.01) << w1 << ":" << w2;
    EXPECT_LE(o.longest_wait_ns, TURN + 7'500 * US) << w1 << ":" << w2;
  }
}

}  // namespace
}  // namespace vgpu::sched
