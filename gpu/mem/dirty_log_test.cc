// SPDX-License-Identifier: GPL-2.0-or-later
// The host-side dirty log of VRAM (docs/migration.md §5): marks only
// while logging, take moves and clears bits in QEMU's bitmap layout, and
// every Vram writer marks the pages it changed.
#include "gpu/mem/dirty_log.h"

#include <gtest/gtest.h>

#include <vector>

#include "gpu/mem/vram.h"

namespace vgpu::gpu {
namespace {

constexpr uint64_t PAGE = DirtyLog::PAGE;
constexpr uint64_t LOG_BYTES = 256 * PAGE;
constexpr uint64_t WORD_PAGES = DirtyLog::PAGES_PER_WORD;

std::vector<uint64_t> take_all(DirtyLog& log, uint64_t addr, uint64_t len) {
  std::vector<uint64_t> out((len / PAGE + WORD_PAGES - 1) / WORD_PAGES);
  log.take(addr, len, out);
  return out;
}

TEST(DirtyLog, MarksNothingWhileOff) {
  DirtyLog log(LOG_BYTES);
  log.mark(0, LOG_BYTES);
  EXPECT_EQ(take_all(log, 0, LOG_BYTES), std::vector<uint64_t>(4, 0));
}

TEST(DirtyLog, MarkCoversEveryTouchedPageAndTakeClears) {
  DirtyLog log(LOG_BYTES);
  log.start();
  log.mark(PAGE - 1, 2);           // pages 0 and 1
  log.mark(70 * PAGE + 8, 4);      // page 70
  log.mark(127 * PAGE, 3 * PAGE);  // pages 127, 128, 129
  std::vector<uint64_t> out(4);
  EXPECT_EQ(log.take(0, LOG_BYTES, out), 6u);
  EXPECT_EQ(out[0], 0b11u);
  EXPECT_EQ(out[1], (uint64_t{1} << 6) | (uint64_t{1} << 63));
  EXPECT_EQ(out[2], 0b11u);
  EXPECT_EQ(take_all(log, 0, LOG_BYTES), std::vector<uint64_t>(4, 0)) << "take did not clear";
}

TEST(DirtyLog, TakeOfARangeStartingMidWordShiftsToBitZero) {
  DirtyLog log(LOG_BYTES);
  log.start();
  const uint64_t base = 32 * PAGE;  // a partition at bit 32 of a word
  log.mark(base, PAGE);
  log.mark(base + 40 * PAGE, PAGE);
  log.mark(base - PAGE, PAGE);  // outside the range: stays
  std::vector<uint64_t> out(2);
  EXPECT_EQ(log.take(base, 128 * PAGE, out), 2u);
  EXPECT_EQ(out[0], 1u | (uint64_t{1} << 40));
  EXPECT_EQ(out[1], 0u);
  EXPECT_EQ(take_all(log, 0, 64 * PAGE)[0], uint64_t{1} << 31);
}

TEST(DirtyLog, MarksAfterStopAreDroppedButEarlierOnesKept) {
  DirtyLog log(LOG_BYTES);
  log.start();
  log.mark(0, 1);
  log.stop();
  log.mark(PAGE, 1);
  EXPECT_EQ(take_all(log, 0, LOG_BYTES)[0], 1u);
}

TEST(DirtyLog, MisalignedOrOutOfRangeTakeMovesNothing) {
  DirtyLog log(LOG_BYTES);
  log.start();
  log.mark(0, LOG_BYTES);
  std::vector<uint64_t> out(8);
  EXPECT_EQ(log.take(1, PAGE, out), 0u);
  EXPECT_EQ(log.take(0, LOG_BYTES + PAGE, out), 0u);
  EXPECT_EQ(log.take(0, LOG_BYTES, std::span(out).first(1)), 0u) << "out too small";
  EXPECT_EQ(log.take(0, LOG_BYTES, out), 256u);
}

TEST(DirtyLog, EveryVramWriterMarksItsPages) {
  auto vram = Vram::create(LOG_BYTES);
  ASSERT_TRUE(vram);
  DirtyLog& log = (*vram)->dirty_log();
  log.start();
  const uint8_t bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE((*vram)->write32(1 * PAGE, 1));
  ASSERT_TRUE((*vram)->write64(2 * PAGE, 1));
  ASSERT_TRUE((*vram)->write(3 * PAGE + PAGE - 4, bytes, sizeof bytes));  // pages 3 and 4
  ASSERT_TRUE((*vram)->fill(5 * PAGE, std::byte{1}, 1));
  ASSERT_TRUE((*vram)->zero(8 * PAGE, 2 * PAGE));  // whole pages: a hole
  ASSERT_TRUE((*vram)->zero(11 * PAGE + 16, 16));  // part of a page: written
  (void)(*vram)->read32(20 * PAGE);                // reads mark nothing
  EXPECT_EQ(take_all(log, 0, LOG_BYTES)[0], 0b1011'0011'1110u);
  ASSERT_FALSE((*vram)->write32(LOG_BYTES, 1));  // refused: nothing marked
  EXPECT_EQ(take_all(log, 0, LOG_BYTES), std::vector<uint64_t>(4, 0));
}

}  // namespace
}  // namespace vgpu::gpu
