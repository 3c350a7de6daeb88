// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/pushbuf.h"

#include <gtest/gtest.h>

namespace vgpu::gpu::pushbuf {
namespace {

using fmt::mthd::Op;

TEST(Pushbuf, IncrementingHeader) {
  const Command c = decode(fmt::mthd::inc(3, 0x200, 5));
  EXPECT_EQ(c.kind, Kind::inc);
  EXPECT_EQ(c.subch, 3u);
  EXPECT_EQ(c.method, 0x200u);
  EXPECT_EQ(c.count, 5u);
  EXPECT_EQ(method_of(c, 2), 0x208u);
}

TEST(Pushbuf, NonIncrementingSendsEveryWordToOneMethod) {
  const Command c = decode(fmt::mthd::non_inc(1, 0x300, 4));
  EXPECT_EQ(c.kind, Kind::non_inc);
  EXPECT_EQ(method_of(c, 3), 0x300u);
}

TEST(Pushbuf, OneIncAdvancesOnce) {
  const Command c = decode(fmt::mthd::one_inc(0, 0x400, 3));
  EXPECT_EQ(method_of(c, 0), 0x400u);
  EXPECT_EQ(method_of(c, 1), 0x404u);
  EXPECT_EQ(method_of(c, 2), 0x404u);
}

TEST(Pushbuf, ImmediateCarriesDataInTheHeader) {
  const Command c = decode(fmt::mthd::immediate(2, 0x10, 0x1abc));
  EXPECT_EQ(c.kind, Kind::immediate);
  EXPECT_EQ(c.immediate, 0x1abcu);
  EXPECT_EQ(c.count, 0u);
  EXPECT_EQ(methods(c), 1u);
}

TEST(Pushbuf, ZeroWordIsNop) { EXPECT_EQ(decode(0).kind, Kind::nop); }

TEST(Pushbuf, LegacyIncrementingHeader) {
  const uint32_t h = fmt::mthd::Opcode::make(uint32_t(Op::legacy_inc)) | fmt::mthd::LegacyCount::make(2) |
                     fmt::mthd::Subch::make(5) | fmt::mthd::LegacyAddr::make(0x104 >> 2);
  const Command c = decode(h);
  EXPECT_EQ(c.kind, Kind::inc);
  EXPECT_EQ(c.subch, 5u);
  EXPECT_EQ(c.method, 0x104u);
  EXPECT_EQ(c.count, 2u);
}

TEST(Pushbuf, LegacyNonIncrementingHeader) {
  const uint32_t h = fmt::mthd::Opcode::make(uint32_t(Op::legacy_non_inc)) | fmt::mthd::LegacyCount::make(3) |
                     fmt::mthd::LegacyAddr::make(0x10 >> 2);
  const Command c = decode(h);
  EXPECT_EQ(c.kind, Kind::non_inc);
  EXPECT_EQ(c.count, 3u);
  EXPECT_EQ(c.method, 0x10u);
}

TEST(Pushbuf, LegacyTertiaryOperationIsIgnored) {
  const uint32_t h = fmt::mthd::LegacyTert::make(1) | 0x1230;
  EXPECT_EQ(decode(h).kind, Kind::nop);
}

TEST(Pushbuf, ReservedOpcodeIsIllegal) {
  EXPECT_EQ(decode(fmt::mthd::Opcode::make(uint32_t(Op::reserved))).kind, Kind::illegal);
}

TEST(Pushbuf, EndSegment) {
  EXPECT_EQ(decode(fmt::mthd::Opcode::make(uint32_t(Op::end_segment))).kind, Kind::end_segment);
}

}  // namespace
}  // namespace vgpu::gpu::pushbuf
