// SPDX-License-Identifier: GPL-2.0-or-later
// ptx/params.h: parameters land at the entry's offsets; a value of the
// wrong size, a missing pointer or too many values are refused.
#include "ptx/params.h"

#include <gtest/gtest.h>

#include <cstring>

#include "ptx/testing/param_bytes.h"

namespace vgpu::ptx {
namespace {

using testing::at;

// k(.u8 a, .u64 b, .f32 c, .align 8 .b8 s[16]): offsets 0, 8, 16, 24.
const EntryInfo& entry() {
  static auto m = [] {
    auto r = parse_module(
        ".version 7.0\n.target sm_70\n.address_size 64\n"
        ".visible .entry k(.param .u8 a, .param .u64 b, .param .f32 c, .param .align 8 .b8 s[16])\n{\nret;\n}\n");
    EXPECT_TRUE(r) << r.error().message;
    return *r;
  }();
  return m->entries().at(0);
}

TEST(PtxParams, ValuesLandAtTheEntrysOffsets) {
  ASSERT_EQ(entry().param_bytes, 40u);
  ParamBuffer p(entry());
  const uint8_t s[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  p.set(0, uint8_t{7}).set(1, uint64_t{0x1122334455667788}).set(2, 1.5f);
  EXPECT_TRUE(p.set_bytes(3, s, sizeof s));
  ASSERT_TRUE(p.ok());
  const std::vector<std::byte> b = std::move(p).take();
  EXPECT_EQ(at<uint8_t>(b, 0), 7u);
  EXPECT_EQ(at<uint64_t>(b, 8), 0x1122334455667788u);
  EXPECT_EQ(at<float>(b, 16), 1.5f);
  EXPECT_EQ(std::memcmp(b.data() + 24, s, sizeof s), 0);
}

TEST(PtxParams, WrongSizesAndIndicesAreRefusedAndWriteNothing) {
  ParamBuffer p(entry());
  p.set(1, uint32_t{5});  // a u64 parameter
  EXPECT_FALSE(p.ok());
  EXPECT_FALSE(p.set_bytes(4, "x", 1));  // no parameter 4
  for (std::byte x : p.bytes()) EXPECT_EQ(x, std::byte{0});
}

TEST(PtxParams, PointerForm) {
  uint8_t a = 3;
  uint64_t b = 99;
  float c = -2.0f;
  uint8_t s[16] = {};
  const void* values[] = {&a, &b, &c, s};
  auto buf = pack_params(entry(), values);
  ASSERT_TRUE(buf);
  EXPECT_EQ(at<uint64_t>(*buf, 8), 99u);
  EXPECT_EQ(at<float>(*buf, 16), -2.0f);
  const void* missing[] = {&a, nullptr, &c, s};
  EXPECT_FALSE(pack_params(entry(), missing));
}

TEST(PtxParams, IntegerForm) {
  auto buf = pack_params(entry(), {0x1ff, 42});  // the low byte of 0x1ff for the u8
  ASSERT_TRUE(buf);
  EXPECT_EQ(at<uint8_t>(*buf, 0), 0xffu);
  EXPECT_EQ(at<uint64_t>(*buf, 8), 42u);
  EXPECT_FALSE(pack_params(entry(), {1, 2, 3, 4, 5}));  // more values than parameters
  EXPECT_FALSE(pack_params(entry(), {1, 2, 3, 4}));     // a 16-byte struct from an integer
}

}  // namespace
}  // namespace vgpu::ptx
