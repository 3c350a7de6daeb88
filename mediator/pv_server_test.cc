// SPDX-License-Identifier: GPL-2.0-or-later
// The PV server (spec §17): each operation, each result code, the batch
// rules (stop on first failure, copy once), and no scanning.
#include "mediator/pv_server.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "shadow/testing/fixture.h"

namespace vgpu::mediator {
namespace {

namespace pv = regs::pv;
using R = pv::Result;
using shadow::testing::Fixture;
constexpr uint64_t AREA = 0x400000;  // guest VRAM: the slot area
constexpr uint64_t PD = 0x100000, PD2 = 0x101000;
constexpr uint64_t VA = 0x4000'0000;
constexpr uint64_t BUF = 0x800000;  // guest VRAM pages to map
constexpr uint32_t SLOT = 2;

struct Server {
  Fixture f;
  Counters counters;
  std::vector<uint64_t> invalidated;
  std::vector<std::string> errors;
  ShadowSpaces spaces{f.guest, f.reserved, counters.shadow, [](uint64_t) {},
                      [this](const std::string& e) { errors.push_back(e); }};
  PvServer server{PvServer::Env{f.guest, f.reserved, spaces, counters,
                                [this](uint64_t pd) { invalidated.push_back(pd); },
                                [this](const std::string& e) { errors.push_back(e); }},
                  true};

  Server() { server.set_slot_base(pv::SlotBaseEnable::mask | pv::SlotBaseAddr::make(AREA >> pv::SLOT_BASE_SHIFT)); }

  uint64_t slot_addr(uint32_t slot = SLOT) const { return AREA + uint64_t{slot} * pv::SLOT_BYTES; }
  void w32(uint64_t gaddr, uint32_t v) { (void)f.guest.write32(gaddr, v); }
  void w64(uint64_t gaddr, uint64_t v) { f.guest_write64(gaddr, v); }
  uint32_t r32(uint64_t gaddr) { return f.guest.read32(gaddr).value(); }

