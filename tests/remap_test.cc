// SPDX-License-Identifier: GPL-2.0-or-later
// Shadowing sync points, dirty tracking, BAR remap and the trap counters,
// observed around real driver operations in the testbed.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <set>
#include <vector>

#include "driver/runtime.h"
#include "mediator/vgpu.h"
#include "testbed/testbed.h"
#include "testbed/testing/testbeds.h"
#include "tests/testing/fill_check.h"
#include "vgpu/formats.h"

namespace vgpu::mediator {
namespace {

namespace pf = regs::pfifo;
namespace pbus = regs::pbus;
using driver::Bar;
using testbed::Mode;

constexpr uint64_t VM_VRAM = 128 * MiB;
constexpr uint64_t BUFFER_BYTES = 64 * KiB;

// A VM with an open driver and one context.
class Driven : public ::testing::Test {
 protected:
  void open(Mode mode) {
    tb_ = testing::create_testbed(testing::one_vm(mode, VM_VRAM));
    ASSERT_TRUE(tb_);
    v_ = tb_->vgpu(0);
    auto dev = driver::Device::open(tb_->port(0));
    ASSERT_TRUE(dev) << dev.error().what();
    dev_ = std::move(*dev);
    auto ctx = dev_->create_context();
    ASSERT_TRUE(ctx) << ctx.error().what();
    ctx_ = std::move(*ctx);
  }
  void TearDown() override {
    ctx_.reset();
    dev_.reset();
  }
  driver::Port& port() { return tb_->port(0); }
  uint32_t rd(uint32_t off) { return port().read32(Bar::bar0, off); }
  void wr(uint32_t off, uint32_t value) { port().write32(Bar::bar0, off, value); }
  gpu::Vram& vram() { return tb_->host()->gpu().vram(); }

  // A buffer filled with a known pattern through upload (the direct BAR1 path).
  std::vector<uint32_t> upload_pattern(driver::Buffer& buf) {
    std::vector<uint32_t> words(BUFFER_BYTES / sizeof(uint32_t));
    for (size_t i = 0; i < words.size(); ++i) words[i] = 0x9e3779b9u * static_cast<uint32_t>(i + 1);
    auto b = ctx_->alloc(BUFFER_BYTES);
    EXPECT_TRUE(b) << b.error().what();
    if (!b) return {};
    buf = *b;
    Status s = ctx_->upload(buf, std::span<const uint32_t>(words));
    EXPECT_TRUE(s) << s.error().what();
    return words;
  }

  // The BAR1 offset at which a direct range shows `words` (contiguously).
  std::optional<uint64_t> direct_bar1_offset(const std::vector<uint32_t>& words) {
    const uint64_t len = words.size() * sizeof(uint32_t);
    for (const DirectRange& r : v_->direct_ranges(gpu::Bar::bar1)) {
      for (uint64_t off = 0; off + len <= r.bytes; off += fmt::SMALL_PAGE) {
        bool match = true;
        for (size_t i = 0; i < words.size() && match; ++i)
          match = vram().read32(r.vram_addr + off + i * sizeof(uint32_t)) == words[i];
        if (match) return r.bar_offset + off;
      }
    }
    return std::nullopt;
  }

  // Guest VRAM address of the page directory named by an instance block.
  uint64_t guest_pd_of(uint64_t guest_inst) {
    const uint64_t host = v_->partition().base + guest_inst;
    return (uint64_t{regs::inst::PdbAddrHi::get(vram().read32(host + regs::inst::PDB_HI))} << 32) |
           (vram().read32(host + regs::inst::PDB_LO) & regs::inst::PdbAddrLo::mask);
  }
  uint64_t bar_pd(uint32_t bar_inst_reg) {
    return guest_pd_of(uint64_t{pbus::BarInstAddr::get(rd(bar_inst_reg))} << pbus::BAR_INST_SHIFT);
  }
  uint64_t context_pd() {
    return guest_pd_of(uint64_t{pf::ChanInstAddr::get(rd(pf::CHAN_INST[ctx_->channel_id()].offset))}
                       << pf::CHAN_INST_SHIFT);
  }

