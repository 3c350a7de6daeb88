// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/copy_object.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "gpu/engines/pitch_copy.h"
#include "gpu/engines/testing/copy_methods.h"
#include "gpu/engines/testing/engine_env.h"
#include "gpu/kernels/kernels.h"

namespace vgpu::gpu {
namespace {

using namespace cls::copy;
using testing::Method;
using testing::pattern;
class CopyTest : public testing::EngineEnv {
 protected:
  // A fresh copy object ends these methods with this channel error.
  void expect_refused(const std::vector<Method>& m, regs::ChannelError code) {
    CopyObject copy;
    auto r = send(copy, m);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, code);
  }
};

constexpr uint32_t PITCH_BOTH = LaunchSrcPitch::make(1) | LaunchDstPitch::make(1);
constexpr uint32_t LINEAR = testing::COPY_LINEAR;

std::vector<Method> linear_copy(uint64_t src, uint64_t dst, uint32_t bytes, uint32_t launch = LINEAR) {
  auto m = testing::copy_offsets(src, dst);
  m.push_back({LINE_LENGTH_IN, bytes});
  m.push_back({LINE_COUNT, 1});
  m.push_back({LAUNCH_DMA, launch});
  return m;
}

std::vector<Method> semaphore(uint64_t va, uint32_t payload) {
  return {{SET_SEMAPHORE_A, hi32(va)}, {SET_SEMAPHORE_B, lo32(va)}, {SET_SEMAPHORE_PAYLOAD, payload}};
}

std::vector<Method> concat(std::vector<Method> a, const std::vector<Method>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST_F(CopyTest, LinearCopyMovesBytesAcrossPages) {
  const uint64_t src = LINEAR_VA + 0x123;
  const uint64_t dst = LINEAR_VA + 0x10000 + 0x7;
  const auto data = pattern(10000, 1);
  write_vec(src, data);
  CopyObject copy;
  ASSERT_TRUE(send(copy, linear_copy(src, dst, 10000)).has_value());
  EXPECT_EQ(read_vec<uint8_t>(dst, data.size()), data);
  EXPECT_EQ(engine_runs_, 1);
}

// ENGINE_TIMEOUT: a copy whose time runs past the entry's engine budget
// ends with channel error timeout, its clock stopped at the deadline.
TEST_F(CopyTest, ACopyPastTheEngineBudgetEndsWithTimeout) {
  engine_budget_ns_ = 1;
  const uint64_t before = clock_.now_ns();
  CopyObject copy;
  auto r = send(copy, linear_copy(LINEAR_VA, LINEAR_VA + 0x10000, 10000));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, regs::ChannelError::timeout);
  EXPECT_EQ(clock_.now_ns() - before, 1u);
}

// The copy engine's stop points: between lines, and between pieces of a
// line.
TEST_F(CopyTest, ACopyStopsBetweenLinesWhenAskedTo) {
  const auto data = pattern(3 * 16, 3);
  write_vec(LINEAR_VA, data);
  write_vec(LINEAR_VA + 0x1000, std::vector<uint8_t>(3 * 16, 0));
  int asked = 0;
  auto r = pitch_copy_until(*mmu_, address_space(),
                            PitchCopy{.src = LINEAR_VA,
                                      .dst = LINEAR_VA + 0x1000,
                                      .line_bytes = 16,
                                      .lines = 3,
                                      .pitch_in = 16,
                                      .pitch_out = 16},
                            [&] { return ++asked > 1; });
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(*r) << "stopped before the second line";
  EXPECT_EQ(asked, 2);
  const auto out = read_vec<uint8_t>(LINEAR_VA + 0x1000, 3 * 16);
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 16, data.begin())) << "the first line was copied";
  EXPECT_EQ(out[16], 0) << "the second was not";
}

TEST_F(CopyTest, LinearCopyBetweenScatteredPages) {
  const auto data = pattern(3 * fmt::SMALL_PAGE, 2);
  write_vec(SCATTER_VA + 100, data);
  CopyObject copy;
  ASSERT_TRUE(send(copy, linear_copy(SCATTER_VA + 100, LINEAR_VA, 3 * fmt::SMALL_PAGE)).has_value());
  EXPECT_EQ(read_vec<uint8_t>(LINEAR_VA, data.size()), data);
}

