// SPDX-License-Identifier: GPL-2.0-or-later
// Host-class semaphores: releases of 4 and 16 bytes, each acquire mode,
// blocking without stalling other channels, and the acquire timeout.
#include <chrono>
#include <ostream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "gpu/testing/harness.h"
#include "vgpu/classes.h"

namespace vgpu::gpu {
namespace {

using namespace regs;
using namespace cls::host;
using testing::Harness;

std::vector<uint32_t> operator+(std::vector<uint32_t> a, const std::vector<uint32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
std::vector<uint32_t> set_ref(uint32_t v) { return {fmt::mthd::immediate(0, SET_REFERENCE, v)}; }

struct TwoChannels : ::testing::Test {
  Harness h;
  testing::Channel& a = h.add_channel(1);
  testing::Channel& b = h.add_channel(2);
  void SetUp() override { h.commit_runlist({1, 2}); }
  uint64_t sem_va() const { return a.va(testing::DATA_OFF); }
  uint64_t sem_phys() const { return a.phys(testing::DATA_OFF); }
  // Channel b sees channel a's semaphore page at the same VA.
  void share_semaphore_page() {
    ASSERT_TRUE(h.tables().map(b.pd, sem_va(), sem_phys(), fmt::SMALL_PAGE, fmt::PageSize::small).has_value());
  }
  void release_over_ones(uint32_t payload, bool four_bytes);
  bool blocked(const testing::Channel& c) {
    for (int i = 0; i < 2000; ++i) {
      if (pfifo::ChanStateAcquirePending::get(h.rd(pfifo::CHAN_STATE[c.chid]))) return true;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    return false;
  }
};

// Channel a releases `payload` (four bytes when `four_bytes`) onto
// a semaphore whose second word is all ones, and runs to idle: the first
// word is the payload.
void TwoChannels::release_over_ones(uint32_t payload, bool four_bytes) {
  (void)h.vram().write32(sem_phys() + 4, 0xffffffff);
  h.submit(a, testing::sem_release(sem_va(), payload, four_bytes));
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.vram().read32(sem_phys()), payload);
}

TEST_F(TwoChannels, FourByteReleaseWritesOnlyThePayload) {
  ASSERT_NO_FATAL_FAILURE(release_over_ones(0x1111, true));
  EXPECT_EQ(h.vram().read32(sem_phys() + 4), 0xffffffffu);
}

TEST_F(TwoChannels, SixteenByteReleaseWritesPayloadZeroAndTimestamp) {
  ASSERT_NO_FATAL_FAILURE(release_over_ones(0x2222, false));
  EXPECT_EQ(h.vram().read32(sem_phys() + 4), 0u);
  const uint64_t stamp = h.vram().read64(sem_phys() + 8);
  EXPECT_GT(stamp, 0u);
  EXPECT_LE(stamp, h.gpu().clock().now_ns());
}

// An acquire whose condition already holds lets the channel go on at once.
struct AcquireCase {
  const char* name;
  uint32_t memory;   // the semaphore word before the acquire
  uint32_t payload;  // the acquire's operand
  SemOp op;
  friend void PrintTo(const AcquireCase& c, std::ostream* os) { *os << c.name; }
};

struct SatisfiedAcquire : TwoChannels, ::testing::WithParamInterface<AcquireCase> {};

TEST_P(SatisfiedAcquire, Proceeds) {
  const AcquireCase& c = GetParam();
  (void)h.vram().write32(sem_phys(), c.memory);
  h.submit(a, testing::sem_acquire(sem_va(), c.payload, c.op) + set_ref(1));
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.userd(a, userd::REF), 1u);
}

INSTANTIATE_TEST_SUITE_P(TwoChannels, SatisfiedAcquire,
                         ::testing::Values(AcquireCase{"Equal", 5, 5, SemOp::acquire},
                                           // 2 is "after" 0xfffffff0 modulo 2^32: the compare wraps.
                                           AcquireCase{"GeqWrapping", 0x00000002, 0xfffffff0, SemOp::acq_geq},
                                           // AND needs one bit in common.
                                           AcquireCase{"AndCommonBit", 0b0100, 0b0110, SemOp::acq_and}),
                         [](const ::testing::TestParamInfo<AcquireCase>& p) { return std::string(p.param.name); });

TEST_F(TwoChannels, BlockedAcquireIsReleasedByAnotherChannel) {
  share_semaphore_page();
  h.submit(a, testing::sem_acquire(sem_va(), 7, SemOp::acquire) + set_ref(1));
  ASSERT_TRUE(blocked(a));
  EXPECT_EQ(h.userd(a, userd::REF), 0u);
  h.submit(b, testing::sem_release(sem_va(), 7, true));
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.userd(a, userd::REF), 1u);
  EXPECT_FALSE(pfifo::ChanStateAcquirePending::get(h.rd(pfifo::CHAN_STATE[a.chid])));
}

TEST_F(TwoChannels, BlockedAcquireDoesNotStallOtherChannels) {
  h.submit(a, testing::sem_acquire(sem_va(), 1, SemOp::acquire));
  ASSERT_TRUE(blocked(a));
  h.submit(b, set_ref(9));
  for (int i = 0; i < 2000 && h.userd(b, userd::REF) != 9; ++i)
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  EXPECT_EQ(h.userd(b, userd::REF), 9u);
  EXPECT_FALSE(h.idle(1'000'000));  // a is still blocked
}

TEST_F(TwoChannels, BlockedAcquireSeesACpuWrite) {
  h.submit(a, testing::sem_acquire(sem_va(), 3, SemOp::acq_geq) + set_ref(2));
  ASSERT_TRUE(blocked(a));
  (void)h.vram().write32(sem_phys(), 3);
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.userd(a, userd::REF), 2u);
}