  struct Op {
    pv::Opcode code;
    uint32_t flags = 0;
    uint32_t space = 0;
    uint64_t va = 0, addr = 0;
    uint32_t pages = 0;
  };
  void put(uint32_t i, const Op& op, uint32_t slot = SLOT) {
    const uint64_t rec = slot_addr(slot) + pv::slot::OPS + i * pv::slot::OP_BYTES;
    w32(rec + pv::op::CODE, uint32_t(op.code) | op.flags);
    w32(rec + pv::op::SPACE, op.space);
    w64(rec + pv::op::VA, op.va);
    w64(rec + pv::op::ADDR, op.addr);
    w32(rec + pv::op::PAGES, op.pages);
    w32(rec + pv::op::RESULT, 0xdead);
  }
  R batch(const std::vector<Op>& ops) {
    for (uint32_t i = 0; i < ops.size(); ++i) put(i, ops[i]);
    w32(slot_addr() + pv::slot::COUNT, static_cast<uint32_t>(ops.size()));
    return server.doorbell(SLOT);
  }
  R one(const Op& op) { return batch({op}); }
  uint32_t result(uint32_t i) { return r32(slot_addr() + pv::slot::OPS + i * pv::slot::OP_BYTES + pv::op::RESULT); }
  void create(uint32_t id, uint64_t pd = PD) {
    ASSERT_EQ(batch({{pv::Opcode::create_space, 0, id}, {pv::Opcode::set_pd, 0, id, 0, pd}}), R::ok);
  }
  // The space's mappings: VA -> (host address, bytes, read-only).
  std::map<uint64_t, std::tuple<uint64_t, uint64_t, bool>> mappings(uint32_t id) {
    std::map<uint64_t, std::tuple<uint64_t, uint64_t, bool>> m;
    server.space(id)->for_each_mapping(0, fmt::VA_LIMIT, [&](uint64_t va, uint64_t host, uint64_t bytes, bool ro) {
      m[va] = {host, bytes, ro};
    });
    return m;
  }
};

constexpr uint64_t host(uint64_t gaddr) { return Fixture::PART_BASE + gaddr; }

TEST(PvServer, CapsSignatureOnlyWhenOffered) {
  Server t;
  EXPECT_EQ(pv::CapsSignature::get(t.server.caps()), pv::SIGNATURE);
  EXPECT_TRUE(pv::CapsHypercalls::get(t.server.caps()));
  PvServer off{PvServer::Env{t.f.guest, t.f.reserved, t.spaces, t.counters, [](uint64_t) {}, [](const std::string&) {}},
               false};
  EXPECT_EQ(off.caps(), regs::BAD_REGISTER);
  off.set_slot_base(pv::SlotBaseEnable::mask | pv::SlotBaseAddr::make(AREA >> pv::SLOT_BASE_SHIFT));
  EXPECT_EQ(off.slot_base(), 0u);
  EXPECT_EQ(off.doorbell(0), R::not_enabled);
}

TEST(PvServer, SlotAreaOutsideThePartitionOrMisalignedIsRefused) {
  Server t;
  const uint64_t last = Fixture::PART_BYTES - pv::AREA_BYTES + pv::SLOT_BYTES;  // ends past the partition
  t.server.set_slot_base(pv::SlotBaseEnable::mask | pv::SlotBaseAddr::make(uint32_t(last >> pv::SLOT_BASE_SHIFT)));
  EXPECT_EQ(t.server.slot_base(), 0u);
  t.server.set_slot_base(pv::SlotBaseEnable::mask | pv::SlotBaseAddr::make((AREA + 0x1000) >> pv::SLOT_BASE_SHIFT));
  EXPECT_EQ(t.server.slot_base(), 0u);
  EXPECT_EQ(t.errors.size(), 2u);
  EXPECT_EQ(t.server.doorbell(0), R::not_enabled);
}

TEST(PvServer, SlotIndexOutOfRangeIsBadSlot) {
  Server t;
  EXPECT_EQ(t.server.doorbell(pv::SLOTS), R::bad_slot);
  EXPECT_EQ(t.server.doorbell(0x100), R::bad_slot) << "bits above the slot field";
  EXPECT_EQ(t.server.status(), uint32_t(R::bad_slot));
}

TEST(PvServer, CountZeroOrOverMaxIsBadCount) {
  Server t;
  t.w32(t.slot_addr() + pv::slot::COUNT, 0);
  EXPECT_EQ(t.server.doorbell(SLOT), R::bad_count);
  t.w32(t.slot_addr() + pv::slot::COUNT, pv::MAX_OPS + 1);
  EXPECT_EQ(t.server.doorbell(SLOT), R::bad_count);
  EXPECT_EQ(t.r32(t.slot_addr() + pv::slot::STATUS), uint32_t(R::bad_count));
  EXPECT_EQ(t.counters.pv_failures.load(), 2u);
}

TEST(PvServer, StrideMapTranslatesIntoThePartitionWithoutScanning) {
  Server t;
  t.create(1);
  ASSERT_EQ(t.batch({{pv::Opcode::map, 0, 1, VA, BUF, 3}, {pv::Opcode::flush, 0, 1}}), R::ok);
  auto m = t.mappings(1);
  ASSERT_EQ(m.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i)
    EXPECT_EQ(m[VA + i * fmt::SMALL_PAGE], std::make_tuple(host(BUF) + i * fmt::SMALL_PAGE, fmt::SMALL_PAGE, false));
  EXPECT_EQ(t.counters.shadow.entries_scanned.load(), 0u);
  EXPECT_GT(t.counters.shadow.shadow_writes.load(), 0u);
  EXPECT_EQ(t.invalidated, std::vector<uint64_t>{t.server.space(1)->shadow_pd()});
  EXPECT_EQ(t.r32(t.slot_addr() + pv::slot::DONE), 2u);
}

TEST(PvServer, BigReadOnlyPages) {
  Server t;
  t.create(1);
  ASSERT_EQ(t.one({pv::Opcode::map, pv::op::Big::mask | pv::op::ReadOnly::mask, 1, VA, BUF, 2}), R::ok);
  auto m = t.mappings(1);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[VA], std::make_tuple(host(BUF), fmt::BIG_PAGE, true));
  EXPECT_EQ(m[VA + fmt::BIG_PAGE], std::make_tuple(host(BUF) + fmt::BIG_PAGE, fmt::BIG_PAGE, true));
}

TEST(PvServer, ListMapScatters) {
  Server t;
  t.create(1);
  const uint64_t list = pv::slot::LIST + 0x100;
  const uint64_t pages[3] = {BUF + 0x5000, BUF, BUF + 0x9000};
  for (int i = 0; i < 3; ++i) t.w64(t.slot_addr() + list + 8 * i, pages[i]);
  ASSERT_EQ(t.one({pv::Opcode::map_list, 0, 1, VA, list, 3}), R::ok);
  auto m = t.mappings(1);
  ASSERT_EQ(m.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(std::get<0>(m[VA + i * fmt::SMALL_PAGE]), host(pages[i]));
}

TEST(PvServer, UnmapClears) {
  Server t;
  t.create(1);
  ASSERT_EQ(t.batch({{pv::Opcode::map, 0, 1, VA, BUF, 4}, {pv::Opcode::unmap, 0, 1, VA + fmt::SMALL_PAGE, 0, 2}}),
            R::ok);
  auto m = t.mappings(1);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_TRUE(m.contains(VA));
  EXPECT_TRUE(m.contains(VA + 3 * fmt::SMALL_PAGE));
}

TEST(PvServer, TargetOutsideThePartitionAppliesNothing) {
  Server t;
  t.create(1);
  const uint64_t near_end = Fixture::PART_BYTES - 2 * fmt::SMALL_PAGE;
  EXPECT_EQ(t.one({pv::Opcode::map, 0, 1, VA, near_end, 3}), R::outside_partition) << "last page beyond";
  EXPECT_EQ(t.one({pv::Opcode::map, pv::op::Big::mask, 1, VA, Fixture::PART_BYTES, 1}), R::outside_partition);
  EXPECT_EQ(t.one({pv::Opcode::map, 0, 1, VA, ~uint64_t{0} & ~uint64_t{0xfff}, 2}), R::outside_partition)
      << "address wraps";
  const uint64_t list = pv::slot::LIST;
  t.w64(t.slot_addr() + list, BUF);
  t.w64(t.slot_addr() + list + 8, Fixture::PART_BYTES + BUF);
  EXPECT_EQ(t.one({pv::Opcode::map_list, 0, 1, VA, list, 2}), R::outside_partition);
  EXPECT_TRUE(t.mappings(1).empty());
  EXPECT_EQ(t.counters.shadow.entries_scanned.load(), 0u);
}

TEST(PvServer, SystemMemoryTargetsAreRefused) {
  Server t;
  t.create(1);
  EXPECT_EQ(t.one({pv::Opcode::map, pv::op::Sysmem::mask, 1, VA, BUF, 1}), R::target_refused);
  t.w64(t.slot_addr() + pv::slot::LIST, BUF);
  EXPECT_EQ(t.one({pv::Opcode::map_list, pv::op::Sysmem::mask, 1, VA, pv::slot::LIST, 1}), R::target_refused);
  EXPECT_TRUE(t.mappings(1).empty());
}

TEST(PvServer, StopsAtTheFirstFailure) {
  Server t;
  t.create(1);
  EXPECT_EQ(t.batch({{pv::Opcode::map, 0, 1, VA, BUF, 1},
                     {pv::Opcode::map, 0, 1, VA + fmt::SMALL_PAGE, Fixture::PART_BYTES, 1},
                     {pv::Opcode::map, 0, 1, VA + 2 * fmt::SMALL_PAGE, BUF, 1}}),
            R::outside_partition);
  EXPECT_EQ(t.result(0), uint32_t(R::ok));
  EXPECT_EQ(t.result(1), uint32_t(R::outside_partition));
  EXPECT_EQ(t.result(2), uint32_t(R::not_run));
  EXPECT_EQ(t.r32(t.slot_addr() + pv::slot::DONE), 1u);
  EXPECT_EQ(t.r32(t.slot_addr() + pv::slot::STATUS), uint32_t(R::outside_partition));
  EXPECT_EQ(t.server.status(), uint32_t(R::outside_partition));
  EXPECT_EQ(t.mappings(1).size(), 1u) << "the first stays applied";
}

TEST(PvServer, SpaceIdsAreChecked) {
  Server t;
  EXPECT_EQ(t.one({pv::Opcode::map, 0, 1, VA, BUF, 1}), R::bad_space);
  EXPECT_EQ(t.one({pv::Opcode::create_space, 0, pv::SPACES}), R::bad_space);
  t.create(1);
  EXPECT_EQ(t.one({pv::Opcode::create_space, 0, 1}), R::space_exists);
  EXPECT_EQ(t.one({pv::Opcode::destroy_space, 0, 1}), R::ok);
  EXPECT_EQ(t.one({pv::Opcode::flush, 0, 1}), R::bad_space);
  EXPECT_EQ(t.one({pv::Opcode::destroy_space, 0, 1}), R::bad_space);
  EXPECT_EQ(t.one({pv::Opcode::create_space, 0, pv::SPACE_BAR3}), R::ok);
}

TEST(PvServer, AlignmentAndRangeAreChecked) {
  Server t;
  t.create(1);
  EXPECT_EQ(t.one({pv::Opcode::map, 0, 1, VA + 8, BUF, 1}), R::bad_alignment);
  EXPECT_EQ(t.one({pv::Opcode::map, 0, 1, VA, BUF + 8, 1}), R::bad_alignment);
  EXPECT_EQ(t.one({pv::Opcode::map, pv::op::Big::mask, 1, VA + fmt::SMALL_PAGE, BUF, 1}), R::bad_alignment);
  EXPECT_EQ(t.one({pv::Opcode::map, 0, 1, VA, BUF, 0}), R::bad_range);
  EXPECT_EQ(t.one({pv::Opcode::map, 0, 1, VA, BUF, pv::MAX_PAGES + 1}), R::bad_range);
  EXPECT_EQ(t.one({pv::Opcode::map, 0, 1, fmt::VA_LIMIT - fmt::SMALL_PAGE, BUF, 2}), R::bad_range);
  EXPECT_EQ(t.one({pv::Opcode::unmap, 0, 1, ~uint64_t{0} & ~uint64_t{0xfff}, 0, 2}), R::bad_range);
  EXPECT_EQ(t.one({pv::Opcode::set_pd, 0, 1, 0, PD + 8}), R::bad_alignment);
  EXPECT_TRUE(t.mappings(1).empty());
}

TEST(PvServer, ListOutsideTheListAreaIsBadList) {
  Server t;
  t.create(1);
  EXPECT_EQ(t.one({pv::Opcode::map_list, 0, 1, VA, pv::slot::OPS, 1}), R::bad_list) << "over the records";
  EXPECT_EQ(t.one({pv::Opcode::map_list, 0, 1, VA, pv::SLOT_BYTES - 8, 2}), R::bad_list) << "past the slot";
  EXPECT_EQ(t.one({pv::Opcode::map_list, 0, 1, VA, pv::slot::LIST + 4, 1}), R::bad_list) << "misaligned";
  EXPECT_EQ(t.one({pv::Opcode::map_list, 0, 1, VA, uint64_t{1} << 62, 1}), R::bad_list);
}

TEST(PvServer, UnknownOpcodeOrFlagsAreBadOpcode) {
  Server t;
  t.create(1);
  EXPECT_EQ(t.one({static_cast<pv::Opcode>(pv::OPCODES), 0, 1}), R::bad_opcode);
  EXPECT_EQ(t.one({pv::Opcode::map, 1u << 12, 1, VA, BUF, 1}), R::bad_opcode);
  EXPECT_EQ(t.one({pv::Opcode::flush, pv::op::Big::mask, 1}), R::bad_opcode);
  EXPECT_EQ(t.one({pv::Opcode::unmap, pv::op::ReadOnly::mask, 1, VA, 0, 1}), R::bad_opcode);
}

TEST(PvServer, SetPdNamesTheSpaceForInstanceBlocks) {
  Server t;
  t.create(1, PD);
  auto got = t.spaces.get(PD);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->get(), t.server.space(1).get());
  EXPECT_TRUE((*got)->paravirtual());
  EXPECT_EQ(t.one({pv::Opcode::create_space, 0, 2}), R::ok);
  EXPECT_EQ(t.one({pv::Opcode::set_pd, 0, 2, 0, PD}), R::pd_in_use);
  EXPECT_EQ(t.one({pv::Opcode::set_pd, 0, 2, 0, Fixture::PART_BYTES}), R::outside_partition);
  auto scanned = t.spaces.get(PD2);  // a scanned space in use
  ASSERT_TRUE(scanned);
  EXPECT_EQ(t.one({pv::Opcode::set_pd, 0, 2, 0, PD2}), R::pd_in_use);
  EXPECT_EQ(t.one({pv::Opcode::destroy_space, 0, 1}), R::ok);
  EXPECT_EQ(t.spaces.find_pv(PD), nullptr) << "the name is forgotten";
}

TEST(PvServer, TheBatchIsReadOnceFromACopy) {
  Server t;
  t.create(1);
  // Ops applied by the batch read the copy: a result word written into the
  // slot by the device later never feeds back. Here a map whose PAGES field
  // the guest changes after the doorbell has no effect on what was applied.
  t.put(0, {pv::Opcode::map, 0, 1, VA, BUF, 1});
  t.w32(t.slot_addr() + pv::slot::COUNT, 1);
  ASSERT_EQ(t.server.doorbell(SLOT), R::ok);
  t.w32(t.slot_addr() + pv::slot::OPS + pv::op::PAGES, 1000);
  EXPECT_EQ(t.mappings(1).size(), 1u);
}

TEST(PvServer, ANewSlotBaseStartsANewSession) {
  Server t;
  t.create(1);
  t.server.set_slot_base(pv::SlotBaseEnable::mask | pv::SlotBaseAddr::make(AREA >> pv::SLOT_BASE_SHIFT));
  EXPECT_EQ(t.server.space(1), nullptr);
  EXPECT_EQ(t.spaces.find_pv(PD), nullptr);
  t.create(1);
}

TEST(PvServer, ResetDestroysEverySpace) {
  Server t;
  t.create(1);
  t.server.reset();
  EXPECT_EQ(t.server.space(1), nullptr);
  EXPECT_EQ(t.spaces.find_pv(PD), nullptr);
  EXPECT_EQ(t.server.slot_base(), 0u);
  EXPECT_EQ(t.server.doorbell(SLOT), R::not_enabled);
}

}  // namespace
}  // namespace vgpu::mediator