  // Guest VRAM pages holding a page directory and every table it names,
  // read straight from the guest's memory.
  void add_table_pages(uint64_t pd, std::set<uint64_t>& pages) {
    auto add = [&](uint64_t table, uint64_t bytes) {
      for (uint64_t p = table; p < table + bytes; p += fmt::SMALL_PAGE) pages.insert(p);
    };
    add(pd, fmt::PD.table_bytes());
    for (uint64_t i = 0; i < fmt::PD.entries(); ++i) {
      const uint64_t e = vram().read64(v_->partition().base + pd + i * fmt::PD.entry_bytes);
      if (fmt::pde::SptTarget::get(e) == uint64_t(fmt::PdeTarget::vram))
        add(fmt::pde::spt_addr(e), fmt::SPT.table_bytes());
      if (fmt::pde::LptTarget::get(e) == uint64_t(fmt::PdeTarget::vram))
        add(fmt::pde::lpt_addr(e), fmt::LPT.table_bytes());
    }
  }

  uint64_t userd_bar1(uint32_t chid) {
    return (uint64_t{pf::UserdBaseAddr::get(rd(pf::USERD_BASE.offset))} << pf::USERD_BASE_SHIFT) +
           uint64_t{chid} * regs::userd::SIZE;
  }

  // The four sync points, each done the way a driver would redo it.
  void invalidate_all_tlbs() {
    wr(regs::mmu::INVALIDATE.offset,
       regs::mmu::InvalidateTrigger::mask | regs::mmu::InvalidatePageAll::mask | regs::mmu::InvalidateAllPdb::mask);
  }
  void rebind_channel() {
    const uint32_t chid = ctx_->channel_id();
    wr(pf::CHAN_INST[chid].offset, rd(pf::CHAN_INST[chid].offset));
  }
  void resubmit_runlist() {
    wr(pf::RUNLIST_SUBMIT.offset, pf::RunlistCount::make(static_cast<uint32_t>(v_->runlist_pchids().size())));
  }
  void ring_same_gp_put() {
    const uint64_t put = userd_bar1(ctx_->channel_id()) + regs::userd::GP_PUT;
    port().write32(Bar::bar1, put, port().read32(Bar::bar1, put));
  }

  // fv-opt, with the pattern uploaded into a buffer BAR1 maps directly
  // (upload_pattern, direct_bar1_offset): the buffer, its words and where BAR1 maps them.
  struct DirectBuffer {
    driver::Buffer buf;
    std::vector<uint32_t> words;
    uint64_t offset = 0;
  };
  void open_direct_buffer(DirectBuffer& d) {
    ASSERT_NO_FATAL_FAILURE(open(Mode::fv_opt));
    d.words = upload_pattern(d.buf);
    const auto off = direct_bar1_offset(d.words);
    ASSERT_TRUE(off);
    d.offset = *off;
  }

  // fv-naive: `sync_point` syncs the shadow page tables in full. The
  // counters before it (for the sync point's own counter), none when the VM did not open.
  template <typename F>
  std::optional<CounterSnapshot> naive_syncs_in_full_at(F sync_point) {
    open(Mode::fv_naive);
    if (HasFatalFailure()) return std::nullopt;
    const auto before = v_->counters();
    sync_point();
    EXPECT_GT(v_->counters().full_syncs, before.full_syncs);
    return before;
  }

