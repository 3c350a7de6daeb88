// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's BAR0 registers through the testbed's mediated port, and the
// reset that PMC.ENABLE gives a VM.
#include "mediator/vgpu.h"

#include <gtest/gtest.h>

#include <vector>

#include "driver/runtime.h"
#include "testbed/testbed.h"
#include "testbed/testing/testbeds.h"
#include "tests/testing/fill_check.h"

namespace vgpu::mediator {
namespace {

namespace pf = regs::pfifo;
namespace pmc = regs::pmc;
using driver::Bar;
using testbed::Mode;

constexpr uint64_t VM_VRAM = 128 * MiB;
constexpr uint32_t VM_CHANNELS = 8;
// No record covers this BAR0 offset (between PMC.BOOT_1 and PMC.INTR_0).
constexpr uint32_t UNIMPLEMENTED = regs::pmc::BOOT_1.offset + sizeof(uint32_t);

std::unique_ptr<testbed::Testbed> make_testbed(Mode mode) {
  return testing::create_testbed(testing::one_vm(mode, VM_VRAM, VM_CHANNELS));
}

class VgpuRegs : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    tb_ = make_testbed(GetParam());
    ASSERT_TRUE(tb_);
    v_ = tb_->vgpu(0);
    ASSERT_NE(v_, nullptr);
  }
  uint32_t rd(uint32_t off) { return tb_->port(0).read32(Bar::bar0, off); }
  void wr(uint32_t off, uint32_t value) { tb_->port(0).write32(Bar::bar0, off, value); }

  std::unique_ptr<testbed::Testbed> tb_;
  Vgpu* v_ = nullptr;
};

TEST_P(VgpuRegs, Boot0ReadsThePhysicalValue) {
  EXPECT_EQ(rd(pmc::BOOT_0.offset), tb_->host()->gpu().read32(pmc::BOOT_0.offset));
  EXPECT_EQ(rd(pmc::BOOT_0.offset), pmc::BOOT_0_VALUE);
}

TEST_P(VgpuRegs, VramDiscoveryReportsThePartitionNotTheGpu) {
  EXPECT_EQ(rd(regs::punits::FBP_COUNT.offset), 1u);
  EXPECT_EQ(rd(regs::pfb::FBPA_MIB[0].offset), VM_VRAM / MiB);
  EXPECT_NE(tb_->host()->gpu().read32(regs::pfb::FBPA_MIB[0].offset), VM_VRAM / MiB);
}

TEST_P(VgpuRegs, UnimplementedReadGivesBadRegisterAndLogsAGuestError) {
  const uint64_t before = v_->counters().guest_errors;
  EXPECT_EQ(rd(UNIMPLEMENTED), regs::BAD_REGISTER);
  EXPECT_EQ(v_->counters().guest_errors, before + 1);
  ASSERT_FALSE(v_->guest_errors().empty());
  EXPECT_NE(v_->guest_errors().back().find("unimplemented"), std::string::npos) << v_->guest_errors().back();
}

TEST_P(VgpuRegs, WriteToReadOnlyRegisterIsLoggedAndIgnored) {
  const uint32_t mib = rd(regs::pfb::FBPA_MIB[0].offset);
  const uint64_t before = v_->counters().guest_errors;
  wr(regs::pfb::FBPA_MIB[0].offset, mib * 2);
  EXPECT_EQ(rd(regs::pfb::FBPA_MIB[0].offset), mib);
  EXPECT_EQ(v_->counters().guest_errors, before + 1);
  EXPECT_NE(v_->guest_errors().back().find("read-only"), std::string::npos) << v_->guest_errors().back();
}

// Raises PFIFO's CHAN_TABLE_ERROR interrupt: CHAN_INST of a channel the VM lacks.
void raise_pfifo_interrupt(testbed::Testbed& tb) {
  tb.port(0).write32(Bar::bar0, pf::CHAN_INST[VM_CHANNELS].offset, pf::ChanInstValid::mask);
}

TEST_P(VgpuRegs, Intr0ShowsAnEnabledPendingPfifoInterrupt) {
  raise_pfifo_interrupt(*tb_);
  EXPECT_EQ(rd(pmc::INTR_0.offset), 0u) << "PFIFO.INTR_EN is 0";
  wr(pf::INTR_EN.offset, pf::IntrChanTableError::mask);
  EXPECT_EQ(rd(pmc::INTR_0.offset) & pmc::intr::Pfifo::mask, pmc::intr::Pfifo::mask);
}

