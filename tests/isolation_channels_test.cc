// SPDX-License-Identifier: GPL-2.0-or-later
// The isolation catalog (docs/isolation.md), channels and instance blocks:
// rows 10-15. Channel instance blocks, page directories and USERD pages
// outside the partition, channel-table entries and runlist entries past
// the VM's channel range, a runlist outside the partition: each refused
// with its channel or channel-table error. Harness:
// tests/testing/isolation_harness.h.
#include <gtest/gtest.h>

#include <vector>

#include "common/text.h"
#include "tests/testing/isolation_harness.h"

namespace vgpu::mediator::isolation {
namespace {

// ================================================================ channels

// A copy of the attacker's own instance block, at a fresh guest address:
// binding it unchanged works (the control), then `mutate` edits it.
uint64_t copy_instance(Attack& a) {
  driver::Buffer b = a.buffer(regs::inst::SIZE);
  auto at = a.raw.translate(a.pd(), a.va(b), fmt::PageSize::small);
  EXPECT_TRUE(at);
  a.raw.copy_vram(*at, a.ctx.channel().inst(), regs::inst::LIMIT_HI + sizeof(uint32_t));
  return *at;
}

uint32_t chan_inst_value(uint64_t inst) {
  return pf::ChanInstValid::mask | pf::ChanInstAddr::make(static_cast<uint32_t>(inst >> pf::CHAN_INST_SHIFT));
}

void bind_bad_instance(Attack& a, uint64_t inst, const char* what) {
  a.raw.set_reg(pf::CHAN_INST[SPARE_CHID].offset, chan_inst_value(inst));
  EXPECT_EQ(a.raw.chan_error(SPARE_CHID), static_cast<uint32_t>(regs::ChannelError::bad_instance));
  EXPECT_TRUE(pf::IntrChannelError::get(a.raw.reg(pf::INTR)));
  EXPECT_TRUE(a.raw.reg(pf::CHAN_ERROR_PENDING[0].offset) & (1u << SPARE_CHID));
  EXPECT_TRUE(a.logged(what)) << "no guest error naming: " << what;
}

void bind_copy_then(Attack& a, const std::function<void(uint64_t)>& mutate, const char* what) {
  const uint64_t inst = copy_instance(a);
  a.raw.set_reg(pf::CHAN_INST[SPARE_CHID].offset, chan_inst_value(inst));
  ASSERT_EQ(a.raw.chan_error(SPARE_CHID), 0u) << "the unchanged copy should bind";
  a.raw.set_reg(pf::CHAN_INST[SPARE_CHID].offset, 0);
  mutate(inst);
  bind_bad_instance(a, inst, what);
}

// CHAN_INST naming the victim's instance block.
TEST_P(Isolation, InstanceBlockOutsidePartitionIsRefused) {
  run_isolation(GetParam(), [](Attack& a) {
    bind_bad_instance(a, a.foreign(a.victim.inst), "not an aligned block inside the VM's VRAM");
  });
}

// An instance block whose page directory is the victim's.
TEST_P(Isolation, PageDirectoryOutsidePartitionIsRefused) {
  run_isolation(GetParam(), [](Attack& a) {
    bind_copy_then(
        a,
        [&](uint64_t inst) {
          const uint64_t pd = a.foreign(a.victim.pd);
          a.raw.set_vram32(inst + regs::inst::PDB_LO, lo32(pd) & regs::inst::PdbAddrLo::mask);
          a.raw.set_vram32(inst + regs::inst::PDB_HI, regs::inst::PdbAddrHi::make(hi32(pd)));
        },
        "page directory outside the VM's VRAM");
  });
}

// An instance block whose USERD page is outside the partition.
TEST_P(Isolation, UserdOutsidePartitionIsRefused) {
  run_isolation(GetParam(), [](Attack& a) {
    bind_copy_then(
        a,
        [&](uint64_t inst) {
          a.raw.set_vram32(inst + regs::ramfc::USERD_LO, lo32(a.foreign(a.victim.inst)));
          a.raw.set_vram32(inst + regs::ramfc::USERD_HI, hi32(a.foreign(a.victim.inst)));
        },
        "USERD page outside the VM's VRAM");
  });
}

std::vector<uint32_t> physical_chan_inst(Testbed& tb, const std::vector<uint32_t>& pchids) {
  std::vector<uint32_t> out;
  for (uint32_t p : pchids) out.push_back(tb.gpu().read32(pf::CHAN_INST[p].offset));
  return out;
}

// CHAN_INST / CHAN_STATE of channel ids past the VM's range (which would
// be the victim's physical channels if ids were not virtualized).
TEST_P(Isolation, ChannelTableEntriesOutsideRangeAreRefused) {
  run_isolation(GetParam(), [](Attack& a) {
    Vgpu& victim = *a.tb.vgpu(VICTIM);
    const auto victim_pchids = owned_pchids(victim);
    const auto before = physical_chan_inst(a.tb, victim_pchids);
    for (uint32_t chid : {CHANNELS, CHANNELS + 1, regs::NUM_CHANNELS / 2, regs::NUM_CHANNELS - 1}) {
      a.raw.set_reg(pf::CHAN_INST[chid].offset, chan_inst_value(a.ctx.channel().inst()));
      a.raw.set_reg(pf::CHAN_STATE[chid].offset, pf::ChanStateRunnable::mask);
      EXPECT_TRUE(a.logged(strfmt("CHAN_INST of channel %u outside", chid)));
      EXPECT_TRUE(a.logged(strfmt("CHAN_STATE of channel %u outside", chid)));
      EXPECT_EQ(a.raw.reg(pf::CHAN_INST[chid].offset), 0u);
    }
    EXPECT_EQ(a.raw.reg(pf::CHAN_TABLE_ERROR), static_cast<uint32_t>(pf::ChanTableError::invalid_chid));
    EXPECT_TRUE(pf::IntrChanTableError::get(a.raw.reg(pf::INTR)));
    EXPECT_EQ(physical_chan_inst(a.tb, victim_pchids), before);
  });
}

// A runlist naming channel ids past the VM's range.
TEST_P(Isolation, RunlistEntriesOutsideRangeAreRefused) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Buffer b = a.buffer(fmt::SMALL_PAGE);
    auto rl = a.raw.translate(a.pd(), a.va(b), fmt::PageSize::small);
    ASSERT_TRUE(rl);
    const uint32_t entries[] = {a.chid(), CHANNELS, CHANNELS + 1, regs::NUM_CHANNELS - 1, regs::NUM_CHANNELS};
    for (uint32_t i = 0; i < std::size(entries); ++i) {
      a.raw.set_vram32(*rl + i * regs::runlist::ENTRY_BYTES + regs::runlist::ENTRY_CHID, entries[i]);
      a.raw.set_vram32(*rl + i * regs::runlist::ENTRY_BYTES + regs::runlist::ENTRY_FLAGS, 0);
    }
    a.raw.set_reg(pf::RUNLIST_BASE, pf::RunlistAddr::make(static_cast<uint32_t>(*rl >> pf::RUNLIST_SHIFT)));
    a.raw.set_reg(pf::RUNLIST_SUBMIT, pf::RunlistCount::make(static_cast<uint32_t>(std::size(entries))));
    EXPECT_EQ(a.raw.reg(pf::CHAN_TABLE_ERROR), static_cast<uint32_t>(pf::ChanTableError::invalid_chid));
    EXPECT_TRUE(a.logged("runlist entry 1 names channel 8 outside"));
    const auto listed = a.self.runlist_pchids();
    ASSERT_EQ(listed.size(), 1u);  // its own channel only
    EXPECT_TRUE(a.self.owns_pchid(listed[0]));
    for (uint32_t p : a.tb.vgpu(VICTIM)->runlist_pchids()) EXPECT_TRUE(a.tb.vgpu(VICTIM)->owns_pchid(p));
  });
}

// A runlist whose base lies outside the partition.
TEST_P(Isolation, RunlistOutsidePartitionIsRefused) {
  run_isolation(GetParam(), [](Attack& a) {
    a.raw.set_reg(pf::RUNLIST_BASE,
                  pf::RunlistAddr::make(static_cast<uint32_t>(a.foreign(a.victim.inst) >> pf::RUNLIST_SHIFT)));
    a.raw.set_reg(pf::RUNLIST_SUBMIT, pf::RunlistCount::make(1));
    EXPECT_EQ(a.raw.reg(pf::CHAN_TABLE_ERROR), static_cast<uint32_t>(pf::ChanTableError::invalid_target));
    EXPECT_TRUE(a.logged("lies outside the VM's VRAM"));
    EXPECT_TRUE(a.self.runlist_pchids().empty());
  });
}

}  // namespace
}  // namespace vgpu::mediator::isolation
