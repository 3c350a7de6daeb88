// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/wire_codec.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

namespace vgpu {
namespace {

struct Sample {
  uint64_t big = 0;
  uint32_t word = 0;
  bool flag = false;
  uint8_t byte = 0;
  std::array<uint32_t, 3> words{};
};

template <typename S, typename Io>
void sample_fields(S& s, Io& io) {
  io.fields(s.big, s.word, s.flag, s.byte, s.words);
}

TEST(WireCodec, FieldsWriteWhatTheTypedCallsWrite) {
  const Sample s{0x0102030405060708, 0xa0b0c0d0, true, 0x7f, {1, 2, 3}};
  Writer by_fields;
  sample_fields(s, by_fields);
  Writer by_hand;
  by_hand.u64(s.big);
  by_hand.u32(s.word);
  by_hand.boolean(s.flag);
  by_hand.u8(s.byte);
  for (uint32_t w : s.words) by_hand.u32(w);
  EXPECT_EQ(by_fields.data(), by_hand.data());
  EXPECT_EQ(by_fields.size(), 8u + 4 + 1 + 1 + 3 * 4);
  EXPECT_EQ(by_fields.data()[0], 0x08);  // little endian
}

TEST(WireCodec, FieldsReadBackWhatFieldsWrote) {
  const Sample s{0x1122334455667788, 42, true, 9, {7, 8, 9}};
  Writer w;
  sample_fields(s, w);
  Reader r(w.data());
  Sample back;
  sample_fields(back, r);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.at_end());
  EXPECT_EQ(back.big, s.big);
  EXPECT_EQ(back.word, s.word);
  EXPECT_EQ(back.flag, s.flag);
  EXPECT_EQ(back.byte, s.byte);
  EXPECT_EQ(back.words, s.words);
}

TEST(WireCodec, FieldsPastTheEndFailAndReadZero) {
  const std::vector<uint8_t> short_input(8 + 4 + 1, 0xff);  // ends before `byte`
  Reader r(short_input);
  Sample back;
  sample_fields(back, r);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(back.word, 0xffffffffu);
  EXPECT_EQ(back.byte, 0);
  EXPECT_EQ(back.words, (std::array<uint32_t, 3>{}));
}

}  // namespace
}  // namespace vgpu
