// SPDX-License-Identifier: GPL-2.0-or-later
#include "vgpu/bits.h"

#include <gtest/gtest.h>

#include "vgpu/classes.h"
#include "vgpu/formats.h"
#include "vgpu/regs.h"

namespace vgpu {
namespace {

TEST(Field, GetMakeSetRoundTrip) {
  using F = Field<11, 4>;
  EXPECT_EQ(F::mask, 0xff0u);
  EXPECT_EQ(F::make(0xab), 0xab0u);
  EXPECT_EQ(F::get(0x12ab5u), 0xabu);
  EXPECT_EQ(F::set(0xffffffffu, 0), 0xfffff00fu);
}

TEST(Field, SixtyFourBitFieldCoversHighBits) {
  using F = Field64<63, 36>;
  EXPECT_EQ(F::get(F::make(0xfffffff)), 0xfffffffu);
  EXPECT_EQ(F::mask, 0xfffffff000000000ull);
}

TEST(RegArray, IndexesAndContains) {
  constexpr RegArray32 a{0x3000, 8, 128};
  EXPECT_EQ(a[2].offset, 0x3010u);
  EXPECT_TRUE(a.contains(0x3010));
  EXPECT_FALSE(a.contains(0x3014));
  EXPECT_FALSE(a.contains(0x3400));
  EXPECT_EQ(a.index_of(0x3018), 3u);
}

TEST(Regs, Boot0ReportsGf100) {
  EXPECT_EQ(regs::pmc::Boot0Chipset::get(regs::pmc::BOOT_0_VALUE), regs::CHIPSET_GF100);
  EXPECT_NE(regs::pmc::BOOT_0_VALUE & 0x1f000000u, 0u);  // nouveau's "new encoding" test
}

TEST(Formats, PdeEncodesBothTables) {
  const uint64_t v = fmt::pde::make(0x123000, 0x456000);
  EXPECT_EQ(fmt::pde::spt_addr(v), 0x123000u);
  EXPECT_EQ(fmt::pde::lpt_addr(v), 0x456000u);
  EXPECT_EQ(fmt::pde::SptTarget::get(v), uint64_t(fmt::PdeTarget::vram));
}

TEST(Formats, PteEncodesAddressAndFlags) {
  const uint64_t v = fmt::pte::make(0x7654000, {.read_only = true});
  EXPECT_EQ(fmt::pte::addr(v), 0x7654000u);
  EXPECT_TRUE(fmt::pte::Valid::get(v));
  EXPECT_TRUE(fmt::pte::ReadOnly::get(v));
}

TEST(Formats, GpEntryRoundTrip) {
  const auto e = fmt::gp::make(0x12'3456'7890ull & ~3ull, 77);
  EXPECT_EQ(fmt::gp::va(e), 0x12'3456'7890ull & ~3ull);
  EXPECT_EQ(fmt::gp::Length::get(e.w1), 77u);
}

TEST(Formats, MethodHeaderMatchesNouveauEncoding) {
  // nouveau: incrementing 0x20000000 | (n << 16) | (subc << 13) | (mthd >> 2)
  EXPECT_EQ(fmt::mthd::inc(4, 0x300, 2), 0x20000000u | (2u << 16) | (4u << 13) | (0x300u >> 2));
  EXPECT_EQ(fmt::mthd::immediate(0, 0x50, 5), 0x80000000u | (5u << 16) | (0x50u >> 2));
}

}  // namespace
}  // namespace vgpu