TEST_F(CopyTest, PitchCopyCopiesRectangleAndLeavesGaps) {
  constexpr uint32_t LINE = 100, LINES = 5, PIN = 256, POUT = 128;
  const uint64_t src = LINEAR_VA;
  const uint64_t dst = LINEAR_VA + 0x8000;
  const auto data = pattern(PIN * LINES, 3);
  write_vec(src, data);
  const std::vector<uint8_t> before(POUT * LINES, 0xee);
  write_vec(dst, before);

  CopyObject copy;
  ASSERT_TRUE(send(copy, testing::copy_2d(src, dst, LINE, LINES, PIN, POUT)).has_value());

  const auto out = read_vec<uint8_t>(dst, POUT * LINES);
  for (uint32_t line = 0; line < LINES; ++line) {
    for (uint32_t i = 0; i < POUT; ++i) {
      const uint8_t want = i < LINE ? data[line * PIN + i] : uint8_t{0xee};
      ASSERT_EQ(out[line * POUT + i], want) << "line " << line << " byte " << i;
    }
  }
}

// Source lines that overlap one another (pitch below the line), as a
// sliding window: each line is read from its own start. A GPU's 2D copy
// refuses such a pitch, so the device path copies them line by line.
TEST_F(CopyTest, SourcePitchBelowTheLineReadsOverlappingLines) {
  constexpr uint32_t LINE = 64, LINES = 4, PIN = 16, POUT = 64;
  const uint64_t src = LINEAR_VA;
  const uint64_t dst = LINEAR_VA + 0x8000;
  const auto data = pattern(PIN * (LINES - 1) + LINE, 8);
  write_vec(src, data);
  CopyObject copy;
  ASSERT_TRUE(send(copy, testing::copy_2d(src, dst, LINE, LINES, PIN, POUT)).has_value());
  const auto out = read_vec<uint8_t>(dst, POUT * LINES);
  for (uint32_t line = 0; line < LINES; ++line)
    for (uint32_t i = 0; i < LINE; ++i)
      ASSERT_EQ(out[line * POUT + i], data[line * PIN + i]) << "line " << line << " byte " << i;
}

TEST_F(CopyTest, MultiLineOffCopiesOneLine) {
  const auto data = pattern(64, 4);
  write_vec(LINEAR_VA, data);
  write_vec(LINEAR_VA + 0x1000, std::vector<uint8_t>(256, 0));
  CopyObject copy;
  auto m = testing::copy_lines(LINEAR_VA, LINEAR_VA + 0x1000, 64, 4, 64, 64);
  m.push_back({LAUNCH_DMA, LINEAR});
  ASSERT_TRUE(send(copy, m).has_value());
  EXPECT_EQ(read_vec<uint8_t>(LINEAR_VA + 0x1000, 64), data);
  EXPECT_EQ(read_vec<uint8_t>(LINEAR_VA + 0x1040, 64), std::vector<uint8_t>(64, 0));
}

TEST_F(CopyTest, OverlappingCopyUpwardIsMemmove) {
  const auto data = pattern(9000, 5);
  write_vec(LINEAR_VA, data);
  CopyObject copy;
  ASSERT_TRUE(send(copy, linear_copy(LINEAR_VA, LINEAR_VA + 333, 9000)).has_value());
  EXPECT_EQ(read_vec<uint8_t>(LINEAR_VA + 333, data.size()), data);
}

TEST_F(CopyTest, OverlappingCopyDownwardIsMemmove) {
  const auto data = pattern(9000, 6);
  write_vec(LINEAR_VA + 333, data);
  CopyObject copy;
  ASSERT_TRUE(send(copy, linear_copy(LINEAR_VA + 333, LINEAR_VA, 9000)).has_value());
  EXPECT_EQ(read_vec<uint8_t>(LINEAR_VA, data.size()), data);
}

TEST_F(CopyTest, OverlappingCopyOnScatteredPagesIsMemmove) {
  // Both ranges are host windows over the same VRAM pages.
  const auto data = pattern(3 * fmt::SMALL_PAGE, 7);
  write_vec(SCATTER_VA, data);
  CopyObject copy;
  ASSERT_TRUE(send(copy, linear_copy(SCATTER_VA, SCATTER_VA + 1000, 3 * fmt::SMALL_PAGE)).has_value());
  EXPECT_EQ(read_vec<uint8_t>(SCATTER_VA + 1000, data.size()), data);
}