  std::unique_ptr<testbed::Testbed> tb_;
  Vgpu* v_ = nullptr;
  std::unique_ptr<driver::Device> dev_;
  std::unique_ptr<driver::Context> ctx_;
};

// ---- sync points

TEST_F(Driven, NaiveSyncsInFullAtTlbInvalidate) {
  const auto before = naive_syncs_in_full_at([&] { invalidate_all_tlbs(); });
  ASSERT_TRUE(before);
  EXPECT_EQ(v_->counters().tlb_invalidates, before->tlb_invalidates + 1);
}

TEST_F(Driven, NaiveSyncsInFullAtChannelBind) {
  EXPECT_TRUE(naive_syncs_in_full_at([&] { rebind_channel(); }));
}

TEST_F(Driven, NaiveSyncsInFullAtRunlistSubmit) {
  EXPECT_TRUE(naive_syncs_in_full_at([&] { resubmit_runlist(); }));
}

TEST_F(Driven, NaiveSyncsInFullAtGpPut) {
  const auto before = naive_syncs_in_full_at([&] { ring_same_gp_put(); });
  ASSERT_TRUE(before);
  EXPECT_EQ(v_->counters().doorbells, before->doorbells + 1);
}

TEST_F(Driven, LazyModeDoesNotSyncAtTheSyncPoints) {
  ASSERT_NO_FATAL_FAILURE(open(Mode::fv_opt));
  const auto before = v_->counters();
  invalidate_all_tlbs();
  resubmit_runlist();
  ring_same_gp_put();
  rebind_channel();  // last: the rebound channel is not run again here
  const auto after = v_->counters();
  EXPECT_EQ(after.tlb_invalidates, before.tlb_invalidates + 1);
  EXPECT_EQ(after.doorbells, before.doorbells + 1);
  EXPECT_EQ(after.full_syncs, before.full_syncs);
  EXPECT_EQ(after.pages_rescanned, before.pages_rescanned);
}

// Maps one small buffer and runs a fill on it; true when the fill's result is right.
bool map_and_fill(driver::Context& ctx, float value) {
  auto buf = ctx.alloc(fmt::SMALL_PAGE);  // one new PTE (and at most its PDE)
  return buf && testing::fill_and_check(ctx, *buf, 16, value);
}

TEST_F(Driven, LazyDispatchRescansOnlyThePagesWritten) {
  ASSERT_NO_FATAL_FAILURE(open(Mode::fv_opt));
  // Warm-up: table pages first tracked at a layout rebuild are rescanned
  // once in full (they may have been written through a direct mapping).
  ASSERT_TRUE(map_and_fill(*ctx_, 1.f));
  const auto s0 = v_->counters();
  auto buf = ctx_->alloc(fmt::SMALL_PAGE);
  ASSERT_TRUE(buf) << buf.error().what();
  const auto s1 = v_->counters();
  EXPECT_EQ(s1.pages_rescanned, s0.pages_rescanned) << "nothing is rescanned at the map's TLB invalidate";
  EXPECT_GT(s1.tlb_invalidates, s0.tlb_invalidates);
  auto f = ctx_->fill({*buf, 16, 2.f});
  ASSERT_TRUE(f) << f.error().what();
  ASSERT_TRUE(ctx_->wait(*f));
  const auto s2 = v_->counters();
  EXPECT_GT(s2.dirty_syncs, s1.dirty_syncs);
  EXPECT_GE(s2.pages_rescanned - s1.pages_rescanned, 1u);
  EXPECT_LE(s2.pages_rescanned - s1.pages_rescanned, 2u) << "the PTE's page and at most the PDE's";
  EXPECT_EQ(s2.full_syncs, s0.full_syncs);
  EXPECT_LT(s2.entries_scanned - s1.entries_scanned, fmt::PD.entries()) << "less than one full directory scan";
  std::vector<float> got(16);
  ASSERT_TRUE(ctx_->download(*buf, std::span<float>(got)));
  for (float x : got) EXPECT_EQ(x, 2.f);
}

TEST_F(Driven, NewlyTrackedTablePagesAreRescannedAfterALayoutRebuild) {
  ASSERT_NO_FATAL_FAILURE(open(Mode::fv_opt));
  // The context's tables were first shadowed at its first dispatch; the
  // next TLB invalidate rebuilds the layout, trapping them from then on,
  // and marks them dirty: the next dispatch rescans them.
  const auto s0 = v_->counters();
  ASSERT_TRUE(map_and_fill(*ctx_, 1.f));
  const auto s1 = v_->counters();
  EXPECT_GT(s1.layout_rebuilds, s0.layout_rebuilds);
  EXPECT_GT(s1.pages_rescanned - s0.pages_rescanned, 2u);
  EXPECT_EQ(s1.full_syncs, s0.full_syncs);
}

// ---- BAR remap

TEST_F(Driven, DirectRangesCoverAnUploadedBuffersBar1Mapping) {
  ASSERT_NO_FATAL_FAILURE(open(Mode::fv_opt));
  driver::Buffer buf;
  const auto words = upload_pattern(buf);
  ASSERT_FALSE(words.empty());
  EXPECT_TRUE(direct_bar1_offset(words).has_value());
}

TEST_F(Driven, DirectRangesExcludeUserdPages) {
  ASSERT_NO_FATAL_FAILURE(open(Mode::fv_opt));
  driver::Buffer buf;
  ASSERT_FALSE(upload_pattern(buf).empty());
  const uint64_t userd = userd_bar1(0);
  const uint64_t userd_end = userd + uint64_t{v_->config().channels} * regs::userd::SIZE;
  const auto ranges = v_->direct_ranges(gpu::Bar::bar1);
  ASSERT_FALSE(ranges.empty());
  for (const DirectRange& r : ranges)
    EXPECT_FALSE(r.bar_offset < userd_end && userd < r.bar_offset + r.bytes)
        << "direct range at BAR1 " << r.bar_offset << " overlaps USERD";
}

TEST_F(Driven, DirectRangesExcludePageTablePages) {
  ASSERT_NO_FATAL_FAILURE(open(Mode::fv_opt));
  driver::Buffer buf;
  ASSERT_FALSE(upload_pattern(buf).empty());
  std::set<uint64_t> tables;
  add_table_pages(bar_pd(pbus::BAR1_INST.offset), tables);
  add_table_pages(bar_pd(pbus::BAR3_INST.offset), tables);
  add_table_pages(context_pd(), tables);
  ASSERT_FALSE(tables.empty());
  const uint64_t base = v_->partition().base;
  size_t direct_pages = 0;
  for (gpu::Bar bar : {gpu::Bar::bar1, gpu::Bar::bar3})
    for (const DirectRange& r : v_->direct_ranges(bar))
      for (uint64_t off = 0; off < r.bytes; off += fmt::SMALL_PAGE, ++direct_pages)
        EXPECT_FALSE(tables.contains(r.vram_addr + off - base))
            << "table page at guest VRAM " << (r.vram_addr + off - base) << " is directly mapped";
  EXPECT_GT(direct_pages, 0u);
  EXPECT_FALSE(v_->direct_ranges(gpu::Bar::bar3).empty()) << "BAR3's instance heap has insensitive pages";
}

TEST_F(Driven, MappedSpanShowsTheSameBytesAsTrappedReads) {
  DirectBuffer d;
  ASSERT_NO_FATAL_FAILURE(open_direct_buffer(d));
  const std::span<std::byte> span = port().map(Bar::bar1, d.offset, BUFFER_BYTES);
  ASSERT_EQ(span.size(), BUFFER_BYTES);
  for (size_t i = 0; i < d.words.size(); ++i) {
    uint32_t mapped = 0;
    std::memcpy(&mapped, span.data() + i * sizeof(uint32_t), sizeof(mapped));
    ASSERT_EQ(mapped, v_->bar_read32(gpu::Bar::bar1, d.offset + i * sizeof(uint32_t))) << "word " << i;
    ASSERT_EQ(mapped, d.words[i]) << "word " << i;
  }
}

TEST_F(Driven, NaiveModeMapsNothingDirectly) {
  ASSERT_NO_FATAL_FAILURE(open(Mode::fv_naive));
  driver::Buffer buf;
  ASSERT_FALSE(upload_pattern(buf).empty());
  EXPECT_TRUE(v_->direct_ranges(gpu::Bar::bar1).empty());
  EXPECT_TRUE(v_->direct_ranges(gpu::Bar::bar3).empty());
  EXPECT_TRUE(port().map(Bar::bar1, 0, fmt::SMALL_PAGE).empty());
  EXPECT_TRUE(port().map(Bar::bar3, 0, fmt::SMALL_PAGE).empty());
}

TEST_F(Driven, LayoutGenerationChangesWhenABar1MappingIsFlushed) {
  ASSERT_NO_FATAL_FAILURE(open(Mode::fv_opt));
  const uint64_t g0 = v_->layout_generation();
  driver::Buffer buf;
  const auto words = upload_pattern(buf);  // maps the buffer in BAR1, then invalidates BAR1's TLB
  EXPECT_NE(v_->layout_generation(), g0);
  EXPECT_TRUE(direct_bar1_offset(words).has_value());
}

TEST_F(Driven, LayoutGenerationChangesAtABarTlbInvalidate) {
  ASSERT_NO_FATAL_FAILURE(open(Mode::fv_opt));
  const uint64_t g0 = v_->layout_generation();
  wr(regs::mmu::INVALIDATE_PDB.offset, regs::mmu::InvalidatePdbAddr::make(static_cast<uint32_t>(
                                           bar_pd(pbus::BAR1_INST.offset) >> fmt::TABLE_ALIGN_SHIFT)));
  wr(regs::mmu::INVALIDATE.offset, regs::mmu::InvalidateTrigger::mask | regs::mmu::InvalidatePageAll::mask);
  EXPECT_NE(v_->layout_generation(), g0);
}

TEST_F(Driven, ContextTlbInvalidateWithoutTableChangesKeepsTheLayout) {
  ASSERT_NO_FATAL_FAILURE(open(Mode::fv_opt));
  auto invalidate_context = [&] {
    wr(regs::mmu::INVALIDATE_PDB.offset,
       regs::mmu::InvalidatePdbAddr::make(static_cast<uint32_t>(context_pd() >> fmt::TABLE_ALIGN_SHIFT)));
    wr(regs::mmu::INVALIDATE.offset, regs::mmu::InvalidateTrigger::mask | regs::mmu::InvalidatePageAll::mask);
  };
  invalidate_context();  // picks up the tables shadowed since the last rebuild
  const uint64_t g0 = v_->layout_generation();
  invalidate_context();
  EXPECT_EQ(v_->layout_generation(), g0);
}

// ---- counters

TEST_F(Driven, DirectlyMappedAccessesAreNotTrapped) {
  DirectBuffer d;
  ASSERT_NO_FATAL_FAILURE(open_direct_buffer(d));
  const std::span<std::byte> span = port().map(Bar::bar1, d.offset, BUFFER_BYTES);
  ASSERT_EQ(span.size(), BUFFER_BYTES);
  const auto s0 = v_->counters();
  std::vector<std::byte> copy(span.size());
  std::memcpy(copy.data(), span.data(), span.size());
  std::memset(span.data(), 0x5a, span.size());
  const auto s1 = v_->counters();
  EXPECT_EQ(s1.trapped_reads, s0.trapped_reads);
  EXPECT_EQ(s1.trapped_writes, s0.trapped_writes);
  EXPECT_EQ(std::memcmp(copy.data(), d.words.data(), copy.size()), 0);
}

TEST_F(Driven, TrappedAccessesAreCountedAndDirectOnesAreNot) {
  DirectBuffer d;
  ASSERT_NO_FATAL_FAILURE(open_direct_buffer(d));
  // Through the port, a directly mapped page is plain memory: no trap.
  const auto s0 = v_->counters();
  EXPECT_EQ(port().read32(Bar::bar1, d.offset), d.words[0]);
  port().write32(Bar::bar1, d.offset, d.words[0] + 1);
  const auto s1 = v_->counters();
  EXPECT_EQ(s1.trapped_reads, s0.trapped_reads);
  EXPECT_EQ(s1.trapped_writes, s0.trapped_writes);
  // The same page reached through the trap entry points (what the
  // hypervisor calls for a trapped page), and a register: counted.
  EXPECT_EQ(v_->bar_read32(gpu::Bar::bar1, d.offset), d.words[0] + 1) << "the direct write reached the buffer";
  v_->bar_write32(gpu::Bar::bar1, d.offset, d.words[0] + 2);
  (void)rd(regs::pmc::BOOT_0.offset);
  const auto s2 = v_->counters();
  EXPECT_EQ(s2.trapped_reads, s1.trapped_reads + 2);
  EXPECT_EQ(s2.trapped_writes, s1.trapped_writes + 1);
  const std::span<std::byte> span = port().map(Bar::bar1, d.offset, sizeof(uint32_t));
  ASSERT_EQ(span.size(), sizeof(uint32_t));
  uint32_t mapped = 0;
  std::memcpy(&mapped, span.data(), sizeof(mapped));
  EXPECT_EQ(mapped, d.words[0] + 2) << "the trapped write reached the buffer";
}

}  // namespace
}  // namespace vgpu::mediator
