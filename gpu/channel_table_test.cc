// SPDX-License-Identifier: GPL-2.0-or-later
// PFIFO's channel table on its own: bindings and epochs, readiness, the
// runlist, results of an old binding, and reset.
#include "gpu/channel_table.h"

#include <gtest/gtest.h>

#include <vector>

#include "vgpu/formats.h"

namespace vgpu::gpu {
namespace {

using namespace regs::pfifo;

const uint32_t BOUND = fmt::encode_chan_inst({.valid = true, .inst = 0x10000});

void make_ready(ChannelTable& t, uint32_t chid) {
  t.bind(chid, BOUND);
  t[chid].state = ChanStateRunnable::mask;
  t.set_runlist({chid});
}

TEST(ChannelTable, ABoundRunnableListedChannelIsReady) {
  ChannelTable t;
  EXPECT_FALSE(t.ready(3));
  t.bind(3, BOUND);
  EXPECT_FALSE(t.ready(3)) << "not runnable";
  t[3].state = ChanStateRunnable::mask;
  EXPECT_FALSE(t.ready(3)) << "not listed";
  t.set_runlist({3, 200});  // ids beyond the device are ignored
  EXPECT_TRUE(t.ready(3));
  t.set_runlist({});
  EXPECT_FALSE(t.ready(3));
}

// The listed set is what PFIFO's pick walks, in round-robin order from
// the channel after the last one picked.
TEST(ChannelTable, TheListedSetFollowsTheRunlistInRoundRobinOrder) {
  ChannelTable t;
  t.set_runlist({100, 5, 31, 32, 127, 200});  // 200 is beyond the device
  const auto walk = [&](uint32_t start, size_t at_most) {
    std::vector<uint32_t> seen;
    t.listed().for_each_from(start, [&](uint32_t c) {
      seen.push_back(c);
      return seen.size() < at_most;
    });
    return seen;
  };
  EXPECT_EQ(walk(0, 10), (std::vector<uint32_t>{5, 31, 32, 100, 127}));
  EXPECT_EQ(walk(32, 10), (std::vector<uint32_t>{32, 100, 127, 5, 31}));
  EXPECT_EQ(walk(33, 10), (std::vector<uint32_t>{100, 127, 5, 31, 32}));
  EXPECT_EQ(walk(128, 10), walk(0, 10)) << "past the last channel is channel 0";
  EXPECT_EQ(walk(101, 2), (std::vector<uint32_t>{127, 5})) << "stops when told";
  for (uint32_t c = 0; c < regs::NUM_CHANNELS; ++c)
    EXPECT_EQ(t.listed().test(c), c == 5 || c == 31 || c == 32 || c == 100 || c == 127) << "channel " << c;
  t.set_runlist({7});
  EXPECT_EQ(walk(9, 10), (std::vector<uint32_t>{7}));
  t.reset();
  EXPECT_TRUE(walk(0, 10).empty()) << "reset unlists every channel";
}

TEST(ChannelTable, EveryBindStartsANewEpochAndClearsTheStop) {
  ChannelTable t;
  make_ready(t, 1);
  const uint64_t epoch = t[1].epoch;
  ASSERT_TRUE(t.fail(1, epoch, ChannelFault{.code = regs::ChannelError::illegal_cmd, .method = 0x40, .addr = 0x1234}));
  EXPECT_FALSE(t.ready(1));
  EXPECT_TRUE(t.errors_pending());
  EXPECT_EQ(t[1].error, static_cast<uint32_t>(regs::ChannelError::illegal_cmd));
  EXPECT_EQ(t[1].error_addr_lo, 0x1234u);
  EXPECT_FALSE(ChanStateRunnable::get(t.state(1))) << "an error stops the channel";
  t.bind(1, BOUND);
  EXPECT_GT(t[1].epoch, epoch);
  EXPECT_FALSE(t[1].stopped);
}

TEST(ChannelTable, ResultsOfAnOldBindingAreDropped) {
  ChannelTable t;
  make_ready(t, 2);
  const uint64_t old = t[2].epoch;
  t.bind(2, BOUND);
  EXPECT_FALSE(t.fail(2, old, ChannelFault{.code = regs::ChannelError::mmu_fault}));
  EXPECT_FALSE(t.raise_nonstall(2, old));
  EXPECT_FALSE(t.errors_pending());
  EXPECT_FALSE(t.nonstall_pending());
  EXPECT_TRUE(t.raise_nonstall(2, t[2].epoch));
  EXPECT_TRUE(t.nonstall_pending());
}

TEST(ChannelTable, AChannelWaitingForItsEngineIsNotReadyUntilTheResultArrives) {
  ChannelTable t;
  make_ready(t, 4);
  const uint64_t epoch = t[4].epoch;
  t.engine_started(4, epoch);
  EXPECT_FALSE(t.ready(4));
  EXPECT_TRUE(ChanStateEngineOutstanding::get(t.state(4)));
  t.engine_finished(4, epoch, MethodDone{});
  EXPECT_TRUE(t.ready(4));
  EXPECT_FALSE(ChanStateEngineOutstanding::get(t.state(4)));
  ASSERT_TRUE(t[4].engine_result.has_value());
}

TEST(ChannelTable, ResetForgetsBindingsButKeepsEngineWorkInFlight) {
  ChannelTable t;
  make_ready(t, 5);
  t.engine_started(5, t[5].epoch);
  t.raise_nonstall(5, t[5].epoch);
  const uint64_t epoch = t[5].epoch;
  t.reset();
  EXPECT_FALSE(t.ready(5));
  EXPECT_EQ(t[5].inst, 0u);
  EXPECT_GT(t[5].epoch, epoch);
  EXPECT_TRUE(t[5].engine_outstanding) << "engine work cannot be recalled";
  EXPECT_FALSE(t.nonstall_pending());
  t.engine_finished(5, epoch, MethodDone{});
  EXPECT_FALSE(t[5].engine_result.has_value()) << "its result is dropped";
}

TEST(ChannelTable, ItsRegistersReadAndWriteTheSlots) {
  ChannelTable t;
  int kicks = 0;
  RegisterTable table;
  for (RegRow& r : t.registers([&] { ++kicks; })) ASSERT_TRUE(table.add(std::move(r)));
  table.write(CHAN_INST[9].offset, BOUND);
  table.write(CHAN_STATE[9].offset, ChanStateRunnable::mask | ChanStateBusy::mask);  // busy is status, not stored
  EXPECT_EQ(kicks, 2);
  EXPECT_EQ(table.read(CHAN_INST[9].offset), BOUND);
  EXPECT_EQ(table.read(CHAN_STATE[9].offset), ChanStateRunnable::mask);
  ASSERT_TRUE(t.fail(9, t[9].epoch, ChannelFault{.code = regs::ChannelError::bad_program}));
  EXPECT_EQ(table.read(CHAN_ERROR_PENDING[0].offset), 1u << 9);
  table.write(CHAN_ERROR_PENDING[0].offset, 1u << 9);
  EXPECT_FALSE(t.errors_pending());
  table.write(CHAN_ERROR[9].offset, 0);
  EXPECT_EQ(table.read(CHAN_ERROR[9].offset), 0u);
}

}  // namespace
}  // namespace vgpu::gpu
