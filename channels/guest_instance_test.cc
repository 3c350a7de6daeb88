// SPDX-License-Identifier: GPL-2.0-or-later
#include "channels/guest_instance.h"

#include <gtest/gtest.h>

#include "shadow/testing/fixture.h"
#include "vgpu/formats.h"
#include "vgpu/regs.h"

namespace vgpu::channels {
namespace {

using shadow::testing::Fixture;
namespace inst = regs::inst;
namespace ramfc = regs::ramfc;

constexpr uint64_t INST = 0x10000;
constexpr uint64_t PD = 0x100000;
constexpr uint64_t USERD = 0x20000;
constexpr uint64_t RING_VA = 0x1'0000'0000;
constexpr uint32_t LIMIT2 = 10;

class GuestInstanceTest : public ::testing::Test {
 protected:
  Fixture f;
  void w32(uint64_t off, uint32_t v) { f.vram->write32(Fixture::PART_BASE + INST + off, v); }
  void SetUp() override {
    w32(inst::PDB_LO, lo32(PD));
    w32(inst::PDB_HI, hi32(PD));
    w32(inst::LIMIT_LO, lo32(fmt::VA_LIMIT - 1));
    w32(inst::LIMIT_HI, hi32(fmt::VA_LIMIT - 1));
    w32(ramfc::SIGNATURE, ramfc::SIGNATURE_VALUE);
    w32(ramfc::GP_BASE, lo32(RING_VA));
    w32(ramfc::GP_BASE_HI, ramfc::GpBaseHiAddr::make(hi32(RING_VA)) | ramfc::GpBaseHiLimit2::make(LIMIT2));
    w32(ramfc::USERD_LO, lo32(USERD));
    w32(ramfc::USERD_HI, 0);
  }
};

TEST_F(GuestInstanceTest, ValidBlockIsRead) {
  auto g = read_guest_instance(f.guest, INST);
  ASSERT_TRUE(g) << g.error().what();
  EXPECT_EQ(g->pd(), PD);
  EXPECT_EQ(g->block.ramfc.gp_base, RING_VA);
  EXPECT_EQ(g->ring_entries(), 1u << LIMIT2);
  EXPECT_EQ(g->block.ramfc.userd, USERD);
  EXPECT_EQ(g->block.space.limit, fmt::VA_LIMIT - 1);
}

TEST_F(GuestInstanceTest, BlockOutsidePartitionIsRefused) {
  EXPECT_FALSE(read_guest_instance(f.guest, Fixture::PART_BYTES));
}

TEST_F(GuestInstanceTest, PageDirectoryOutsidePartitionIsRefused) {
  w32(inst::PDB_LO, 0);
  w32(inst::PDB_HI, 1);  // 4 GiB: beyond the 32 MiB partition
  auto g = read_guest_instance(f.guest, INST);
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find("page directory outside"), std::string::npos);
}

TEST_F(GuestInstanceTest, BadSignatureIsRefused) {
  w32(ramfc::SIGNATURE, 0xbeef);
  EXPECT_FALSE(read_guest_instance(f.guest, INST));
}

TEST_F(GuestInstanceTest, UserdOutsidePartitionIsRefused) {
  w32(ramfc::USERD_LO, lo32(Fixture::PART_BYTES));
  EXPECT_FALSE(read_guest_instance(f.guest, INST));
}

TEST_F(GuestInstanceTest, OversizedRingIsRefused) {
  w32(ramfc::GP_BASE_HI, ramfc::GpBaseHiLimit2::make(ramfc::MAX_LIMIT2 + 1));
  EXPECT_FALSE(read_guest_instance(f.guest, INST));
}

TEST_F(GuestInstanceTest, ShadowPointsAtShadowTablesAndHostUserd) {
  auto g = read_guest_instance(f.guest, INST).value();
  constexpr uint64_t SHADOW_INST = 0x4000, SHADOW_PD = 0x8000, HOST_USERD = 0xc000;
  write_shadow_instance(*f.vram, SHADOW_INST, f.guest, g, SHADOW_PD, HOST_USERD);
  EXPECT_EQ(f.vram->read32(SHADOW_INST + inst::PDB_LO) & inst::PdbAddrLo::mask, SHADOW_PD);
  EXPECT_EQ(f.vram->read32(SHADOW_INST + ramfc::USERD_LO), HOST_USERD);
  EXPECT_EQ(f.vram->read32(SHADOW_INST + ramfc::SIGNATURE), ramfc::SIGNATURE_VALUE);
  EXPECT_EQ(f.vram->read32(SHADOW_INST + ramfc::GP_BASE), lo32(RING_VA));
}

}  // namespace
}  // namespace vgpu::channels
