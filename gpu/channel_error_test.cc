// SPDX-License-Identifier: GPL-2.0-or-later
// Channel errors: each stops its channel with a code, method and address,
// raises the channel-error interrupt, and leaves other channels running.
#include <gtest/gtest.h>

#include "gpu/testing/harness.h"
#include "vgpu/classes.h"

namespace vgpu::gpu {
namespace {

using namespace regs;
using namespace cls::host;
using fmt::mthd::Op;
using testing::Harness;

struct ChannelErrors : ::testing::Test {
  Harness h;
  testing::Channel& bad = h.add_channel(4);
  testing::Channel& good = h.add_channel(5);
  void SetUp() override { h.commit_runlist({4, 5}); }

  // The bad channel stopped with `code`; the good one still completes work.
  void expect_error(ChannelError code) {
    ASSERT_TRUE(h.wait_error(bad.chid));
    EXPECT_EQ(h.chan_error(bad.chid), uint32_t(code));
    EXPECT_EQ(pfifo::ChanStateRunnable::get(h.rd(pfifo::CHAN_STATE[bad.chid])), 0u);
    EXPECT_EQ(h.rd(pfifo::CHAN_ERROR_PENDING[0]), 1u << bad.chid);
    EXPECT_TRUE(h.rd(pfifo::INTR) & pfifo::IntrChannelError::mask);
    EXPECT_TRUE(h.rd(pmc::INTR_0) & pmc::intr::Pfifo::mask);
    EXPECT_TRUE(testing::line_becomes(h.gpu(), true));
    h.submit(good, {fmt::mthd::immediate(0, SET_REFERENCE, 0x1234)});
    ASSERT_TRUE(h.idle());
    EXPECT_EQ(h.userd(good, userd::REF), 0x1234u);
    EXPECT_EQ(h.chan_error(good.chid), 0u);
    bool event = false;
    for (const auto& e : h.events()) event |= e.kind == ChannelEvent::Kind::error && e.chid == bad.chid;
    EXPECT_TRUE(event);
  }
  uint32_t method_field() { return h.rd(pfifo::CHAN_ERROR_METHOD[bad.chid]); }
  uint64_t error_addr() {
    return join64(h.rd(pfifo::CHAN_ERROR_ADDR_HI[bad.chid]), h.rd(pfifo::CHAN_ERROR_ADDR_LO[bad.chid]));
  }
  uint64_t segment_va() const { return bad.va(testing::PB_OFF + bad.pb_next); }
};

TEST_F(ChannelErrors, UnknownHostMethodIsIllegalMethod) {
  constexpr uint32_t UNKNOWN_HOST_METHOD = 0x00c0;
  h.submit(bad, {fmt::mthd::immediate(3, UNKNOWN_HOST_METHOD, 1)});
  expect_error(ChannelError::illegal_method);
  EXPECT_EQ(pfifo::ChanErrorMethodAddr::get(method_field()), UNKNOWN_HOST_METHOD >> 2);
  EXPECT_EQ(pfifo::ChanErrorMethodSubch::get(method_field()), 3u);
}

TEST_F(ChannelErrors, IllegalMethodStopsTheChannel) {
  h.submit(bad, {fmt::mthd::immediate(0, ILLEGAL, 0)});
  expect_error(ChannelError::illegal_method);
}

TEST_F(ChannelErrors, UnknownClassIsIllegalClass) {
  h.submit(bad, {fmt::mthd::immediate(1, SET_OBJECT, 0x1234)});
  expect_error(ChannelError::illegal_class);
  EXPECT_EQ(pfifo::ChanErrorMethodSubch::get(method_field()), 1u);
}

TEST_F(ChannelErrors, MethodOnEmptySubchannel) {
  h.submit(bad, {fmt::mthd::immediate(2, 0x200, 1)});
  expect_error(ChannelError::empty_subchannel);
  EXPECT_EQ(pfifo::ChanErrorMethodAddr::get(method_field()), 0x200u >> 2);
}

TEST_F(ChannelErrors, ReservedOpcodeIsIllegalCmd) {
  const uint64_t va = segment_va();
  h.submit(bad, {fmt::mthd::immediate(0, NOP, 0), fmt::mthd::Opcode::make(uint32_t(Op::reserved))});
  expect_error(ChannelError::illegal_cmd);
  EXPECT_EQ(error_addr(), va + 4);
}

TEST_F(ChannelErrors, DataPastTheSegmentEndIsIllegalCmd) {
  const uint64_t va = segment_va();
  h.submit(bad, {fmt::mthd::inc(0, SET_REFERENCE, 5), 1, 2});
  expect_error(ChannelError::illegal_cmd);
  EXPECT_EQ(error_addr(), va);
  EXPECT_EQ(h.userd(bad, userd::REF), 0u);  // nothing of the header ran
}

TEST_F(ChannelErrors, EntryCrossingTheAddressSpaceEndIsGpentryInvalid) {
  const uint64_t va = fmt::VA_LIMIT - 8;
  h.submit_entry(bad, fmt::gp::make(va, 4));
  expect_error(ChannelError::gpentry_invalid);
  EXPECT_EQ(error_addr(), va);
}

TEST_F(ChannelErrors, IllegalControlEntryIsGpentryInvalid) {
  h.submit_entry(bad, fmt::gp::Entry{0, fmt::gp::Opcode::make(uint32_t(fmt::gp::ControlOp::illegal))});
  expect_error(ChannelError::gpentry_invalid);
}

TEST_F(ChannelErrors, InvalidPteInPushBufferFetchIsAnMmuFault) {
  const uint64_t va = bad.va(testing::CHAN_MEM_BYTES);  // just past the mapped window
  h.submit_entry(bad, fmt::gp::make(va, 2));
  expect_error(ChannelError::mmu_fault);
  EXPECT_EQ(error_addr(), va);
  const uint32_t unit = uint32_t(FaultUnit::pfifo);
  EXPECT_TRUE(h.rd(pfifo::FAULT_UNIT_PENDING) & (1u << unit));
  EXPECT_EQ(h.rd(pfifo::FAULT_VA_LO[unit]), lo32(va));
  EXPECT_EQ(pfifo::FaultChid::get(h.rd(pfifo::FAULT_TYPE[unit])), bad.chid);
  EXPECT_EQ(pfifo::FaultInstAddr::get(h.rd(pfifo::FAULT_INST[unit])), bad.inst >> 12);
  EXPECT_TRUE(h.rd(pfifo::INTR) & pfifo::IntrMmuFault::mask);
}

TEST_F(ChannelErrors, BadSignatureIsBadInstance) {
  (void)h.vram().write32(bad.inst + ramfc::SIGNATURE, 0xdead);
  h.wr(pfifo::CHAN_INST[bad.chid], h.rd(pfifo::CHAN_INST[bad.chid]));  // rebind: reloaded on next run
  h.submit(bad, {fmt::mthd::immediate(0, SET_REFERENCE, 1)});
  expect_error(ChannelError::bad_instance);
  EXPECT_EQ(error_addr(), bad.inst);
}

TEST_F(ChannelErrors, UserdOutsideVramIsBadInstance) {
  (void)h.vram().write32(bad.inst + ramfc::USERD_HI, 1);
  h.wr(pfifo::CHAN_INST[bad.chid], h.rd(pfifo::CHAN_INST[bad.chid]));
  expect_error(ChannelError::bad_instance);
}

TEST_F(ChannelErrors, StoppedChannelRunsAgainAfterRebind) {
  h.submit(bad, {fmt::mthd::immediate(0, ILLEGAL, 0)});
  ASSERT_TRUE(h.wait_error(bad.chid));
  h.wr(pfifo::CHAN_ERROR[bad.chid], 0);
  h.wr(pfifo::CHAN_ERROR_PENDING[0], 1u << bad.chid);
  EXPECT_EQ(h.rd(pfifo::INTR) & pfifo::IntrChannelError::mask, 0u);
  // Recovery as a driver does it: skip the failed entry, rebind, restart.
  (void)h.vram().write32(bad.inst + ramfc::GP_GET, bad.put);
  h.wr(pfifo::CHAN_INST[bad.chid], h.rd(pfifo::CHAN_INST[bad.chid]));
  h.wr(pfifo::CHAN_STATE[bad.chid], pfifo::ChanStateRunnable::mask);
  h.submit(bad, {fmt::mthd::immediate(0, SET_REFERENCE, 8)});
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.userd(bad, userd::REF), 8u);
}

// LAUNCH_USER (§10.6): a user launch is one non-incrementing run whose
// words PFIFO hands over at once; what is wrong with it stops the channel
// with a code naming the method and, where the words name no address,
// the command's header.
struct LaunchUserErrors : ChannelErrors {
  static constexpr unsigned SUBCH = 1;
  void SetUp() override {
    ChannelErrors::SetUp();
    h.submit(bad, {fmt::mthd::inc(SUBCH, SET_OBJECT, 1), cls::COMPUTE});
  }
  // The header of a launch of entry 0 of `slot`, one block of one thread, no report.
  static std::vector<uint32_t> header(uint32_t slot) {
    namespace k = cls::compute;
    const uint32_t one_one = k::DimLo::make(1) | k::DimHi::make(1);
    return {k::EntryModule::make(slot), one_one, 1, one_one, 1, 0, 0, 0};
  }
  void submit_run(const std::vector<uint32_t>& words, Op op = Op::non_inc) {
    std::vector<uint32_t> pb{
        fmt::mthd::header(op, SUBCH, cls::compute::LAUNCH_USER, static_cast<uint32_t>(words.size()))};
    pb.insert(pb.end(), words.begin(), words.end());
    command_va = segment_va();
    h.submit(bad, pb);
  }
  uint64_t command_va = 0;
};

TEST_F(LaunchUserErrors, AnEmptySlotIsBadProgramAtTheCommand) {
  submit_run(header(3));
  expect_error(ChannelError::bad_program);
  EXPECT_EQ(pfifo::ChanErrorMethodAddr::get(method_field()), cls::compute::LAUNCH_USER >> 2);
  EXPECT_EQ(error_addr(), command_va);
}

TEST_F(LaunchUserErrors, ARunShorterThanTheHeaderIsBadArgument) {
  submit_run({0, 1, 1});
  expect_error(ChannelError::bad_argument);
  EXPECT_EQ(pfifo::ChanErrorMethodAddr::get(method_field()), cls::compute::LAUNCH_USER >> 2);
}

TEST_F(LaunchUserErrors, MoreParameterWordsThanALaunchTakesIsBadArgument) {
  std::vector<uint32_t> words = header(0);
  words.resize(words.size() + cls::compute::MAX_PARAM_BYTES / 4 + 1);
  submit_run(words);
  expect_error(ChannelError::bad_argument);
}

TEST_F(LaunchUserErrors, WordByWordIsBadArgument) {
  submit_run(header(0), Op::inc);
  expect_error(ChannelError::bad_argument);
  EXPECT_EQ(pfifo::ChanErrorMethodAddr::get(method_field()), cls::compute::LAUNCH_USER >> 2);
}

}  // namespace
}  // namespace vgpu::gpu
