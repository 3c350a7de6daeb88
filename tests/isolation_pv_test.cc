// SPDX-License-Identifier: GPL-2.0-or-later
// The isolation catalog (docs/isolation.md), paravirtual page tables
// (spec §17): rows PV-1 to PV-11. Raw hypercall batches from the
// attacker's slots: maps of the victim's pages (stride and list forms,
// small and big, system memory outside its RAM), bad counts, slots and
// space ids, flushes of others' spaces, batches raced by threads and
// rewritten while processed, set_pd on the victim's directory. Harness:
// tests/testing/isolation_harness.h.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "tests/testing/isolation_harness.h"

namespace vgpu::mediator::isolation {
namespace {

// ================================================================ paravirtual page tables (spec §17)
//
// Both VMs run in pv mode: the victim's driver maps through hypercalls too.
// The attacker rings raw batches in slots 1..15 of its own slot area (its
// driver uses slot 0), filled through PRAMIN, aiming at the victim's
// sentinels. Each test checks the result code, that nothing of the bad
// operation applied (the attacker's PV spaces map only its own VRAM), and,
// through run_isolation, the victim.

namespace pv = regs::pv;
using PvR = pv::Result;

constexpr uint32_t RAW_SPACE = 200;  // an id the attacker's driver never reaches

struct PvOpRec {
  pv::Opcode code;
  uint32_t flags = 0;
  uint32_t space = RAW_SPACE;
  uint64_t va = 0, addr = 0;
  uint32_t pages = 0;
};

struct RawPv {
  Attack& a;
  uint32_t slot = 1;