TEST_P(VgpuRegs, InterruptHandlerIsCalledOnLevelChangesOnly) {
  std::vector<bool> levels;
  v_->set_interrupt_handler([&](bool level) { levels.push_back(level); });
  wr(pf::INTR_EN.offset, pf::IntrChanTableError::mask);
  raise_pfifo_interrupt(*tb_);
  EXPECT_TRUE(levels.empty()) << "PMC.INTR_EN_0 hardware bit is 0";
  wr(pmc::INTR_EN_0.offset, pmc::IntrEnHardware::mask);
  ASSERT_EQ(levels, std::vector<bool>{true});
  raise_pfifo_interrupt(*tb_);  // already high: no new call
  EXPECT_EQ(levels, std::vector<bool>{true});
  wr(pf::INTR.offset, pf::IntrChanTableError::mask);
  EXPECT_EQ(levels, (std::vector<bool>{true, false}));
}

TEST_P(VgpuRegs, EachRisingEdgeOfTheLineIsOneMessageOnTheErrorVector) {
  std::vector<regs::pci::MsiVector> messages;
  v_->set_message_handler([&](regs::pci::MsiVector v) { messages.push_back(v); });
  wr(pf::INTR_EN.offset, pf::IntrChanTableError::mask);
  wr(pmc::INTR_EN_0.offset, pmc::IntrEnHardware::mask);
  raise_pfifo_interrupt(*tb_);
  ASSERT_EQ(messages, std::vector<regs::pci::MsiVector>{regs::pci::MsiVector::error});
  raise_pfifo_interrupt(*tb_);  // already high: no new message
  EXPECT_EQ(messages.size(), 1u);
  wr(pf::INTR.offset, pf::IntrChanTableError::mask);  // the line falls: no message
  EXPECT_EQ(messages.size(), 1u);
  raise_pfifo_interrupt(*tb_);
  EXPECT_EQ(messages, (std::vector<regs::pci::MsiVector>{regs::pci::MsiVector::error, regs::pci::MsiVector::error}));
  v_->set_message_handler(nullptr);
}

TEST_P(VgpuRegs, IntrMaskGatesTheLineButNotIntr0) {
  std::vector<bool> levels;
  v_->set_interrupt_handler([&](bool level) { levels.push_back(level); });
  wr(pf::INTR_EN.offset, pf::IntrChanTableError::mask);
  wr(pmc::INTR_EN_0.offset, pmc::IntrEnHardware::mask);
  wr(pmc::INTR_MASK_0.offset, ~pmc::intr::Pfifo::mask);
  raise_pfifo_interrupt(*tb_);
  EXPECT_TRUE(levels.empty());
  EXPECT_EQ(rd(pmc::INTR_0.offset) & pmc::intr::Pfifo::mask, pmc::intr::Pfifo::mask);
  wr(pmc::INTR_MASK_0.offset, pmc::intr::Pfifo::mask);
  EXPECT_EQ(levels, std::vector<bool>{true});
  wr(pmc::INTR_EN_0.offset, 0);
  EXPECT_EQ(levels, (std::vector<bool>{true, false}));
}

TEST_P(VgpuRegs, PfifoIntrIsWriteOneToClear) {
  raise_pfifo_interrupt(*tb_);
  ASSERT_EQ(rd(pf::INTR.offset) & pf::IntrChanTableError::mask, pf::IntrChanTableError::mask);
  wr(pf::INTR.offset, 0);
  wr(pf::INTR.offset, pf::IntrRunlist::mask);
  EXPECT_EQ(rd(pf::INTR.offset) & pf::IntrChanTableError::mask, pf::IntrChanTableError::mask);
  wr(pf::INTR.offset, pf::IntrChanTableError::mask);
  EXPECT_EQ(rd(pf::INTR.offset) & pf::IntrChanTableError::mask, 0u);
}

TEST_P(VgpuRegs, ChanInstBeyondTheVmsChannelsIsAChannelTableError) {
  const uint64_t before = v_->counters().guest_errors;
  raise_pfifo_interrupt(*tb_);
  EXPECT_EQ(rd(pf::CHAN_TABLE_ERROR.offset), static_cast<uint32_t>(pf::ChanTableError::invalid_chid));
  EXPECT_EQ(v_->counters().guest_errors, before + 1);
  EXPECT_EQ(rd(pf::CHAN_INST[VM_CHANNELS].offset), 0u);
}

TEST_P(VgpuRegs, ChanStateBeyondTheVmsChannelsIsAChannelTableError) {
  const uint64_t before = v_->counters().guest_errors;
  wr(pf::CHAN_STATE[VM_CHANNELS].offset, pf::ChanStateRunnable::mask);
  EXPECT_EQ(rd(pf::CHAN_TABLE_ERROR.offset), static_cast<uint32_t>(pf::ChanTableError::invalid_chid));
  EXPECT_EQ(rd(pf::INTR.offset) & pf::IntrChanTableError::mask, pf::IntrChanTableError::mask);
  EXPECT_EQ(v_->counters().guest_errors, before + 1);
}

