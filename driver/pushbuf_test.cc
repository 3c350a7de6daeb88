// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/pushbuf.h"

#include <gtest/gtest.h>

#include <vector>

#include "vgpu/classes.h"

namespace vgpu::driver {
namespace {

using fmt::mthd::Op;

// Decodes a header into its parts for the assertions below.
struct Decoded {
  Op op;
  uint32_t count;
  uint32_t subch;
  uint32_t method;
};
Decoded decode(uint32_t h) {
  return {static_cast<Op>(fmt::mthd::Opcode::get(h)), fmt::mthd::Count::get(h), fmt::mthd::Subch::get(h),
          fmt::mthd::Addr::get(h) << 2};
}

TEST(PushBuffer, IncrementingHeaderThenData) {
  PushBuffer pb;
  pb.inc(subch::COPY, cls::copy::OFFSET_IN_UPPER, {1, 2, 3, 4});
  ASSERT_EQ(pb.size(), 5u);
  auto d = decode(pb.words()[0]);
  EXPECT_EQ(d.op, Op::inc);
  EXPECT_EQ(d.count, 4u);
  EXPECT_EQ(d.subch, subch::COPY);
  EXPECT_EQ(d.method, cls::copy::OFFSET_IN_UPPER);
  EXPECT_EQ(pb.words()[4], 4u);
  // The encoding nouveau writes: 0x20000000 | n << 16 | subc << 13 | mthd >> 2.
  EXPECT_EQ(pb.words()[0], 0x20000000u | 4u << 16 | 4u << 13 | (cls::copy::OFFSET_IN_UPPER >> 2));
}

TEST(PushBuffer, NonIncrementingHeader) {
  PushBuffer pb;
  const uint32_t words[] = {7, 8, 9};
  pb.non_inc(subch::COMPUTE, cls::compute::LOAD_CONSTANT_BUFFER, words);
  auto d = decode(pb.words()[0]);
  EXPECT_EQ(d.op, Op::non_inc);
  EXPECT_EQ(d.count, 3u);
  EXPECT_EQ(d.method, cls::compute::LOAD_CONSTANT_BUFFER);
  EXPECT_EQ(pb.words()[3], 9u);
}

TEST(PushBuffer, IncrementOnceHeader) {
  PushBuffer pb;
  const uint32_t words[] = {1, 2};
  pb.one_inc(subch::HOST, cls::host::SEMAPHORE_A, words);
  EXPECT_EQ(decode(pb.words()[0]).op, Op::one_inc);
  EXPECT_EQ(decode(pb.words()[0]).count, 2u);
}

TEST(PushBuffer, ImmediateCarriesDataInHeader) {
  PushBuffer pb;
  pb.immediate(subch::HOST, cls::host::NON_STALL_INTERRUPT, 0x123);
  ASSERT_EQ(pb.size(), 1u);
  auto d = decode(pb.words()[0]);
  EXPECT_EQ(d.op, Op::immediate);
  EXPECT_EQ(d.count, 0x123u);
  EXPECT_EQ(d.method, cls::host::NON_STALL_INTERRUPT);
}

TEST(PushBuffer, ImmediateTooLargeFallsBackToIncrementing) {
  PushBuffer pb;
  pb.immediate(subch::HOST, cls::host::SEMAPHORE_C, fmt::mthd::IMMEDIATE_MAX + 1);
  ASSERT_EQ(pb.size(), 2u);
  EXPECT_EQ(decode(pb.words()[0]).op, Op::inc);
  EXPECT_EQ(pb.words()[1], fmt::mthd::IMMEDIATE_MAX + 1);
}

TEST(PushBuffer, LongNonIncrementingRunSplitsAtCountLimit) {
  PushBuffer pb;
  std::vector<uint32_t> data(fmt::mthd::Count::max + 3, 5);
  pb.non_inc(subch::COMPUTE, cls::compute::LOAD_CONSTANT_BUFFER, data);
  ASSERT_EQ(pb.size(), data.size() + 2);
  auto first = decode(pb.words()[0]);
  EXPECT_EQ(first.count, fmt::mthd::Count::max);
  auto second = decode(pb.words()[1 + fmt::mthd::Count::max]);
  EXPECT_EQ(second.op, Op::non_inc);
  EXPECT_EQ(second.count, 3u);
  EXPECT_EQ(second.method, cls::compute::LOAD_CONSTANT_BUFFER);
}

TEST(PushBuffer, HeadersAppendInOrder) {
  PushBuffer pb;
  pb.immediate(0, cls::host::NOP, 0).inc(0, cls::host::SEMAPHORE_A, {1});
  ASSERT_EQ(pb.size(), 3u);
  EXPECT_EQ(decode(pb.words()[0]).method, cls::host::NOP);
  EXPECT_EQ(decode(pb.words()[1]).method, cls::host::SEMAPHORE_A);
}

}  // namespace
}  // namespace vgpu::driver