  uint64_t slot_addr() {
    return (uint64_t{pv::SlotBaseAddr::get(a.raw.reg(pv::SLOT_BASE))} << pv::SLOT_BASE_SHIFT) +
           uint64_t{slot} * pv::SLOT_BYTES;
  }
  void put(uint64_t base, uint32_t i, const PvOpRec& op) {
    const uint64_t rec = base + pv::slot::OPS + uint64_t{i} * pv::slot::OP_BYTES;
    a.raw.set_vram32(rec + pv::op::CODE, uint32_t(op.code) | op.flags);
    a.raw.set_vram32(rec + pv::op::SPACE, op.space);
    a.raw.set_vram64(rec + pv::op::VA, op.va);
    a.raw.set_vram64(rec + pv::op::ADDR, op.addr);
    a.raw.set_vram32(rec + pv::op::PAGES, op.pages);
  }
  void fill(const std::vector<PvOpRec>& ops) {
    const uint64_t base = slot_addr();
    for (uint32_t i = 0; i < ops.size(); ++i) put(base, i, ops[i]);
    a.raw.set_vram32(base + pv::slot::COUNT, static_cast<uint32_t>(ops.size()));
  }
  PvR ring() {
    a.raw.set_reg(pv::DOORBELL, pv::DoorbellSlot::make(slot));
    return static_cast<PvR>(a.raw.reg(pv::STATUS));
  }
  PvR batch(const std::vector<PvOpRec>& ops) {
    fill(ops);
    return ring();
  }
  uint32_t result(uint32_t i) {
    return a.raw.vram32(slot_addr() + pv::slot::OPS + uint64_t{i} * pv::slot::OP_BYTES + pv::op::RESULT);
  }
  uint32_t done() { return a.raw.vram32(slot_addr() + pv::slot::DONE); }
  // A fresh raw space of the attacker's own.
  void create(uint32_t id = RAW_SPACE) { ASSERT_EQ(batch({{pv::Opcode::create_space, 0, id}}), PvR::ok); }
  // Every mapping of space `id` lies in the attacker's partition; returns their count.
  size_t own_mappings(uint32_t id = RAW_SPACE) {
    const auto& part = a.self.partition();
    size_t n = 0;
    EXPECT_TRUE(a.self.pv_mappings(id, [&](uint64_t, uint64_t host, uint64_t bytes, bool) {
      EXPECT_TRUE(host >= part.base && host + bytes <= part.base + part.size) << "a PV mapping left the partition";
      ++n;
    }));
    return n;
  }
};

void run_pv(const std::function<void(Attack&, RawPv&)>& fn) {
  run_isolation(Mode::pv, [&](Attack& a) {
    RawPv p{a};
    ASSERT_TRUE(pv::SlotBaseEnable::get(a.raw.reg(pv::SLOT_BASE))) << "the attacker's driver set no slot area";
    fn(a, p);
  });
}

constexpr uint64_t PV_VA = 0x40'0000'0000;  // far above what the attacker's driver maps
constexpr uint64_t OWN_PAGE = 40 * MiB;     // attacker VRAM its driver does not use (64 MiB VMs)

// The stride form, small pages, aimed at the victim's small sentinel.
TEST(IsolationPv, StrideMapOfSmallPagesOutsidePartitionIsRefused) {
  run_pv([](Attack& a, RawPv& p) {
    p.create();
    EXPECT_EQ(p.batch({{pv::Opcode::map, 0, RAW_SPACE, PV_VA, a.foreign(a.victim.small_gaddr), 4}}),
              PvR::outside_partition);
    EXPECT_EQ(p.result(0), uint32_t(PvR::outside_partition));
    // The single form straddling the partition's end: its second page is the victim's.
    EXPECT_EQ(p.batch({{pv::Opcode::map, 0, RAW_SPACE, PV_VA, VM_VRAM - fmt::SMALL_PAGE, 2}}), PvR::outside_partition);
    EXPECT_EQ(p.own_mappings(), 0u);
    EXPECT_TRUE(a.logged("outside_partition"));
  });
}

// The stride form, big pages, aimed at the victim's big sentinel; and big
// pages from the attacker's own last big page onward.
TEST(IsolationPv, StrideMapOfBigPagesOutsidePartitionIsRefused) {
  run_pv([](Attack& a, RawPv& p) {
    p.create();
    EXPECT_EQ(p.batch({{pv::Opcode::map, pv::op::Big::mask, RAW_SPACE, PV_VA, a.foreign(a.victim.big_gaddr), 2}}),
              PvR::outside_partition);
    EXPECT_EQ(p.batch({{pv::Opcode::map, pv::op::Big::mask, RAW_SPACE, PV_VA, VM_VRAM - fmt::BIG_PAGE, 2}}),
              PvR::outside_partition);
    // Control: the same op inside the partition applies.
    EXPECT_EQ(p.batch({{pv::Opcode::map, pv::op::Big::mask, RAW_SPACE, PV_VA, VM_VRAM - fmt::BIG_PAGE, 1}}), PvR::ok);
    EXPECT_EQ(p.own_mappings(), 1u);
  });
}

// The list form: an own page then a victim page, small and big; the whole
// operation is refused, its first (legal) page included.
TEST(IsolationPv, ListMapWithAForeignPageIsRefusedWhole) {
  run_pv([](Attack& a, RawPv& p) {
    p.create();
    const uint64_t list = p.slot_addr() + pv::slot::LIST;
    a.raw.set_vram64(list, OWN_PAGE);
    a.raw.set_vram64(list + 8, a.foreign(a.victim.small_gaddr));
    EXPECT_EQ(p.batch({{pv::Opcode::map_list, 0, RAW_SPACE, PV_VA, pv::slot::LIST, 2}}), PvR::outside_partition);
    a.raw.set_vram64(list + 8, a.foreign(a.victim.big_gaddr));
    EXPECT_EQ(p.batch({{pv::Opcode::map_list, pv::op::Big::mask, RAW_SPACE, PV_VA, pv::slot::LIST, 2}}),
              PvR::outside_partition);
    // A list that runs past the slot (into the next slot, or the victim).
    EXPECT_EQ(p.batch({{pv::Opcode::map_list, 0, RAW_SPACE, PV_VA, pv::SLOT_BYTES - 8, 4}}), PvR::bad_list);
    EXPECT_EQ(p.own_mappings(), 0u);
  });
}

// Batch counts and slot indices out of range; a slot area in the victim's VRAM.
TEST(IsolationPv, BatchCountOrSlotOutOfRangeIsRefused) {
  run_pv([](Attack& a, RawPv& p) {
    const auto c0 = a.counters();
    for (uint32_t count : {0u, pv::MAX_OPS + 1, 0xffffffffu}) {
      a.raw.set_vram32(p.slot_addr() + pv::slot::COUNT, count);
      EXPECT_EQ(p.ring(), PvR::bad_count) << count;
    }
    for (uint32_t v : {pv::SLOTS, 0xffu, 0x100u, 0xffffffffu}) {
      a.raw.set_reg(pv::DOORBELL, v);
      EXPECT_EQ(a.raw.reg(pv::STATUS), uint32_t(PvR::bad_slot)) << v;
    }
    EXPECT_EQ(a.counters().pv_failures - c0.pv_failures, 7u);
    // Last: a slot area in the victim's VRAM is refused (and this ends the
    // attacker driver's PV session: its context is not used again).
    a.raw.set_reg(pv::SLOT_BASE, pv::SlotBaseEnable::mask | pv::SlotBaseAddr::make(static_cast<uint32_t>(
                                                                a.foreign(0) >> pv::SLOT_BASE_SHIFT)));
    EXPECT_EQ(a.raw.reg(pv::SLOT_BASE), 0u);
    a.raw.set_reg(pv::DOORBELL, 1);
    EXPECT_EQ(a.raw.reg(pv::STATUS), uint32_t(PvR::not_enabled));
    EXPECT_TRUE(a.logged("slot area"));
  });
}

// Address space ids that are not the VM's: beyond the id range, the
// reserved BAR ids of another kind, ids the victim uses but the attacker
// never created. Each is bad_space; the attacker's own id 0 maps only its own VRAM.
TEST(IsolationPv, SpaceIdsThatAreNotTheVmsAreRefused) {
  run_pv([](Attack& a, RawPv& p) {
    for (uint32_t id : {pv::SPACES, 0xffff0002u, 0xffffffffu, 1u, 2u, 100u}) {
      EXPECT_EQ(p.batch({{pv::Opcode::map, 0, id, PV_VA, OWN_PAGE, 1}}), PvR::bad_space) << id;
      EXPECT_EQ(p.batch({{pv::Opcode::destroy_space, 0, id}}), PvR::bad_space) << id;
    }
    // Id 0 is the attacker's own context space here, whatever it is in the victim.
    EXPECT_EQ(p.batch({{pv::Opcode::map, 0, 0, PV_VA, a.foreign(a.victim.small_gaddr), 1}}), PvR::outside_partition);
    p.own_mappings(0);
  });
}

// Overlapping map and unmap of one range in one batch, the last op aiming
// outside: the ops run in order and the failing one applies nothing.
TEST(IsolationPv, OverlappingMapAndUnmapInOneBatchStayConfined) {
  run_pv([](Attack& a, RawPv& p) {
    p.create();
    EXPECT_EQ(p.batch({{pv::Opcode::map, 0, RAW_SPACE, PV_VA, OWN_PAGE, 8},
                       {pv::Opcode::unmap, 0, RAW_SPACE, PV_VA + 2 * fmt::SMALL_PAGE, 0, 4},
                       {pv::Opcode::map, 0, RAW_SPACE, PV_VA + fmt::SMALL_PAGE, OWN_PAGE + 0x10000, 2},
                       {pv::Opcode::map, 0, RAW_SPACE, PV_VA, a.foreign(a.victim.small_gaddr), 8},
                       {pv::Opcode::unmap, 0, RAW_SPACE, PV_VA, 0, 8}}),
              PvR::outside_partition);
    EXPECT_EQ(p.done(), 3u);
    EXPECT_EQ(p.result(4), uint32_t(PvR::not_run));
    // 8 mapped, 4 unmapped, 2 remapped (one of them over an unmapped page): 5 left.
    EXPECT_EQ(p.own_mappings(), 5u);
  });
}

// Flushes of ids that are not the attacker's reach nothing; its own flush
// drops only its own TLB entries (the victim never sees a fault or error).
TEST(IsolationPv, FlushOfAnotherVmsSpaceIsRefused) {
  run_pv([](Attack& a, RawPv& p) {
    const auto c0 = a.counters();
    uint32_t refused = 0;
    for (uint32_t id = 1; id < 16; ++id) refused += p.batch({{pv::Opcode::flush, 0, id}}) == PvR::bad_space;
    EXPECT_EQ(refused, 15u);
    EXPECT_EQ(p.batch({{pv::Opcode::flush, 0, pv::SPACE_BAR1}}), PvR::ok);  // its own BAR1
    EXPECT_EQ(a.counters().tlb_invalidates - c0.tlb_invalidates, 1u);
  });
}

// Four threads of the attacker ring their own slots at once, each batch a
// legal map and a map of a victim page; every batch stops at the second.
TEST(IsolationPv, ConcurrentHypercallsFromSeveralThreadsStayConfined) {
  run_pv([](Attack& a, RawPv&) {
    constexpr uint32_t THREADS = 4, RINGS = 200;
    for (uint32_t t = 0; t < THREADS; ++t) {
      RawPv q{a, 1 + t};
      q.create(RAW_SPACE + t);
      q.fill({{pv::Opcode::map, 0, RAW_SPACE + t, PV_VA, OWN_PAGE + t * fmt::SMALL_PAGE, 1},
              {pv::Opcode::map, 0, RAW_SPACE + t, PV_VA + fmt::SMALL_PAGE, a.foreign(a.victim.small_gaddr), 4}});
    }
    const auto c0 = a.counters();
    std::vector<std::thread> threads;
    for (uint32_t t = 0; t < THREADS; ++t)
      threads.emplace_back([&a, t] {
        for (uint32_t i = 0; i < RINGS; ++i) a.raw.set_reg(pv::DOORBELL, pv::DoorbellSlot::make(1 + t));
      });
    for (auto& th : threads) th.join();
    const auto c1 = a.counters();
    EXPECT_EQ(c1.pv_batches - c0.pv_batches, THREADS * RINGS);
    EXPECT_EQ(c1.pv_failures - c0.pv_failures, THREADS * RINGS);
    for (uint32_t t = 0; t < THREADS; ++t) {
      RawPv q{a, 1 + t};
      EXPECT_EQ(q.done(), 1u);
      EXPECT_EQ(q.result(1), uint32_t(PvR::outside_partition));
      EXPECT_EQ(q.own_mappings(RAW_SPACE + t), 1u);
    }
  });
}

// A second thread rewrites the batch (the target address and the page
// count) while the first rings it again and again: each run validated and
// applied one consistent copy, so nothing ever maps outside.
TEST(IsolationPv, BatchRewrittenDuringProcessingStaysConfined) {
  run_pv([](Attack& a, RawPv& p) {
    p.create();
    p.fill({{pv::Opcode::map, 0, RAW_SPACE, PV_VA, OWN_PAGE, 4}});
    const uint64_t rec = p.slot_addr() + pv::slot::OPS;
    std::atomic<bool> stop{false};
    std::atomic<uint32_t> rewrites{0};
    // The rewriter is the only PRAMIN user meanwhile; the ringer only writes DOORBELL.
    std::thread rewriter([&] {
      std::mt19937 rng(11);  // random choices: no fixed phase against the ringer
      for (uint32_t i = 0; !stop.load(std::memory_order_acquire); ++i) {
        a.raw.set_vram64(rec + pv::op::ADDR, rng() % 2 ? a.foreign(a.victim.small_gaddr) : OWN_PAGE);
        a.raw.set_vram32(rec + pv::op::PAGES, rng() % 3 ? 4 : pv::MAX_PAGES * 2);
        rewrites.fetch_add(1, std::memory_order_relaxed);
      }
    });
    const auto c0 = a.counters();
    // At least 2000 rings, and on until the rewriter has rewritten 500 times.
    constexpr uint32_t RINGS = 2000, REWRITES = 500, MAX_RINGS = 2'000'000;
    uint32_t rings = 0;
    while (rings < MAX_RINGS && (rings < RINGS || rewrites.load(std::memory_order_relaxed) < REWRITES)) {
      a.raw.set_reg(pv::DOORBELL, pv::DoorbellSlot::make(p.slot));
      ++rings;
    }
    stop.store(true, std::memory_order_release);
    rewriter.join();
    const auto c1 = a.counters();
    EXPECT_GE(rewrites.load(), REWRITES);
    EXPECT_EQ(c1.pv_batches - c0.pv_batches, rings);
    // How many runs saw a foreign or oversized copy depends on how the two
    // threads interleave (the unit test PvServer.TheBatchIsReadOnceFromACopy
    // pins copy-once down); what must hold is that none of them mapped
    // outside, whichever copy each saw.
    EXPECT_EQ(c1.pv_failures - c0.pv_failures, c1.guest_errors - c0.guest_errors);
    ::testing::Test::RecordProperty("refused_runs", static_cast<int>(c1.pv_failures - c0.pv_failures));
    const size_t n = p.own_mappings();
    EXPECT_LE(n, 4u);
  });
}

// set_pd naming the victim's page directory (or one past the partition):
// refused, so no instance block of the attacker can reach the victim's tables.
TEST(IsolationPv, SetPdOutsidePartitionIsRefused) {
  run_pv([](Attack& a, RawPv& p) {
    p.create();
    EXPECT_EQ(p.batch({{pv::Opcode::set_pd, 0, RAW_SPACE, 0, a.foreign(a.victim.pd)}}), PvR::outside_partition);
    EXPECT_EQ(p.batch({{pv::Opcode::set_pd, 0, RAW_SPACE, 0, VM_VRAM}}), PvR::outside_partition);
    // Its own driver's directory name is taken: pd_in_use, not a takeover.
    EXPECT_EQ(p.batch({{pv::Opcode::set_pd, 0, RAW_SPACE, 0, a.pd()}}), PvR::pd_in_use);
  });
}

// PV-11: system-memory targets through a hypercall are confined to the
// VM's RAM as the hypervisor reports it, page by page (the scanning path's
// check): just past the end of RAM, into the victim's RAM (where an
// unchecked offset would land), at the top of the bus, and a range that
// starts inside RAM but runs past its end are refused and apply nothing;
// a range inside RAM maps (PinnedModes.*/pv moves data through such maps).
TEST(IsolationPv, SystemMemoryTargetsAreConfinedToTheVmsRam) {
  run_pv([](Attack& a, RawPv& p) {
    p.create();
    const uint64_t page = fmt::SMALL_PAGE;
    const auto map = [&](uint64_t gpa, uint32_t pages) {
      return p.batch({{pv::Opcode::map, pv::op::Sysmem::mask, RAW_SPACE, PV_VA, gpa, pages}});
    };
    // DONE: the count of operations the batch applied.
    EXPECT_EQ(map(VM_RAM, 1), PvR::target_refused);
    EXPECT_EQ(p.done(), 0u);
    EXPECT_EQ(map(foreign_ram(a, VM_RAM / 2), 4), PvR::target_refused);
    EXPECT_EQ(p.done(), 0u);
    EXPECT_EQ(map(fmt::VA_LIMIT - page, 1), PvR::target_refused);
    EXPECT_EQ(p.done(), 0u);
    EXPECT_EQ(map(VM_RAM - 2 * page, 4), PvR::target_refused) << "a range running past RAM's end";
    EXPECT_EQ(p.done(), 0u);
    EXPECT_EQ(map(VM_RAM - 4 * page, 4), PvR::ok);
    EXPECT_EQ(p.done(), 1u);
  });
}

}  // namespace
}  // namespace vgpu::mediator::isolation
