// SPDX-License-Identifier: GPL-2.0-or-later
// End to end through the engine threads: a copy (0x90B5) launched from a
// push buffer runs on the copy engine while the channel waits for it.
#include <gtest/gtest.h>

#include "gpu/testing/harness.h"
#include "vgpu/classes.h"

namespace vgpu::gpu {
namespace {

using namespace regs;
using namespace cls::copy;
using testing::Harness;
using namespace testing::copy_layout;

std::vector<uint32_t> copy_push(const testing::Channel& c, uint32_t payload) {
  auto words = testing::copy_line(COPY_SUBCH, c.va(SRC_OFF), c.va(DST_OFF), BYTES, c.va(SEM_OFF), payload);
  words.push_back(fmt::mthd::immediate(0, cls::host::SET_REFERENCE, 1));
  return words;
}

TEST(Engines, CopyRunsOnTheCopyEngineAndReleasesItsSemaphore) {
  Harness h;
  auto& c = h.add_channel(3);
  h.commit_runlist({3});
  for (uint32_t i = 0; i < BYTES; i += 4) (void)h.vram().write32(c.phys(SRC_OFF + i), i * 3 + 1);
  h.submit(c, copy_push(c, 0x5e));
  ASSERT_TRUE(h.idle());
  ASSERT_EQ(h.chan_error(3), 0u);
  for (uint32_t i = 0; i < BYTES; i += 4) ASSERT_EQ(h.vram().read32(c.phys(DST_OFF + i)), i * 3 + 1);
  EXPECT_EQ(h.vram().read32(c.phys(SEM_OFF)), 0x5eu);
  EXPECT_EQ(h.userd(c, userd::REF), 1u);  // after the copy retired
}

TEST(Engines, CopiesOnTwoChannelsBothComplete) {
  Harness h(ClockKind::virtual_time);
  auto& a = h.add_channel(1);
  auto& b = h.add_channel(2);
  h.commit_runlist({1, 2});
  h.submit(a, copy_push(a, 0xa));
  h.submit(b, copy_push(b, 0xb));
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.vram().read32(a.phys(SEM_OFF)), 0xau);
  EXPECT_EQ(h.vram().read32(b.phys(SEM_OFF)), 0xbu);
  EXPECT_GT(h.gpu().clock().now_ns(), 0u);  // the engine charged its modeled cost
}

TEST(Engines, CopyFaultStopsOnlyItsChannel) {
  Harness h;
  auto& a = h.add_channel(1);
  auto& b = h.add_channel(2);
  h.commit_runlist({1, 2});
  auto push = copy_push(a, 1);
  push[10] = lo32(a.va(testing::CHAN_MEM_BYTES));  // destination outside the mapped window
  h.submit(a, push);
  ASSERT_TRUE(h.wait_error(1));
  EXPECT_NE(h.chan_error(1), 0u);
  h.submit(b, copy_push(b, 0xb));
  ASSERT_TRUE(h.idle());
  EXPECT_EQ(h.vram().read32(b.phys(SEM_OFF)), 0xbu);
}

}  // namespace
}  // namespace vgpu::gpu
