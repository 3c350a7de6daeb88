// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/regfile.h"

#include <gtest/gtest.h>

#include "vgpu/regs.h"

namespace vgpu::gpu {
namespace {

constexpr Reg32 A{0x100};
constexpr Reg32 B{0x104};
constexpr RegArray32 ARR{0x200, 8, 4};

TEST(RegisterFile, UnknownOffsetReadsBadRegisterAndCounts) {
  RegisterFile rf;
  EXPECT_EQ(rf.read(0x1234), regs::BAD_REGISTER);
  rf.write(0x1234, 1);
  EXPECT_EQ(rf.stats().bad_reads, 1u);
  EXPECT_EQ(rf.stats().bad_writes, 1u);
}

TEST(RegisterFile, StoredRegisterKeepsWritableBitsOnly) {
  RegisterFile rf;
  uint32_t s = 0;
  rf.add(stored_rw("A", A, Gate::none, s, 0xff));
  rf.write(A.offset, 0x1234);
  EXPECT_EQ(rf.read(A.offset), 0x34u);
}

TEST(RegisterFile, ReadOnlyIgnoresWrites) {
  RegisterFile rf;
  rf.add(constant_ro("A", A, Gate::none, 7));
  rf.write(A.offset, 9);
  EXPECT_EQ(rf.read(A.offset), 7u);
  EXPECT_EQ(rf.stats().ro_writes, 1u);
}

TEST(RegisterFile, WriteOneToClearClearsOnlyWrittenBits) {
  RegisterFile rf;
  uint32_t s = 0b1011;
  rf.add(stored_rw1c("A", A, Gate::none, s));
  rf.write(A.offset, 0b0010);
  EXPECT_EQ(rf.read(A.offset), 0b1001u);
}

TEST(RegisterFile, WriteOnlyReadsZero) {
  RegisterFile rf;
  uint32_t got = 0;
  rf.add(RegRecord{"A", single(A), Access::wo, Gate::none, nullptr, [&](uint32_t, uint32_t v) { got = v; }});
  rf.write(A.offset, 5);
  EXPECT_EQ(got, 5u);
  EXPECT_EQ(rf.read(A.offset), 0u);
}

TEST(RegisterFile, ArrayHandlersGetTheIndex) {
  RegisterFile rf;
  uint32_t vals[4] = {};
  rf.add(RegRecord{"ARR", ARR, Access::rw, Gate::none, [&](uint32_t i) { return vals[i]; },
                   [&](uint32_t i, uint32_t v) { vals[i] = v; }});
  rf.write(ARR[2].offset, 42);
  EXPECT_EQ(vals[2], 42u);
  EXPECT_EQ(rf.read(ARR[2].offset), 42u);
  EXPECT_EQ(rf.read(ARR[2].offset + 4), regs::BAD_REGISTER);   // between strides
}

TEST(RegisterFile, GatedUnitReadsBadDisabledUnit) {
  RegisterFile rf;
  uint32_t s = 3;
  bool enabled = false;
  rf.add(stored_rw("A", A, Gate::pfifo, s));
  rf.set_gate([&](Gate) { return enabled; });
  EXPECT_EQ(rf.read(A.offset), regs::BAD_DISABLED_UNIT);
  rf.write(A.offset, 9);
  enabled = true;
  EXPECT_EQ(rf.read(A.offset), 3u);
}

TEST(RegisterFile, OverlappingRecordIsRejected) {
  RegisterFile rf;
  uint32_t s = 0;
  rf.add(stored_rw("A", A, Gate::none, s));
  rf.add(stored_rw("A again", A, Gate::none, s));
  EXPECT_EQ(rf.stats().conflicts, 1u);
  EXPECT_EQ(rf.size(), 1u);
}

TEST(RegisterFile, LargeWindowIsFound) {
  RegisterFile rf;
  const RegArray32 window{0x700000, 4, 0x40000};
  rf.add(RegRecord{"W", window, Access::ro, Gate::none, [](uint32_t i) { return i; }, nullptr});
  EXPECT_EQ(rf.read(0x700000 + 4 * 1000), 1000u);
  EXPECT_EQ(rf.read(B.offset), regs::BAD_REGISTER);
}

}  // namespace
}  // namespace vgpu::gpu