TEST_F(CopyTest, OverlappingPitchCopyWithEqualPitchesIsMemmove) {
  constexpr uint32_t LINE = 64, LINES = 8, PITCH = 128;
  const auto data = pattern(PITCH * LINES, 8);
  write_vec(LINEAR_VA, data);
  CopyObject copy;
  ASSERT_TRUE(send(copy, testing::copy_2d(LINEAR_VA, LINEAR_VA + 2 * PITCH, LINE, LINES, PITCH, PITCH)).has_value());
  const auto out = read_vec<uint8_t>(LINEAR_VA + 2 * PITCH, PITCH * LINES);
  for (uint32_t line = 0; line < LINES; ++line)
    for (uint32_t i = 0; i < LINE; ++i) ASSERT_EQ(out[line * PITCH + i], data[line * PITCH + i]) << line;
}

TEST_F(CopyTest, OneWordSemaphoreWritesPayloadOnly) {
  const uint64_t sem = LINEAR_VA + 0x20000;
  write_vec(sem, std::vector<uint32_t>{0, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef});
  CopyObject copy;
  auto m = concat(semaphore(sem, 0x1234),
                  linear_copy(LINEAR_VA, LINEAR_VA + 0x1000, 16,
                              LINEAR | LaunchSemaphoreType::make(uint32_t(SemRelease::one_word))));
  ASSERT_TRUE(send(copy, m).has_value());
  EXPECT_EQ(read_vec<uint32_t>(sem, 4), (std::vector<uint32_t>{0x1234, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef}));
  EXPECT_EQ(semaphore_writes_, 1);
  EXPECT_EQ(nonstalls_, 0);
}

TEST_F(CopyTest, FourWordSemaphoreWritesPayloadZeroAndCompletionTime) {
  const uint64_t sem = LINEAR_VA + 0x20000;
  write_vec(sem, std::vector<uint32_t>(4, 0xdeadbeef));
  CopyObject copy;
  auto m = concat(semaphore(sem, 77),
                  linear_copy(LINEAR_VA, LINEAR_VA + 0x4000, 4096,
                              LINEAR | LaunchSemaphoreType::make(uint32_t(SemRelease::four_words))));
  ASSERT_TRUE(send(copy, m).has_value());
  const auto words = read_vec<uint32_t>(sem, 4);
  EXPECT_EQ(words[0], 77u);
  EXPECT_EQ(words[1], 0u);
  EXPECT_EQ(join64(words[3], words[2]), clock_.now_ns());
  EXPECT_GT(clock_.now_ns(), 0u);
}

TEST_F(CopyTest, CopyChargesStreamCostInVirtualTime) {
  CopyObject copy;
  ASSERT_TRUE(send(copy, linear_copy(LINEAR_VA, LINEAR_VA + 0x10000, 0x8000)).has_value());
  EXPECT_EQ(clock_.now_ns(), kernels::stream_cost_ns(cost_, 2 * 0x8000));
}

TEST_F(CopyTest, InterruptTypesRaiseNonStall) {
  CopyObject copy;
  for (auto type : {Interrupt::blocking, Interrupt::non_blocking}) {
    ASSERT_TRUE(
        send(copy, linear_copy(LINEAR_VA, LINEAR_VA + 0x1000, 8, LINEAR | LaunchInterruptType::make(uint32_t(type))))
            .has_value());
  }
  EXPECT_EQ(nonstalls_, 2);
}

TEST_F(CopyTest, TransferNoneOnlyReleasesSemaphore) {
  const uint64_t sem = LINEAR_VA + 0x20000;
  write_vec(LINEAR_VA, pattern(64, 9));
  write_vec(LINEAR_VA + 0x1000, std::vector<uint8_t>(64, 0));
  CopyObject copy;
  // Layout bits clear: they do not matter without a transfer.
  auto m = concat(semaphore(sem, 5), linear_copy(LINEAR_VA, LINEAR_VA + 0x1000, 64,
                                                 LaunchSemaphoreType::make(uint32_t(SemRelease::one_word))));
  ASSERT_TRUE(send(copy, m).has_value());
  EXPECT_EQ(read32(sem), 5u);
  EXPECT_EQ(read_vec<uint8_t>(LINEAR_VA + 0x1000, 64), std::vector<uint8_t>(64, 0));
  EXPECT_EQ(clock_.now_ns(), 0u);
}

TEST_F(CopyTest, LaunchWithNothingToDoHasNoEngineWork) {
  CopyObject copy;
  ChannelContext ctx = context();
  auto out = copy.method(ctx, LAUNCH_DMA, 0);
  ASSERT_TRUE(out.has_value());
  EXPECT_FALSE(out->has_value());
}