TEST_F(TwoChannels, AcquireTimesOut) {
  // Rebind a with a 1 us acquire timeout.
  (void)h.vram().write32(a.inst + ramfc::ACQUIRE, ramfc::AcquireTimeoutEnable::mask | ramfc::AcquireTimeout::make(1));
  h.wr(pfifo::CHAN_INST[a.chid], h.rd(pfifo::CHAN_INST[a.chid]));
  h.submit(a, testing::sem_acquire(sem_va(), 1, SemOp::acquire));
  ASSERT_TRUE(h.wait_error(a.chid));
  EXPECT_EQ(h.chan_error(a.chid), uint32_t(ChannelError::sem_timeout));
  EXPECT_EQ(pfifo::ChanErrorMethodAddr::get(h.rd(pfifo::CHAN_ERROR_METHOD[a.chid])), SEMAPHORE_D >> 2);
}

TEST_F(TwoChannels, UndefinedOperationIsIllegalSem) {
  h.submit(a, {fmt::mthd::inc(0, SEMAPHORE_A, 4), 0, lo32(sem_va()), 0, SemDOperation::make(3)});
  ASSERT_TRUE(h.wait_error(a.chid));
  EXPECT_EQ(h.chan_error(a.chid), uint32_t(ChannelError::illegal_sem));
}

TEST_F(TwoChannels, AcquireOnUnmappedAddressIsAnMmuFault) {
  h.submit(a, testing::sem_acquire(a.va(testing::CHAN_MEM_BYTES), 1, SemOp::acquire));
  ASSERT_TRUE(h.wait_error(a.chid));
  EXPECT_EQ(h.chan_error(a.chid), uint32_t(ChannelError::mmu_fault));
  const uint32_t type = h.rd(pfifo::FAULT_TYPE[uint32_t(FaultUnit::pfifo)]);
  EXPECT_TRUE(pfifo::FaultChidValid::get(type));
  EXPECT_EQ(pfifo::FaultChid::get(type), a.chid);
}

}  // namespace
}  // namespace vgpu::gpu
