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

struct Fixture {
  std::vector<std::string> errors;
  RegisterTable t{[this](const std::string& e) { errors.push_back(e); }};
  void add(RegRow r) { ASSERT_TRUE(t.add(std::move(r)).has_value()); }
  // `count` guest errors were reported, the first naming `what`.
  void expect_errors(size_t count, const std::string& what) {
    ASSERT_EQ(errors.size(), count);
    EXPECT_NE(errors[0].find(what), std::string::npos) << errors[0];
  }
};

TEST(RegisterTable, UnknownOffsetReadsBadRegisterAndIsAGuestError) {
  Fixture f;
  EXPECT_EQ(f.t.read(0x200), regs::BAD_REGISTER);
  f.t.write(0x200, 1);
  EXPECT_EQ(f.t.stats().bad_reads, 1u);
  EXPECT_EQ(f.t.stats().bad_writes, 1u);
  f.expect_errors(2, "unimplemented register 0x200");
}

TEST(RegisterTable, PlainRowKeepsTheWritableBitsOnly) {
  Fixture f;
  uint32_t reg = 0xf0;
  f.add(plain("A", A, reg, 0x0f));
  f.t.write(A.offset, 0xff);
  EXPECT_EQ(reg, 0xffu);
  f.t.write(A.offset, 0x00);
  EXPECT_EQ(f.t.read(A.offset), 0xf0u);
  EXPECT_TRUE(f.errors.empty());
}

TEST(RegisterTable, PlainRowRunsItsAfterHookOnWrites) {
  Fixture f;
  uint32_t reg = 0;
  int calls = 0;
  f.add(plain("A", A, reg).then([&] { ++calls; }));
  f.t.write(A.offset, 1);
  (void)f.t.read(A.offset);
  EXPECT_EQ(calls, 1);
}

TEST(RegisterTable, ConstantIgnoresWritesAsAGuestErrorNamingIt) {
  Fixture f;
  f.add(constant("BOOT", A, 0x1234));
  f.t.write(A.offset, 0);
  EXPECT_EQ(f.t.read(A.offset), 0x1234u);
  EXPECT_EQ(f.t.stats().ro_writes, 1u);
  f.expect_errors(1, "read-only register BOOT");
}

TEST(RegisterTable, ReadOnlyRowComputesAndRefusesWrites) {
  Fixture f;
  uint32_t source = 7;
  f.add(read_only("DERIVED", A, [&](uint32_t) { return source * 2; }));
  EXPECT_EQ(f.t.read(A.offset), 14u);
  source = 8;
  EXPECT_EQ(f.t.read(A.offset), 16u);
  f.t.write(A.offset, 1);
  EXPECT_EQ(f.t.stats().ro_writes, 1u);
}

TEST(RegisterTable, WriteOneToClearClearsOnlyClearableBitsWritten) {
  Fixture f;
  uint32_t reg = 0xff;
  f.add(rw1c("INTR", A, reg, 0x0f));
  f.t.write(A.offset, 0x33);
  EXPECT_EQ(reg, 0xfcu);
}

TEST(RegisterTable, WriteOnlyReadsZeroAndCallsItsHandler) {
  Fixture f;
  uint32_t got = 0;
  f.add(write_only("TRIGGER", A, [&](uint32_t, uint32_t v) { got = v; }));
  f.t.write(A.offset, 5);
  EXPECT_EQ(got, 5u);
  EXPECT_EQ(f.t.read(A.offset), 0u);
  EXPECT_TRUE(f.errors.empty());
}

TEST(RegisterTable, SensitiveRowMayReadItsStorageAndCountsWrites) {
  Fixture f;
  uint32_t reg = 3;
  f.add(sensitive("CTRL", A, reg, [&](uint32_t, uint32_t v) { reg = v + 1; }));
  f.t.write(A.offset, 9);
  EXPECT_EQ(f.t.read(A.offset), 10u);
  EXPECT_EQ(f.t.stats().sensitive_writes, 1u);
}

TEST(RegisterTable, InterleavedArraysResolveToTheirOwnRowAndIndex) {
  Fixture f;
  std::vector<uint32_t> even(16), odd(16);
  f.add(plain("EVEN", EVEN, even.data()));
  f.add(sensitive(
      "ODD", ODD, [&](uint32_t i) { return odd[i]; }, [&](uint32_t i, uint32_t v) { odd[i] = v; }));
  f.t.write(EVEN[5].offset, 50);
  f.t.write(ODD[5].offset, 51);
  EXPECT_EQ(even[5], 50u);
  EXPECT_EQ(odd[5], 51u);
  EXPECT_STREQ(f.t.find(ODD[15].offset)->name, "ODD");
  EXPECT_EQ(f.t.find(ODD[15].offset + 8), nullptr);
}

TEST(RegisterTable, LargeWindowIsFoundWithTheIndex) {
  Fixture f;
  uint32_t last = 0;
  f.add(sensitive(
      "PRAMIN", WINDOW, [](uint32_t i) { return i; }, [&](uint32_t i, uint32_t) { last = i; }));
  EXPECT_EQ(f.t.read(WINDOW[0x3ffff].offset), 0x3ffffu);
  f.t.write(WINDOW[7].offset, 1);
  EXPECT_EQ(last, 7u);
}

TEST(RegisterTable, GatedRowsReadDisabledAndDropWritesWhileClosed) {
  Fixture f;
  uint32_t reg = 1;
  bool open = false;
  f.add(plain("T", A, reg).gated(Gate::ptimer));
  f.t.set_gate([&](Gate g) { return g != Gate::ptimer || open; });
  EXPECT_EQ(f.t.read(A.offset), regs::BAD_DISABLED_UNIT);
  f.t.write(A.offset, 5);
  EXPECT_EQ(reg, 1u);
  EXPECT_EQ(f.t.stats().disabled_reads, 1u);
  EXPECT_EQ(f.t.stats().disabled_writes, 1u);
  open = true;
  EXPECT_EQ(f.t.read(A.offset), 1u);
}

TEST(RegisterTable, OverlappingRowIsRefused) {
  Fixture f;
  uint32_t a = 0, b = 0;
  f.add(plain("A", A, a));
  auto again = f.t.add(plain("A2", A, b));
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.error().message.find("A2"), std::string::npos);
  EXPECT_FALSE(f.t.add(plain("WIN", RegArray32{0x0fc, 4, 2000}, &a)).has_value());
}

TEST(RegisterTable, RowsWithoutTheirBehaviourAreRefused) {
  Fixture f;
  EXPECT_FALSE(f.t.add(RegRow{.name = "P", .range = {B.offset, 4, 1}, .kind = RegKind::plain}).has_value());
  EXPECT_FALSE(f.t.add(RegRow{.name = "S", .range = {B.offset, 4, 1}, .kind = RegKind::sensitive}).has_value());
  EXPECT_FALSE(f.t.add(RegRow{.name = "R", .range = {B.offset, 4, 1}, .kind = RegKind::read_only}).has_value());
  EXPECT_FALSE(f.t.add(RegRow{.name = "E", .range = {B.offset, 4, 0}, .kind = RegKind::constant}).has_value());
  EXPECT_EQ(f.t.size(), 0u);
}

TEST(RegisterTable, KindNamesAreDistinct) {
  EXPECT_STREQ(reg_kind_name(RegKind::plain), "plain");
  EXPECT_STREQ(reg_kind_name(RegKind::sensitive), "sensitive");
  EXPECT_STRNE(reg_kind_name(RegKind::read_only), reg_kind_name(RegKind::write_only));
}

}  // namespace
}  // namespace vgpu
