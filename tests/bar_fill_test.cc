// SPDX-License-Identifier: GPL-2.0-or-later
// A port's fill32 (one trap per page: Vgpu::bar_fill32, and the testbed's
// direct pages written in place) leaves the guest and the mediator as the
// same words written one by one would: the driver, reaching its BARs by
// accesses only (no BAR3 mapping, so its new page tables are cleared by
// fill32), does the same work on two equal VMs, one with fill32 and one
// with the word writes, and their VRAM, trap counts and guest errors match.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "common/text.h"
#include "driver/runtime.h"
#include "mediator/vgpu.h"
#include "testbed/testbed.h"
#include "testbed/testing/testbeds.h"
#include "tests/testing/fill_check.h"

namespace vgpu::mediator {
namespace {

using driver::Bar;
using testbed::Mode;

constexpr uint64_t VM_VRAM = 64 * MiB;
constexpr uint32_t FLOATS = 4096;

// The testbed's port without mappings (every BAR access goes through it),
// with fill32 handed on or split into write32 calls.
class AccessPort final : public driver::Port {
 public:
  AccessPort(driver::Port& inner, bool fills) : inner_(inner), fills_(fills) {}
  uint32_t read32(Bar bar, uint64_t offset) override { return inner_.read32(bar, offset); }
  void write32(Bar bar, uint64_t offset, uint32_t value) override { inner_.write32(bar, offset, value); }
  void fill32(Bar bar, uint64_t offset, uint64_t bytes, uint32_t value) override {
    ++fill_calls;
    if (bar == Bar::bar3 && bytes > largest.bytes) largest = {offset, bytes};
    if (fills_)
      inner_.fill32(bar, offset, bytes, value);
    else
      Port::fill32(bar, offset, bytes, value);
  }
  std::span<std::byte> map(Bar, uint64_t, uint64_t) override { return {}; }
  uint64_t bar_size(Bar bar) const override { return inner_.bar_size(bar); }
  void relax() override { inner_.relax(); }
  bool has_interrupts() const override { return inner_.has_interrupts(); }
  IrqCounts interrupt_counts() override { return inner_.interrupt_counts(); }
  bool wait_interrupt(const IrqCounts& seen, uint64_t timeout_ns) override {
    return inner_.wait_interrupt(seen, timeout_ns);
  }
  std::string name() const override { return "access-" + inner_.name(); }
  Result<driver::PinnedPages> pin(uint64_t bytes) override { return inner_.pin(bytes); }
  void unpin(std::span<std::byte> host) override { inner_.unpin(host); }

  uint64_t fill_calls = 0;
  struct Range {
    uint64_t offset = 0, bytes = 0;
  } largest;  // BAR3's largest fill: the context's small-page table

