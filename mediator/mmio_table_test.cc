// SPDX-License-Identifier: GPL-2.0-or-later
// The trapped-MMIO table: offsets resolve to the record and array index
// that cover them, interleaved arrays included; anything else misses.
#include "mediator/mmio_table.h"

#include <gtest/gtest.h>

#include "vgpu/regs.h"

namespace vgpu::mediator {
namespace {

namespace pf = regs::pfifo;

struct Owner {
  uint32_t last_index = 0;
};

uint32_t read_index(Owner& o, uint32_t index) {
  o.last_index = index;
  return index;
}

MmioTable<Owner> channel_table() {
  using R = MmioRecord<Owner>;
  return MmioTable<Owner>({
      reg<Owner>("PFIFO.INTR", pf::INTR, Access::virtualized, read_index, nullptr),
      R{"PFIFO.CHAN_INST", pf::CHAN_INST, Access::sensitive, read_index, nullptr},
      R{"PFIFO.CHAN_STATE", pf::CHAN_STATE, Access::sensitive, read_index, nullptr},
  });
}

TEST(MmioTable, InterleavedArraysResolveToTheirOwnRecordAndIndex) {
  const auto t = channel_table();
  for (uint32_t c : {0u, 1u, 77u, regs::NUM_CHANNELS - 1}) {
    const auto inst = t.find(pf::CHAN_INST[c].offset);
    ASSERT_NE(inst.record, nullptr) << "channel " << c;
    EXPECT_STREQ(inst.record->name, "PFIFO.CHAN_INST");
    EXPECT_EQ(inst.index, c);
    const auto state = t.find(pf::CHAN_STATE[c].offset);
    ASSERT_NE(state.record, nullptr) << "channel " << c;
    EXPECT_STREQ(state.record->name, "PFIFO.CHAN_STATE");
    EXPECT_EQ(state.index, c);
  }
}

TEST(MmioTable, HitCallsTheRecordsHandlerWithItsIndex) {
  const auto t = channel_table();
  Owner o;
  const auto hit = t.find(pf::CHAN_STATE[42].offset);
  ASSERT_NE(hit.record, nullptr);
  EXPECT_EQ(hit.record->read(o, hit.index), 42u);
  EXPECT_EQ(o.last_index, 42u);
  EXPECT_EQ(hit.record->access, Access::sensitive);
}

TEST(MmioTable, SingleRegisterIsAnArrayOfOne) {
  const auto t = channel_table();
  const auto hit = t.find(pf::INTR.offset);
  ASSERT_NE(hit.record, nullptr);
  EXPECT_STREQ(hit.record->name, "PFIFO.INTR");
  EXPECT_EQ(hit.index, 0u);
  EXPECT_EQ(t.find(pf::INTR.offset + sizeof(uint32_t)).record, nullptr);
}

TEST(MmioTable, UnknownOffsetsMiss) {
  const auto t = channel_table();
  // Past the last channel, between registers, and unaligned inside an array.
  EXPECT_EQ(t.find(pf::CHAN_INST.base + pf::CHAN_INST.stride * regs::NUM_CHANNELS).record, nullptr);
  EXPECT_EQ(t.find(pf::CHAN_INST[3].offset + 2).record, nullptr);
  EXPECT_EQ(t.find(regs::pmc::BOOT_0.offset).record, nullptr);
  EXPECT_EQ(t.find(pf::INTR_EN.offset).record, nullptr);
}

TEST(MmioTable, RecordsKeepTheirOrderAndAccessClass) {
  const auto t = channel_table();
  ASSERT_EQ(t.records().size(), 3u);
  EXPECT_EQ(t.records()[0].access, Access::virtualized);
  EXPECT_STREQ(access_name(Access::unimplemented), "unimplemented");
  EXPECT_STREQ(access_name(Access::sensitive), "sensitive");
}

}  // namespace
}  // namespace vgpu::mediator