TEST_P(VgpuRegs, PraminWindowLandsInThePartition) {
  namespace pbus = regs::pbus;
  const uint64_t window = 3 * MiB;  // 1 MiB aligned, inside the VM's VRAM
  const uint32_t offset = 0x40;
  wr(pbus::PRAMIN_WINDOW.offset, pbus::PraminBase::make(static_cast<uint32_t>(window >> pbus::PRAMIN_BASE_SHIFT)));
  gpu::Vram& vram = tb_->host()->gpu().vram();
  const uint64_t host = v_->partition().base + window + offset;
  wr(regs::pramin::BASE + offset, 0x1234abcd);
  EXPECT_EQ(vram.read32(host), 0x1234abcdu);
  vram.write32(host + sizeof(uint32_t), 0x55aa55aa);
  EXPECT_EQ(rd(regs::pramin::BASE + offset + sizeof(uint32_t)), 0x55aa55aau);
}

TEST_P(VgpuRegs, PraminWindowBeyondThePartitionFaults) {
  namespace pbus = regs::pbus;
  wr(pbus::PRAMIN_WINDOW.offset, pbus::PraminBase::make(static_cast<uint32_t>(VM_VRAM >> pbus::PRAMIN_BASE_SHIFT)));
  const uint64_t before = v_->counters().guest_errors;
  EXPECT_EQ(rd(regs::pramin::BASE), ~uint32_t{0});
  EXPECT_EQ(v_->counters().guest_errors, before + 1);
  EXPECT_EQ(rd(pbus::INTR.offset) & pbus::IntrMmioFault::mask, pbus::IntrMmioFault::mask);
}

// An access beyond a BAR never reaches the vGPU, as in QEMU's memory map:
// the port used to truncate BAR0 offsets to 32 bits, so 4 GiB + PMC.ENABLE
// reset the VM.
TEST_P(VgpuRegs, OffsetsBeyondABarAreRefusedByThePort) {
  const uint64_t before = v_->counters().trapped_writes + v_->counters().trapped_reads;
  const uint32_t enable = rd(pmc::ENABLE.offset);
  tb_->port(0).write32(Bar::bar0, (uint64_t{1} << 32) + pmc::ENABLE.offset, 0);
  EXPECT_EQ(tb_->port(0).read32(Bar::bar0, (uint64_t{1} << 32) + pmc::BOOT_0.offset), driver::Port::BUS_MISS);
  EXPECT_EQ(tb_->port(0).read32(Bar::bar1, v_->bar_size(gpu::Bar::bar1)), driver::Port::BUS_MISS);
  tb_->port(0).write32(Bar::bar3, ~uint64_t{0} - 1, 1);
  EXPECT_EQ(v_->counters().trapped_writes + v_->counters().trapped_reads, before + 1)
      << "only the read of ENABLE traps";
  EXPECT_EQ(rd(pmc::ENABLE.offset), enable);
}

// A trapped BAR access beyond the BAR instance block's limit, or beyond the
// BAR, faults vm_limit_exceeded (the MMU checks the limit first); within
// it, an unmapped page faults page_not_present.
TEST_P(VgpuRegs, BarAccessBeyondItsLimitFaultsVmLimitExceeded) {
  namespace pbus = regs::pbus;
  constexpr uint64_t INST = 1 * MiB;  // a BAR1 instance block of our own: empty directory at 2 MiB, limit 64 KiB
  constexpr uint64_t PD = 2 * MiB;
  constexpr uint64_t LIMIT = 64 * KiB - 1;
  const auto set_vram = [&](uint64_t gaddr, uint32_t value) {
    wr(pbus::PRAMIN_WINDOW.offset,
       pbus::PraminBase::make(static_cast<uint32_t>(align_down(gaddr, regs::pramin::SIZE) >> pbus::PRAMIN_BASE_SHIFT)));
    wr(static_cast<uint32_t>(regs::pramin::BASE + gaddr % regs::pramin::SIZE), value);
  };
  set_vram(INST + regs::inst::PDB_LO, static_cast<uint32_t>(PD));
  set_vram(INST + regs::inst::LIMIT_LO, static_cast<uint32_t>(LIMIT));
  wr(pbus::BAR1_INST.offset, pbus::BarInstMode::mask | pbus::BarInstAddr::make(INST >> pbus::BAR_INST_SHIFT));
  const uint32_t unit = static_cast<uint32_t>(regs::FaultUnit::bar1);
  const auto reason = [&] { return pf::FaultReason::get(rd(pf::FAULT_TYPE[unit].offset)); };

  EXPECT_EQ(tb_->port(0).read32(Bar::bar1, 16 * KiB), ~uint32_t{0});
  EXPECT_EQ(reason(), static_cast<uint32_t>(regs::FaultReason::page_not_present));
  EXPECT_EQ(tb_->port(0).read32(Bar::bar1, LIMIT + 1), ~uint32_t{0});
  EXPECT_EQ(reason(), static_cast<uint32_t>(regs::FaultReason::vm_limit_exceeded));
  EXPECT_EQ(join64(rd(pf::FAULT_VA_HI[unit].offset), rd(pf::FAULT_VA_LO[unit].offset)), LIMIT + 1);
  // Beyond the BAR itself (a caller that is not a bus, such as the C API).
  v_->bar_write32(gpu::Bar::bar1, v_->bar_size(gpu::Bar::bar1) + 4 * KiB, 1);
  EXPECT_EQ(reason(), static_cast<uint32_t>(regs::FaultReason::vm_limit_exceeded));
}

