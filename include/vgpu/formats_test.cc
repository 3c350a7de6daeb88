// SPDX-License-Identifier: GPL-2.0-or-later
// The codecs of vgpu/formats.h against the layouts of docs/spec/vgpu.md,
// word by word, and the channel instance rules one by one.
#include "vgpu/formats.h"

#include <gtest/gtest.h>

#include <map>

namespace vgpu::fmt {
namespace {

namespace in = regs::inst;
namespace rf = regs::ramfc;

// Words of one block, as a map from offset.
struct Words {
  std::map<uint32_t, uint32_t> w;
  auto reader() const {
    return [this](uint32_t off) {
      auto it = w.find(off);
      return it == w.end() ? 0u : it->second;
    };
  }
  auto writer() {
    return [this](uint32_t off, uint32_t v) { w[off] = v; };
  }
};

TEST(AddressSpaceCodec, EncodesTheSpecLayout) {
  Words b;
  encode_address_space(AddressSpace{.pdb = 0x12'3456'7000, .limit = 0xff'ffff'ffff}, b.writer());
  EXPECT_EQ(b.w[in::PDB_LO], 0x34567000u);  // target 0 = VRAM in bits 1:0
  EXPECT_EQ(b.w[in::PDB_HI], 0x12u);
  EXPECT_EQ(b.w[in::LIMIT_LO], 0xffffffffu);
  EXPECT_EQ(b.w[in::LIMIT_HI], 0xffu);
  const AddressSpace back = decode_address_space(b.reader());
  EXPECT_EQ(back.pdb, 0x12'3456'7000u);
  EXPECT_EQ(back.limit, 0xff'ffff'ffffu);
  EXPECT_EQ(back.pdb_target, uint32_t(Target::vram));
}

TEST(RamfcCodec, RoundTripsAndIgnoresUserdLowBits) {
  Words b;
  const Ramfc r{.gp_base = 0x1'0000'1000, .limit2 = 10, .userd = 0x20000, .gp_get = 3, .gp_put = 5, .acquire = 0x7};
  encode_ramfc(r, b.writer());
  EXPECT_EQ(b.w[rf::SIGNATURE], rf::SIGNATURE_VALUE);
  EXPECT_EQ(b.w[rf::GP_BASE_HI], rf::GpBaseHiAddr::make(1) | rf::GpBaseHiLimit2::make(10));
  b.w[rf::USERD_LO] |= 0xffc;  // bits 11:2 are ignored (spec 6.2)
  const Ramfc back = decode_ramfc(b.reader());
  EXPECT_EQ(back.gp_base, r.gp_base);
  EXPECT_EQ(back.ring_entries(), 1024u);
  EXPECT_EQ(back.userd, 0x20000u);
  EXPECT_EQ(back.gp_get, 3u);
  EXPECT_EQ(back.gp_put, 5u);
  EXPECT_EQ(back.acquire, 0x7u);
}

TEST(ChanInstCodec, RoundTrips) {
  const uint32_t v = encode_chan_inst({.valid = true, .inst = 0x1234000});
  EXPECT_TRUE(regs::pfifo::ChanInstValid::get(v));
  const ChanInst back = decode_chan_inst(v);
  EXPECT_TRUE(back.valid);
  EXPECT_EQ(back.inst, 0x1234000u);
  EXPECT_EQ(back.target, uint32_t(Target::vram));
  EXPECT_FALSE(decode_chan_inst(0).valid);
}

TEST(RunlistEntryCodec, NamesOnlyChannelsOfTheDevice) {
  EXPECT_EQ(decode_runlist_entry(encode_runlist_entry(17)[0]), 17u);
  EXPECT_EQ(encode_runlist_entry(17)[1], regs::runlist::ENTRY_FLAGS_VALUE);
  EXPECT_FALSE(decode_runlist_entry(regs::NUM_CHANNELS + 5));
}

// ---- channel instance rules (spec 6.2), each broken once

constexpr uint64_t AT = 0x10000;
ChannelInstance valid_instance() {
  return ChannelInstance{AddressSpace{.pdb = 0x100000, .limit = VA_LIMIT - 1},
                         Ramfc{.gp_base = 0x1'0000'0000, .limit2 = 10, .userd = 0x20000}};
}
const auto IN_16_MIB = [](uint64_t addr, uint64_t bytes) { return addr < 16 * MiB && bytes <= 16 * MiB - addr; };

TEST(ChannelInstanceRules, AValidBlockPasses) { EXPECT_FALSE(check_channel_instance(AT, valid_instance(), IN_16_MIB)); }

TEST(ChannelInstanceRules, EachBrokenRuleIsNamedWithItsValue) {
  struct Case {
    const char* what;
    void (*breaks)(ChannelInstance&, uint64_t& at);
    uint64_t value;
  };
  const Case cases[] = {
      {"not an aligned block inside", [](ChannelInstance&, uint64_t& at) { at = 16 * MiB; }, 16 * MiB},
      {"not an aligned block inside", [](ChannelInstance&, uint64_t& at) { at = AT + 8; }, AT + 8},
      {"RAMFC signature", [](ChannelInstance& c, uint64_t&) { c.ramfc.signature = 0xbeef; }, 0xbeef},
      {"GPFIFO ring not 8-byte aligned", [](ChannelInstance& c, uint64_t&) { c.ramfc.gp_base += 4; }, 0x1'0000'0004},
      {"GPFIFO ring too large (log2 entries)", [](ChannelInstance& c, uint64_t&) { c.ramfc.limit2 = 17; }, 17},
      {"page directory not in VRAM", [](ChannelInstance& c, uint64_t&) { c.space.pdb_target = 2; }, 2},
      {"page directory outside", [](ChannelInstance& c, uint64_t&) { c.space.pdb = 16 * MiB - 4096; }, 16 * MiB - 4096},
      {"address-space limit out of range", [](ChannelInstance& c, uint64_t&) { c.space.limit = 0; }, 0},
      {"address-space limit out of range", [](ChannelInstance& c, uint64_t&) { c.space.limit = VA_LIMIT; }, VA_LIMIT},
      {"USERD not in VRAM", [](ChannelInstance& c, uint64_t&) { c.ramfc.userd_target = 3; }, 3},
      {"USERD page outside", [](ChannelInstance& c, uint64_t&) { c.ramfc.userd = 16 * MiB; }, 16 * MiB},
  };
  for (const Case& k : cases) {
    ChannelInstance c = valid_instance();
    uint64_t at = AT;
    k.breaks(c, at);
    auto bad = check_channel_instance(at, c, IN_16_MIB);
    ASSERT_TRUE(bad) << k.what;
    EXPECT_STREQ(bad->what, k.what);
    EXPECT_EQ(bad->value, k.value) << k.what;
  }
}

TEST(ChannelInstanceRules, TheLayerNamesItsMemoryOnlyForBounds) {
  ChannelInstance c = valid_instance();
  c.space.pdb = 32 * MiB;
  EXPECT_EQ(check_channel_instance(AT, c, IN_16_MIB)->message("the VM's VRAM"),
            "page directory outside the VM's VRAM (0x2000000)");
  c = valid_instance();
  c.ramfc.signature = 1;
  EXPECT_EQ(check_channel_instance(AT, c, IN_16_MIB)->message("VRAM"), "RAMFC signature (0x1)");
}

}  // namespace
}  // namespace vgpu::fmt
