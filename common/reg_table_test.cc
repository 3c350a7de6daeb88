// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/reg_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "vgpu/regs.h"

namespace vgpu {
namespace {

constexpr Reg32 A{0x100};
constexpr Reg32 B{0x104};
constexpr RegArray32 EVEN{0x3000, 8, 16};  // interleaved with ODD
constexpr RegArray32 ODD{0x3004, 8, 16};
constexpr RegArray32 WINDOW{0x700000, 4, 0x40000};  // too large to hash

// Each test's table, with the guest errors it reported.
class RegisterTableTest : public ::testing::Test {
 protected:
  std::vector<std::string> errors;
  RegisterTable t{[this](const std::string& e) { errors.push_back(e); }};
  void add(RegRow r) { ASSERT_TRUE(t.add(std::move(r)).has_value()); }
  // `count` guest errors were reported, the first naming `what`.
  void expect_errors(size_t count, const std::string& what) {
    ASSERT_EQ(errors.size(), count);
    EXPECT_NE(errors[0].find(what), std::string::npos) << errors[0];
  }
};

TEST_F(RegisterTableTest, UnknownOffsetReadsBadRegisterAndIsAGuestError) {
  EXPECT_EQ(t.read(0x200), regs::BAD_REGISTER);
  t.write(0x200, 1);
  EXPECT_EQ(t.stats().bad_reads, 1u);
  EXPECT_EQ(t.stats().bad_writes, 1u);
  expect_errors(2, "unimplemented register 0x200");
}

TEST_F(RegisterTableTest, PlainRowKeepsTheWritableBitsOnly) {
  uint32_t reg = 0xf0;
  add(plain("A", A, reg, 0x0f));
  t.write(A.offset, 0xff);
  EXPECT_EQ(reg, 0xffu);
  t.write(A.offset, 0x00);
  EXPECT_EQ(t.read(A.offset), 0xf0u);
  EXPECT_TRUE(errors.empty());
}

TEST_F(RegisterTableTest, PlainRowRunsItsAfterHookOnWrites) {
  uint32_t reg = 0;
  int calls = 0;
  add(plain("A", A, reg).then([&] { ++calls; }));
  t.write(A.offset, 1);
  (void)t.read(A.offset);
  EXPECT_EQ(calls, 1);
}

TEST_F(RegisterTableTest, ConstantIgnoresWritesAsAGuestErrorNamingIt) {
  add(constant("BOOT", A, 0x1234));
  t.write(A.offset, 0);
  EXPECT_EQ(t.read(A.offset), 0x1234u);
  EXPECT_EQ(t.stats().ro_writes, 1u);
  expect_errors(1, "read-only register BOOT");
}

TEST_F(RegisterTableTest, ReadOnlyRowComputesAndRefusesWrites) {
  uint32_t source = 7;
  add(read_only("DERIVED", A, [&](uint32_t) { return source * 2; }));
  EXPECT_EQ(t.read(A.offset), 14u);
  source = 8;
  EXPECT_EQ(t.read(A.offset), 16u);
  t.write(A.offset, 1);
  EXPECT_EQ(t.stats().ro_writes, 1u);
}

TEST_F(RegisterTableTest, WriteOneToClearClearsOnlyClearableBitsWritten) {
  uint32_t reg = 0xff;
  add(rw1c("INTR", A, reg, 0x0f));
  t.write(A.offset, 0x33);
  EXPECT_EQ(reg, 0xfcu);
}

TEST_F(RegisterTableTest, WriteOnlyReadsZeroAndCallsItsHandler) {
  uint32_t got = 0;
  add(write_only("TRIGGER", A, [&](uint32_t, uint32_t v) { got = v; }));
  t.write(A.offset, 5);
  EXPECT_EQ(got, 5u);
  EXPECT_EQ(t.read(A.offset), 0u);
  EXPECT_TRUE(errors.empty());
}

TEST_F(RegisterTableTest, SensitiveRowMayReadItsStorageAndCountsWrites) {
  uint32_t reg = 3;
  add(sensitive("CTRL", A, reg, [&](uint32_t, uint32_t v) { reg = v + 1; }));
  t.write(A.offset, 9);
  EXPECT_EQ(t.read(A.offset), 10u);
  EXPECT_EQ(t.stats().sensitive_writes, 1u);
}

TEST_F(RegisterTableTest, InterleavedArraysResolveToTheirOwnRowAndIndex) {
  std::vector<uint32_t> even(16), odd(16);
  add(plain("EVEN", EVEN, even.data()));
  add(sensitive(
      "ODD", ODD, [&](uint32_t i) { return odd[i]; }, [&](uint32_t i, uint32_t v) { odd[i] = v; }));
  t.write(EVEN[5].offset, 50);
  t.write(ODD[5].offset, 51);
  EXPECT_EQ(even[5], 50u);
  EXPECT_EQ(odd[5], 51u);
  EXPECT_STREQ(t.find(ODD[15].offset)->name, "ODD");
  EXPECT_EQ(t.find(ODD[15].offset + 8), nullptr);
}

TEST_F(RegisterTableTest, LargeWindowIsFoundWithTheIndex) {
  uint32_t last = 0;
  add(sensitive(
      "PRAMIN", WINDOW, [](uint32_t i) { return i; }, [&](uint32_t i, uint32_t) { last = i; }));
  EXPECT_EQ(t.read(WINDOW[0x3ffff].offset), 0x3ffffu);
  t.write(WINDOW[7].offset, 1);
  EXPECT_EQ(last, 7u);
}

TEST_F(RegisterTableTest, GatedRowsReadDisabledAndDropWritesWhileClosed) {
  uint32_t reg = 1;
  bool open = false;
  add(plain("T", A, reg).gated(Gate::ptimer));
  t.set_gate([&](Gate g) { return g != Gate::ptimer || open; });
  EXPECT_EQ(t.read(A.offset), regs::BAD_DISABLED_UNIT);
  t.write(A.offset, 5);
  EXPECT_EQ(reg, 1u);
  EXPECT_EQ(t.stats().disabled_reads, 1u);
  EXPECT_EQ(t.stats().disabled_writes, 1u);
  open = true;
  EXPECT_EQ(t.read(A.offset), 1u);
}

TEST_F(RegisterTableTest, OverlappingRowIsRefused) {
  uint32_t a = 0, b = 0;
  add(plain("A", A, a));
  auto again = t.add(plain("A2", A, b));
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.error().message.find("A2"), std::string::npos);
  EXPECT_FALSE(t.add(plain("WIN", RegArray32{0x0fc, 4, 2000}, &a)).has_value());
}

TEST_F(RegisterTableTest, RowsWithoutTheirBehaviourAreRefused) {
  EXPECT_FALSE(t.add(RegRow{.name = "P", .range = {B.offset, 4, 1}, .kind = RegKind::plain}).has_value());
  EXPECT_FALSE(t.add(RegRow{.name = "S", .range = {B.offset, 4, 1}, .kind = RegKind::sensitive}).has_value());
  EXPECT_FALSE(t.add(RegRow{.name = "R", .range = {B.offset, 4, 1}, .kind = RegKind::read_only}).has_value());
  EXPECT_FALSE(t.add(RegRow{.name = "E", .range = {B.offset, 4, 0}, .kind = RegKind::constant}).has_value());
  EXPECT_EQ(t.size(), 0u);
}

TEST_F(RegisterTableTest, KindNamesAreDistinct) {
  EXPECT_STREQ(reg_kind_name(RegKind::plain), "plain");
  EXPECT_STREQ(reg_kind_name(RegKind::sensitive), "sensitive");
  EXPECT_STRNE(reg_kind_name(RegKind::read_only), reg_kind_name(RegKind::write_only));
}

}  // namespace
}  // namespace vgpu