INSTANTIATE_TEST_SUITE_P(FvModes, VgpuRegs, ::testing::Values(Mode::fv_opt, Mode::fv_naive),
                         [](const ::testing::TestParamInfo<Mode>& p) {
                           return p.param == Mode::fv_opt ? std::string("fv_opt") : std::string("fv_naive");
                         });

// ---- reset

Status fill_and_check(driver::Context& ctx, float value) {
  constexpr uint32_t COUNT = 256;
  auto buf = ctx.alloc(COUNT * sizeof(float));
  if (!buf) return std::unexpected(buf.error());
  return testing::fill_and_check(ctx, *buf, COUNT, value);
}

std::vector<uint32_t> owned_pchids(const Vgpu& v) {
  std::vector<uint32_t> out;
  for (uint32_t p = 0; p < regs::NUM_CHANNELS; ++p)
    if (v.owns_pchid(p)) out.push_back(p);
  return out;
}

TEST(VgpuReset, ClearingPfifoEnableReclaimsEverything) {
  auto tb = make_testbed(Mode::fv_opt);
  ASSERT_TRUE(tb);
  Vgpu& v = *tb->vgpu(0);
  gpu::Gpu& g = tb->host()->gpu();
  const uint64_t reserved_before = v.shadow_pool().used();
  auto dev = driver::Device::open(tb->port(0));
  ASSERT_TRUE(dev) << dev.error().what();
  auto ctx = (*dev)->create_context();
  ASSERT_TRUE(ctx) << ctx.error().what();
  ASSERT_TRUE(fill_and_check(**ctx, 2.5f));
  const auto pchids = owned_pchids(v);
  ASSERT_EQ(pchids.size(), VM_CHANNELS);
  bool any_bound = false;
  for (uint32_t p : pchids) any_bound |= g.read32(pf::CHAN_INST[p].offset) != 0;
  ASSERT_TRUE(any_bound);
  ASSERT_GT(v.shadow_pool().used(), reserved_before);

  tb->port(0).write32(Bar::bar0, pmc::ENABLE.offset, pmc::enable::ALL & ~pmc::enable::Pfifo::mask);

  for (uint32_t p : pchids) EXPECT_EQ(g.read32(pf::CHAN_INST[p].offset), 0u) << "pchid " << p;
  EXPECT_EQ(v.shadow_pool().used(), reserved_before);
  EXPECT_TRUE(v.runlist_pchids().empty());
  EXPECT_TRUE(v.direct_ranges(gpu::Bar::bar1).empty());
}

TEST(VgpuReset, TheVmRunsWorkAgainAfterReset) {
  auto tb = make_testbed(Mode::fv_opt);
  ASSERT_TRUE(tb);
  {
    auto dev = driver::Device::open(tb->port(0));
    ASSERT_TRUE(dev) << dev.error().what();
    auto ctx = (*dev)->create_context();
    ASSERT_TRUE(ctx) << ctx.error().what();
    ASSERT_TRUE(fill_and_check(**ctx, 1.0f));
    tb->port(0).write32(Bar::bar0, pmc::ENABLE.offset, pmc::enable::ALL & ~pmc::enable::Pfifo::mask);
  }  // the old driver's teardown hits a reset vGPU: logged guest errors at most
  auto dev = driver::Device::open(tb->port(0));
  ASSERT_TRUE(dev) << dev.error().what();
  auto ctx = (*dev)->create_context();
  ASSERT_TRUE(ctx) << ctx.error().what();
  Status s = fill_and_check(**ctx, 4.0f);
  EXPECT_TRUE(s) << s.error().what();
}

}  // namespace
}  // namespace vgpu::mediator
