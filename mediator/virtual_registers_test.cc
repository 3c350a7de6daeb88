// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's plain virtual registers and records, through a register table
// of their rows, without a host or a GPU.
#include "mediator/virtual_registers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vgpu::mediator {
namespace {

namespace pmc = regs::pmc;
namespace pf = regs::pfifo;

struct Fixture {
  VirtualRegisters v;
  std::vector<std::string> errors;
  RegisterTable t{[this](const std::string& e) { errors.push_back(e); }};
  Fixture() {
    for (RegRow& r : v.plain_rows()) EXPECT_TRUE(t.add(std::move(r)).has_value());
  }
  void enable_pfifo_interrupts() {
    t.write(pmc::INTR_EN_0.offset, pmc::IntrEnHardware::mask);
    t.write(pf::INTR_EN.offset, ~0u);
  }
};

TEST(VirtualRegisters, TheirRowsFormOneTableWithoutConflicts) {
  Fixture f;
  EXPECT_GE(f.t.size(), 30u);
  EXPECT_EQ(f.t.read(pmc::INTR_MASK_0.offset), ~0u);
  EXPECT_TRUE(f.errors.empty());
}

TEST(VirtualRegisters, AChannelErrorRaisesTheLineUntilAcknowledged) {
  Fixture f;
  f.enable_pfifo_interrupts();
  EXPECT_FALSE(f.v.line());
  f.v.raise_channel_error(37, regs::ChannelError::mmu_fault, 0x1234, 0xabc'0000'1000);
  EXPECT_TRUE(f.v.line());
  EXPECT_TRUE(f.v.channel_errored(37));
  EXPECT_EQ(f.t.read(pf::CHAN_ERROR_PENDING[regs::channel_word(37)].offset), regs::channel_bit(37));
  EXPECT_EQ(f.t.read(pf::CHAN_ERROR[37].offset), static_cast<uint32_t>(regs::ChannelError::mmu_fault));
  EXPECT_EQ(f.t.read(pf::CHAN_ERROR_METHOD[37].offset), 0x1234u);
  EXPECT_EQ(f.t.read(pf::CHAN_ERROR_ADDR_HI[37].offset), 0xabcu);
  f.t.write(pf::CHAN_ERROR_PENDING[regs::channel_word(37)].offset, regs::channel_bit(37));
  f.t.write(pf::INTR.offset, pf::IntrChannelError::mask);
  EXPECT_FALSE(f.v.line());
  EXPECT_FALSE(f.v.channel_errored(37));
}

TEST(VirtualRegisters, WritingZeroToChanErrorClearsTheWholeRecord) {
  Fixture f;
  f.v.raise_channel_error(3, regs::ChannelError::bad_argument, 7, 9);
  f.t.write(pf::CHAN_ERROR[3].offset, 5);  // not zero: kept
  EXPECT_NE(f.t.read(pf::CHAN_ERROR[3].offset), 0u);
  f.t.write(pf::CHAN_ERROR[3].offset, 0);
  EXPECT_EQ(f.t.read(pf::CHAN_ERROR[3].offset), 0u);
  EXPECT_EQ(f.t.read(pf::CHAN_ERROR_METHOD[3].offset), 0u);
  EXPECT_EQ(f.t.read(pf::CHAN_ERROR_ADDR_LO[3].offset), 0u);
}

TEST(VirtualRegisters, AFaultIsReadThroughItsUnitsRecord) {
  Fixture f;
  const auto ce0 = static_cast<uint32_t>(regs::FaultUnit::ce0);
  f.v.record_fault(regs::FaultUnit::ce0, regs::FaultReason::page_not_present, 0x5000, 0x12'3456'7000, true, 4);
  EXPECT_EQ(f.t.read(pf::FAULT_UNIT_PENDING.offset), 1u << ce0);
  EXPECT_EQ(f.t.read(pf::FAULT_VA_LO[ce0].offset), 0x34567000u);
  EXPECT_EQ(f.t.read(pf::FAULT_VA_HI[ce0].offset), 0x12u);
  const uint32_t type = f.t.read(pf::FAULT_TYPE[ce0].offset);
  EXPECT_EQ(pf::FaultReason::get(type), static_cast<uint32_t>(regs::FaultReason::page_not_present));
  EXPECT_TRUE(pf::FaultWrite::get(type));
  EXPECT_EQ(pf::FaultChid::get(type), 4u);
  EXPECT_TRUE(pf::FaultChidValid::get(type));
  f.t.write(pf::FAULT_TYPE[ce0].offset, 0);  // a record is read-only
  EXPECT_EQ(f.errors.size(), 1u);
}

TEST(VirtualRegisters, IntrMaskGatesTheLineButNotIntr0) {
  Fixture f;
  f.enable_pfifo_interrupts();
  f.v.raise_nonstall(2);
  EXPECT_TRUE(f.v.line());
  f.t.write(pmc::INTR_MASK_0.offset, 0);
  EXPECT_FALSE(f.v.line());
  EXPECT_EQ(f.t.read(pmc::INTR_0.offset), pmc::intr::Pfifo::mask);
}

TEST(VirtualRegisters, AResetOfPfifoForgetsEveryRecord) {
  Fixture f;
  f.enable_pfifo_interrupts();
  f.v.raise_channel_error(1, regs::ChannelError::mmu_fault, 0, 0);
  f.v.record_fault(regs::FaultUnit::pfifo, regs::FaultReason::pt_not_present, 0, 0, false, std::nullopt);
  f.v.raise_nonstall(1);
  f.v.table_error(pf::ChanTableError::invalid_chid);
  f.v.userd_base = 0x1234;
  f.v.reset_pfifo();
  EXPECT_FALSE(f.v.line());
  EXPECT_EQ(f.v.userd_base, 0u);
  for (Reg32 r : {pf::INTR, pf::FAULT_UNIT_PENDING, pf::CHAN_TABLE_ERROR, pf::NONSTALL_PENDING[0], pf::CHAN_ERROR[1]})
    EXPECT_EQ(f.t.read(r.offset), 0u) << r.offset;
}

TEST(VirtualRegisters, PlainRowsKeepOnlyTheirWritableBits) {
  Fixture f;
  f.t.write(pmc::PBDMA_ENABLE.offset, ~0u);
  EXPECT_EQ(f.t.read(pf::PBDMA_ENABLE.offset), regs::ALL_PBDMA);  // one register, two names
  f.t.write(pmc::BOOT_1.offset, ~0u);                             // little endian only
  EXPECT_EQ(f.t.read(pmc::BOOT_1.offset), 0u);
  f.t.write(pf::CTRL.offset, ~0u);
  EXPECT_EQ(f.t.read(pf::CTRL.offset), pf::CtrlEnable::mask);
}

}  // namespace
}  // namespace vgpu::mediator

namespace vgpu::mediator {
namespace {

uint64_t raised(const VirtualRegisters& v, regs::pci::MsiVector vec) { return v.raised()[static_cast<size_t>(vec)]; }

TEST(VirtualRegisters, EachDeliverableInterruptCountsOnItsMessageVector) {
  Fixture f;
  f.v.raise_nonstall(1);  // nothing enabled yet: no message
  EXPECT_EQ(raised(f.v, regs::pci::MsiVector::nonstall), 0u);
  f.enable_pfifo_interrupts();
  f.v.raise_nonstall(1);
  f.v.raise_nonstall(1);  // the pending bit is already set: still a message
  f.v.raise_channel_error(2, regs::ChannelError::bad_argument, 0, 0);
  EXPECT_EQ(raised(f.v, regs::pci::MsiVector::nonstall), 2u);
  EXPECT_EQ(raised(f.v, regs::pci::MsiVector::error), 1u);
  f.t.write(pmc::INTR_MASK_0.offset, 0);  // PFIFO masked at PMC: no message
  f.v.raise_nonstall(1);
  EXPECT_EQ(raised(f.v, regs::pci::MsiVector::nonstall), 2u);
}

}  // namespace
}  // namespace vgpu::mediator