TEST_F(CopyTest, UnmappedDestinationFaultsWithAddress) {
  const uint64_t dst = UNMAPPED_VA + 0x10;
  CopyObject copy;
  auto r = send(copy, linear_copy(LINEAR_VA, dst, 64));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, regs::ChannelError::mmu_fault);
  EXPECT_EQ(r.error().method, LAUNCH_DMA);
  ASSERT_TRUE(r.error().mmu.has_value());
  EXPECT_EQ(r.error().mmu->reason, regs::FaultReason::pt_not_present);
  EXPECT_EQ(align_down(r.error().mmu->va, fmt::SMALL_PAGE), UNMAPPED_VA);
  EXPECT_TRUE(r.error().mmu->write);
  EXPECT_EQ(r.error().mmu->unit, regs::FaultUnit::ce0);
  EXPECT_EQ(r.error().mmu->chid, CHID);
  EXPECT_EQ(r.error().addr, r.error().mmu->va);
}

TEST_F(CopyTest, SourceRunningOffMappedPagesFaultsOnFirstUnmappedPage) {
  const uint64_t end = LINEAR_VA + DATA_BYTES;
  CopyObject copy;
  auto r = send(copy, linear_copy(end - 100, LINEAR_VA, 200));
  ASSERT_FALSE(r.has_value());
  ASSERT_TRUE(r.error().mmu.has_value());
  EXPECT_EQ(r.error().mmu->reason, regs::FaultReason::page_not_present);
  EXPECT_EQ(r.error().mmu->va, end);
  EXPECT_FALSE(r.error().mmu->write);
}

TEST_F(CopyTest, BlockLinearSourceIsBadCopy) {
  expect_refused(linear_copy(LINEAR_VA, LINEAR_VA + 0x1000, 64, LINEAR & ~LaunchSrcPitch::mask),
                 regs::ChannelError::bad_copy);
}

TEST_F(CopyTest, BlockLinearDestinationIsBadCopy) {
  expect_refused(linear_copy(LINEAR_VA, LINEAR_VA + 0x1000, 64, LINEAR & ~LaunchDstPitch::mask),
                 regs::ChannelError::bad_copy);
}

TEST_F(CopyTest, RemapIsBadCopy) {
  expect_refused(linear_copy(LINEAR_VA, LINEAR_VA + 0x1000, 64, LINEAR | LaunchRemap::make(1)),
                 regs::ChannelError::bad_copy);
}

TEST_F(CopyTest, PhysicalAddressingIsBadCopy) {
  expect_refused(concat({{ADDRESSING_MODE, 1}}, linear_copy(LINEAR_VA, LINEAR_VA + 0x1000, 64)),
                 regs::ChannelError::bad_copy);
}

TEST_F(CopyTest, ReservedTransferTypeIsBadCopy) {
  expect_refused(linear_copy(LINEAR_VA, LINEAR_VA + 0x1000, 64, PITCH_BOTH | LaunchTransferType::make(3)),
                 regs::ChannelError::bad_copy);
}

TEST_F(CopyTest, RangeBeyondVaSpaceIsBadArgument) {
  CopyObject copy;
  auto r = send(copy, testing::copy_2d(fmt::VA_LIMIT - 0x1000, LINEAR_VA, 16, 0xffffffff, 0xffffffff, 16));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, regs::ChannelError::bad_argument);
  EXPECT_EQ(r.error().addr, fmt::VA_LIMIT - 0x1000);
}

TEST_F(CopyTest, UnknownMethodIsIllegal) {
  CopyObject copy;
  auto r = send(copy, {{0x0104, 0}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, regs::ChannelError::illegal_method);
  EXPECT_EQ(r.error().method, 0x0104u);
}

TEST_F(CopyTest, StateMethodsLatchRegisters) {
  CopyObject copy;
  ASSERT_TRUE(send(copy, {{PITCH_IN, 11}, {PITCH_OUT, 22}, {LINE_LENGTH_IN, 33}, {LINE_COUNT, 44}}).has_value());
  EXPECT_EQ(copy.state().pitch_in, 11u);
  EXPECT_EQ(copy.state().pitch_out, 22u);
  EXPECT_EQ(copy.state().line_length_in, 33u);
  EXPECT_EQ(copy.state().line_count, 44u);
  EXPECT_STREQ(CopyObject::method_name(LAUNCH_DMA), "LAUNCH_DMA");
  EXPECT_EQ(CopyObject::method_name(0x0104), nullptr);
}

}  // namespace
}  // namespace vgpu::gpu