 private:
  driver::Port& inner_;
  bool fills_;
};

// One VM: the driver opens, makes a context and a buffer, fills it on the
// GPU and reads it back.
struct Run {
  std::unique_ptr<testbed::Testbed> tb;
  std::unique_ptr<AccessPort> port;
  std::vector<std::byte> vram;
  CounterSnapshot counters;
  uint64_t fill_calls = 0;
  bool refill_ran = false;  // a fill launched after its table was cleared completed
};

void drive(Mode mode, bool fills, Run& r) {
  r.tb = testing::create_testbed(testing::one_vm(mode, VM_VRAM));
  ASSERT_TRUE(r.tb);
  r.port = std::make_unique<AccessPort>(r.tb->port(0), fills);
  {
    auto dev = driver::Device::open(*r.port);
    ASSERT_TRUE(dev) << dev.error().what();
    r.port->largest = {};  // the BARs' own tables were the device's
    auto ctx = (*dev)->create_context();
    ASSERT_TRUE(ctx) << ctx.error().what();
    auto buf = (*ctx)->alloc(FLOATS * sizeof(float));
    ASSERT_TRUE(buf) << buf.error().what();
    Status filled = testing::fill_and_check(**ctx, *buf, FLOATS, 3.f);
    ASSERT_TRUE(filled) << filled.error().what();
    // The small-page table, now in use (trapped, shadowed), cleared again:
    // the buffer's pages are gone for the GPU once the shadow sees it.
    const AccessPort::Range t = r.port->largest;
    ASSERT_GT(t.bytes, 0u);
    r.port->fill32(Bar::bar3, t.offset, t.bytes, 0);
    auto again = (*ctx)->fill({*buf, FLOATS, 5.f});
    r.refill_ran = again && (*ctx)->wait(*again, 2'000'000'000);
  }
  Vgpu& v = *r.tb->vgpu(0);
  r.vram.resize(v.partition().size);
  ASSERT_TRUE(r.tb->host()->gpu().vram().read(v.partition().base, r.vram.data(), r.vram.size()));
  r.counters = v.counters();
  r.fill_calls = r.port->fill_calls;
}

void expect_same(Mode mode) {
  Run words, fills;
  ASSERT_NO_FATAL_FAILURE(drive(mode, false, words));
  ASSERT_NO_FATAL_FAILURE(drive(mode, true, fills));
  EXPECT_GT(fills.fill_calls, 0u) << "the driver cleared its new tables with fill32";
  EXPECT_FALSE(words.refill_ran) << "a fill over a cleared table faults";
  EXPECT_EQ(fills.refill_ran, words.refill_ran);
  EXPECT_EQ(fills.fill_calls, words.fill_calls);
  EXPECT_EQ(fills.counters.trapped_writes, words.counters.trapped_writes);
  EXPECT_EQ(fills.counters.guest_errors, words.counters.guest_errors);
  // The shadows saw the same writes: the same table pages rescanned and
  // the same entries written (a page noted once per fill, as per word).
  EXPECT_EQ(fills.counters.pages_rescanned, words.counters.pages_rescanned);
  EXPECT_EQ(fills.counters.shadow_writes, words.counters.shadow_writes);
  EXPECT_EQ(fills.counters.full_syncs, words.counters.full_syncs);
  ASSERT_EQ(fills.vram.size(), words.vram.size());
  EXPECT_EQ(std::memcmp(fills.vram.data(), words.vram.data(), words.vram.size()), 0)
      << "the partitions differ after the same work";
}

TEST(BarFill, NaiveFillsLeaveWhatTheirWordWritesWould) { expect_same(Mode::fv_naive); }
TEST(BarFill, RemappedFillsLeaveWhatTheirWordWritesWould) { expect_same(Mode::fv_opt); }

}  // namespace
// A BAR access that finds no page: one guest error a word, each naming the
// BAR, the access and the offset (a fill over unmapped pages makes 1,024
// of them a page).
TEST(BarFault, EachWordOfAFillOverNoPageIsAGuestErrorNamingIt) {
  testbed::TestbedConfig tc;
  tc.mode = Mode::fv_opt;
  tc.vram_per_vm = VM_VRAM;
  auto tb = testbed::Testbed::create(tc);
  ASSERT_TRUE(tb) << tb.error().what();
  auto dev = driver::Device::open((*tb)->port(0));
  ASSERT_TRUE(dev) << dev.error().what();
  Vgpu& v = *(*tb)->vgpu(0);
  const uint64_t last = (*tb)->port(0).bar_size(Bar::bar1) - sizeof(uint32_t);
  const uint64_t errors = v.counters().guest_errors;
  v.bar_fill32(gpu::Bar::bar1, last - sizeof(uint32_t), 2 * sizeof(uint32_t), 7);
  (void)v.bar_read32(gpu::Bar::bar1, last);
  ASSERT_EQ(v.counters().guest_errors - errors, 3u);
  const auto& lines = v.guest_errors();
  const auto ends = [](const std::string& line, const std::string& tail) {
    return line.size() >= tail.size() && line.compare(line.size() - tail.size(), tail.size(), tail) == 0;
  };
  const std::vector<std::string> want = {"BAR1 write at " + hex(last - 4) + ": no page mapped",
                                         "BAR1 write at " + hex(last) + ": no page mapped",
                                         "BAR1 read at " + hex(last) + ": no page mapped"};
  ASSERT_GE(lines.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(ends(lines[lines.size() - want.size() + i], ": " + want[i])) << lines[lines.size() - want.size() + i];
}

}  // namespace vgpu::mediator
