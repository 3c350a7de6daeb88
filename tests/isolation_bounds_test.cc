// SPDX-License-Identifier: GPL-2.0-or-later
// The isolation catalog (docs/isolation.md), bounds that no other test
// reached (issue 40, item 6): each test here fails when its defence is
// removed (tests/mutation/, `tests/mutation/run`).
//   - one queued submission per channel, with a new GP_PUT per doorbell
//     (channels/shadow_channels.cc, ShadowChannels::doorbell);
//   - a BAR's instance-block limit (mediator/bar_apertures.cc, the end of
//     the mapped pages): a BAR1 access past it faults;
//   - a GPFIFO entry against its channel's instance limit (gpu/gpfifo.cc,
//     Pfifo::fetch_entry): a push-buffer segment past it is an invalid
//     entry.
// Harness: tests/testing/isolation_harness.h.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/testing/isolation_harness.h"

namespace vgpu::mediator::isolation {
namespace {

using namespace std::chrono_literals;

// Whether the engine runs work of the attacker's channel `chid`.
bool engine_busy(Attack& a, uint32_t chid) {
  const uint32_t pchid = a.self.pchid_of(chid);
  return pf::ChanStateEngineOutstanding::get(a.tb.host()->gpu().read32(pf::CHAN_STATE[pchid].offset)) != 0;
}

// While the attacker's own long kernel holds the GPU, it rings a second
// channel's doorbell 20,000 times, each time with a different GP_PUT (the
// storm in isolation_global_state_test.cc rewrites the current one, which
// never reaches the bound; 200 in fv-naive, and at least 50 before the
// spin ends). However many doorbells, a channel has at most one queued
// submission; a last doorbell restores the GP_PUT its driver knows, and
// the attacker's channel works afterwards.
TEST_P(Isolation, ADoorbellStormWithNewGpPutsQueuesOneSubmissionPerChannel) {
  run_isolation(GetParam(), [](Attack& a) {
    auto second = a.vm.device.create_context();
    ASSERT_TRUE(second) << second.error().what();
    driver::Context& other = **second;
    auto spin = a.ctx.spin({1'000'000'000});  // holds the GPU for 1 s; the storm takes far less
    ASSERT_TRUE(spin) << spin.error().what();
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (!engine_busy(a, a.chid()) && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(engine_busy(a, a.chid())) << "the attacker's spin never started";

    const uint32_t chid = other.channel_id();
    const uint32_t put = other.channel().gp_put();
    // fv-naive rescans the shadows at every doorbell: fewer. The storm
    // stops early if the spin ends (a slow machine); it must get going.
    const uint32_t doorbells = GetParam() == Mode::fv_opt ? 20'000 : 200;
    constexpr uint32_t MIN_DOORBELLS = 50;
    size_t most = 0;
    uint32_t rung = 0;
    for (; rung < doorbells; ++rung) {
      if (rung % 10 == 0) {
        // The spin's fence, not the engine: sliced by default, the spin
        // leaves the engine idle between its pieces.
        if (a.ctx.done(*spin)) break;
        most = std::max(most, a.tb.host()->queued_submissions(a.self.id()));
      }
      a.raw.doorbell(chid, put + 1 + rung % 2);
    }
    most = std::max(most, a.tb.host()->queued_submissions(a.self.id()));
    a.raw.doorbell(chid, put);  // back to the GP_PUT its driver knows
    EXPECT_GE(rung, MIN_DOORBELLS) << "the spin ended before the storm got going";
    EXPECT_LE(most, size_t{CHANNELS}) << "doorbells with new GP_PUTs queued a submission each";

    ASSERT_TRUE(a.ctx.wait(*spin));
    driver::Buffer b = a.buffer(fmt::SMALL_PAGE);
    auto f = a.ctx.fill({b, 16, 1.f});
    ASSERT_TRUE(f);
    EXPECT_TRUE(a.ctx.wait(*f));
  });
}

// The attacker shrinks its BAR1 instance block's limit to the USERD
// array's first page and reloads BAR1_INST: the array's last word, still
// mapped by the page tables, lies past the limit and faults
// (vm_limit_exceeded), in every mode, trapped or remapped.
TEST_P(Isolation, BarAccessPastTheInstanceLimitFaults) {
  run_isolation(GetParam(), [](Attack& a) {
    const uint64_t inst = a.raw.bar_inst(Bar::bar1);
    const auto rd = [&](uint32_t off) { return a.raw.vram32(inst + off); };
    const auto wr = [&](uint32_t off, uint32_t v) { a.raw.set_vram32(inst + off, v); };
    const fmt::AddressSpace as = fmt::decode_address_space(rd);
    const uint64_t userd = a.raw.userd_base();
    const uint64_t last = userd + uint64_t{regs::NUM_CHANNELS} * regs::userd::SIZE - sizeof(uint32_t);
    ASSERT_GE(last, userd + fmt::SMALL_PAGE) << "the USERD array fits one page: no word past the new limit";
    const uint32_t bar1_inst = a.raw.reg(pbus::BAR1_INST);
    (void)a.raw.bar_read(Bar::bar1, last);  // mapped: no fault before
    ASSERT_FALSE(a.pending_fault_unit()) << "a fault before the limit changed";

    fmt::encode_address_space(fmt::AddressSpace{.pdb = as.pdb, .limit = userd + fmt::SMALL_PAGE - 1}, wr);
    a.raw.set_reg(pbus::BAR1_INST, bar1_inst);
    EXPECT_EQ(a.raw.bar_read(Bar::bar1, last), ~uint32_t{0});
    a.expect_fault(regs::FaultUnit::bar1, regs::FaultReason::vm_limit_exceeded, last);
    EXPECT_TRUE(a.logged("beyond the BAR's limit"));

    fmt::encode_address_space(as, wr);  // the driver's own limit back
    a.raw.set_reg(pbus::BAR1_INST, bar1_inst);
  });
}

// The attacker's channel rebound with its instance block's address-space
// limit ending between its GPFIFO ring and its push buffer, and listed
// again: the GPFIFO entry naming the push buffer lies past the limit, a
// gpentry_invalid channel error.
TEST_P(Isolation, GpfifoEntryPastTheInstanceLimitIsInvalid) {
  run_isolation(GetParam(), [](Attack& a) {
    driver::Channel& ch = a.ctx.channel();
    ASSERT_LT(ch.gpfifo_va(), ch.pushbuf_va()) << "the driver places the ring below the push buffer";
    // Some work first, so that the push buffer holds methods at its start.
    driver::Buffer b = a.buffer(fmt::SMALL_PAGE);
    auto f = a.ctx.fill({b, 16, 1.f});
    ASSERT_TRUE(f);
    ASSERT_TRUE(a.ctx.wait(*f));

    const uint64_t inst = ch.inst();
    const auto rd = [&](uint32_t off) { return a.raw.vram32(inst + off); };
    const auto wr = [&](uint32_t off, uint32_t v) { a.raw.set_vram32(inst + off, v); };
    const fmt::AddressSpace as = fmt::decode_address_space(rd);
    const uint64_t limit = ch.pushbuf_va() - 1;
    a.raw.set_reg(pf::CHAN_INST[a.chid()].offset, 0);  // unbind, change the limit, bind again
    fmt::encode_address_space(fmt::AddressSpace{.pdb = as.pdb, .limit = limit}, wr);
    a.raw.set_reg(pf::CHAN_INST[a.chid()].offset, fmt::encode_chan_inst({.valid = true, .inst = inst}));
    a.raw.set_reg(pf::CHAN_STATE[a.chid()].offset,
                  pf::ChanStateRunnable::mask | pf::ChanStateEngine::make(pf::ENGINE_NONE));
    driver::Buffer list = a.buffer(fmt::SMALL_PAGE);
    auto runlist = a.raw.translate(a.pd(), a.va(list), fmt::PageSize::small);
    ASSERT_TRUE(runlist);
    a.raw.set_vram32(*runlist + regs::runlist::ENTRY_CHID, fmt::encode_runlist_entry(a.chid())[0]);
    a.raw.set_reg(pf::RUNLIST_BASE, pf::RunlistAddr::make(static_cast<uint32_t>(*runlist >> pf::RUNLIST_SHIFT)));
    a.raw.set_reg(pf::RUNLIST_SUBMIT, pf::RunlistCount::make(1));

    driver::PushBuffer pb;
    pb.inc(driver::subch::HOST, cls::host::NOP, {0u});
    a.submit(pb);
    EXPECT_EQ(a.raw.wait_chan_error(a.chid()), static_cast<uint32_t>(regs::ChannelError::gpentry_invalid))
        << "a push buffer past the channel's limit should be an invalid GPFIFO entry";
    EXPECT_GT(a.chan_error_addr(), limit) << "the error names the entry's push-buffer address, past the limit";
  });
}

}  // namespace
}  // namespace vgpu::mediator::isolation
