// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU that has run GPU programs moves between two hosts in one process
// (docs/migration.md §12, M4): a chain of jobs, each reading the previous
// one's output, is submitted on host A; A is frozen mid-chain with jobs not
// yet consumed, its image and VRAM go to host B, and the same driver goes
// on there (the guest does not know it moved). The result is compared
// byte for byte with the same chain run unmoved.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "mediator/vgpu_image.h"
#include "tests/testing/moving_vgpu.h"

namespace vgpu::mediator {
namespace {

using driver::Bar;
using namespace moving;

// A's chain after JOBS_BEFORE jobs (not waited for), B the destination,
// and the unmoved chain's output (JOBS_BEFORE + JOBS_AFTER jobs) to compare
// with.
struct MidChain {
  std::unique_ptr<testbed::Testbed> a = make_testbed(), b = make_testbed();
  MovingPort port{a ? &a->port(0) : nullptr};
  Chain chain;
  Result<std::vector<std::byte>> want = unmoved_output(JOBS_BEFORE + JOBS_AFTER);

  void start() {
    ASSERT_TRUE(a && b);
    ASSERT_TRUE(want) << want.error().what();
    ASSERT_TRUE(chain.open(port));
    ASSERT_TRUE(chain.submit(JOBS_BEFORE));
  }
  // Then A frozen, with JOBS_AFTER more rung on it.
  void start_frozen_with_more_rung() {
    ASSERT_NO_FATAL_FAILURE(start());
    ASSERT_TRUE(a->vgpu(0)->freeze(FREEZE_NS));
    ASSERT_TRUE(chain.submit(JOBS_AFTER));  // rung on the frozen source
  }
  // A's image and VRAM to B, and the guest's port after them.
  void move() {
    Status moved = move_vgpu(*a, *b);
    ASSERT_TRUE(moved) << moved.error().what();
    port.move_to(&b->port(0));
  }
  std::vector<std::byte> expect_unmoved_result() {
    Result<std::vector<std::byte>> got = chain.result();
    EXPECT_TRUE(got) << got.error().what();
    if (!got) return {};
    EXPECT_TRUE(*got == *want) << "the moved chain's output differs from the unmoved one's";
    return std::move(*got);
  }

  // B, frozen, ran nothing while watched; once thawed, the chain ends as
  // the unmoved one.
  void expect_nothing_run_until_thaw() {
    constexpr auto WATCH = std::chrono::milliseconds(100);
    const shadow::Partition& part = b->vgpu(0)->partition();
    const std::byte* vram = b->host()->gpu().vram().data() + part.base;
    // Against the frozen source's VRAM, not a copy taken after the import:
    // work run during the import itself would be in such a copy.
    const std::byte* moved_vram = a->host()->gpu().vram().data() + a->vgpu(0)->partition().base;
    std::this_thread::sleep_for(WATCH);
    EXPECT_EQ(std::memcmp(moved_vram, vram, part.size), 0) << "the frozen destination ran work before its thaw";
    b->vgpu(0)->thaw();
    expect_unmoved_result();
  }
};

TEST(MigrationChannels, AChainOfJobsMovedMidwayEndsAsTheUnmovedChain) {
  MidChain s;
  ASSERT_NO_FATAL_FAILURE(s.start());
  Status frozen = s.a->vgpu(0)->freeze(FREEZE_NS);
  ASSERT_TRUE(frozen) << frozen.error().what();
  ASSERT_NO_FATAL_FAILURE(s.move());

  ASSERT_TRUE(s.chain.submit(JOBS_AFTER));
  const std::vector<std::byte> got = s.expect_unmoved_result();
  ASSERT_FALSE(got.empty());
  const auto* f = reinterpret_cast<const float*>(got.data());
  EXPECT_EQ(f[1], (JOBS_BEFORE + JOBS_AFTER) * 1.5f * 0.75f);  // x[1] = 0.75, every job ran once
  EXPECT_TRUE(s.chain.ctx->status()) << "the channel reported an error on B";
}

// Jobs the guest rang while A was frozen were never given to A's GPU: they
// travel as GP_PUT ahead of the GPU's put and run on B without a new
// doorbell.
TEST(MigrationChannels, JobsRungWhileFrozenRunOnTheDestination) {
  MidChain s;
  ASSERT_NO_FATAL_FAILURE(s.start_frozen_with_more_rung());
  ASSERT_NO_FATAL_FAILURE(s.move());
  s.expect_unmoved_result();
}

// QEMU's destination freezes its vGPU before the load and thaws it at
// resume: an import into a frozen vGPU runs nothing, neither the entries A
// had given its GPU nor those rung while A was frozen, until the thaw.
TEST(MigrationChannels, AFrozenDestinationRunsNothingUntilItsThaw) {
  MidChain s;
  ASSERT_NO_FATAL_FAILURE(s.start_frozen_with_more_rung());
  ASSERT_TRUE(s.b->vgpu(0)->freeze(FREEZE_NS));
  ASSERT_NO_FATAL_FAILURE(s.move());
  s.expect_nothing_run_until_thaw();
}

// The image of a source stopped with entries handed to its GPU and not yet
// consumed: each channel's GPU put moved up to the guest's GP_PUT. (This
// test's source consumes everything it was given before its freeze ends,
// so the state is written into its image here.)
std::vector<uint8_t> handed_out(std::span<const uint8_t> bytes) {
  Result<VgpuImage> image = decode_image(bytes);
  EXPECT_TRUE(image) << image.error().what();
  if (!image) return {};
  for (ImageSectionBytes& section : image->sections) {
    if (section.tag != static_cast<uint32_t>(ImageSection::channels)) continue;
    Reader r(section.bytes);
    Writer w;
    const uint32_t count = r.u32();
    w.u32(count);
    for (uint32_t i = 0; i < count; ++i) {
      w.u32(r.u32());
      Result<ChannelRecord> record = decode_channel_record(r);
      EXPECT_TRUE(record) << record.error().what();
      if (!record) return {};
      EXPECT_NE(record->guest_put, record->physical_put) << "nothing rung while frozen to hand out";
      record->physical_put = record->guest_put;
      encode_channel_record(*record, w);
    }
    section.bytes = w.take();
  }
  return encode_image(*image);
}

// Entries the source's GPU was given and had not consumed sit between
// GP_GET and the GPU's put in the image: on a frozen destination the GPU
// must not run them before the thaw (the runnable stop of the import; the
// frozen flag alone does not hold them, as nothing is dispatched for them).
TEST(MigrationChannels, EntriesHandedToTheGpuWaitOnAFrozenDestinationForItsThaw) {
  MidChain s;
  ASSERT_NO_FATAL_FAILURE(s.start_frozen_with_more_rung());
  Result<std::vector<uint8_t>> image = s.a->vgpu(0)->export_image();
  ASSERT_TRUE(image) << image.error().what();
  const std::vector<uint8_t> forged = handed_out(*image);
  ASSERT_FALSE(forged.empty());
  ASSERT_TRUE(s.b->vgpu(0)->freeze(FREEZE_NS));
  copy_partition(*s.a, *s.b);
  Status imported = s.b->vgpu(0)->import_image(forged);
  ASSERT_TRUE(imported) << imported.error().what();
  s.port.move_to(&s.b->port(0));
  s.expect_nothing_run_until_thaw();
}

// QEMU's digest compares the stopped source's image with the paused
// destination's before it runs: a vGPU that took an image and has not run
// since gives the same image back (its channels' restored runs included).
TEST(MigrationChannels, AnImportedVgpuThatHasNotRunExportsTheSameImage) {
  auto a = make_testbed(), b = make_testbed();
  ASSERT_TRUE(a && b);
  MovingPort port(&a->port(0));
  Chain chain;
  ASSERT_TRUE(chain.open(port));
  ASSERT_TRUE(chain.submit(JOBS_BEFORE));
  ASSERT_TRUE(chain.result());  // objects bound, semaphores released
  ASSERT_TRUE(a->vgpu(0)->freeze(FREEZE_NS));
  Result<std::vector<uint8_t>> image = a->vgpu(0)->export_image();
  ASSERT_TRUE(image) << image.error().what();
  ASSERT_TRUE(b->vgpu(0)->freeze(FREEZE_NS));
  copy_partition(*a, *b);
  Status imported = b->vgpu(0)->import_image(*image);
  ASSERT_TRUE(imported) << imported.error().what();
  Result<std::vector<uint8_t>> again = b->vgpu(0)->export_image();
  ASSERT_TRUE(again) << again.error().what();
  EXPECT_TRUE(*again == *image) << "the destination's image (" << again->size() << " bytes) differs from the source's ("
                                << image->size() << " bytes)";
}

// A -> B -> A -> B -> A -> B -> A with jobs between the moves. A vGPU that
// has been left is reset (PMC.ENABLE), as a fresh destination process's
// is, before it takes the image back.
TEST(MigrationChannels, PingPongWithJobsBetweenTheMovesEndsAsTheUnmovedChain) {
  constexpr int MOVES = 6, JOBS_PER_LEG = 5;
  auto a = make_testbed(), b = make_testbed();
  ASSERT_TRUE(a && b);
  Result<std::vector<std::byte>> want = unmoved_output((MOVES + 1) * JOBS_PER_LEG);
  ASSERT_TRUE(want) << want.error().what();

  MovingPort port(&a->port(0));
  Chain chain;
  ASSERT_TRUE(chain.open(port));
  testbed::Testbed* from = a.get();
  testbed::Testbed* to = b.get();
  for (int move = 0; move < MOVES; ++move) {
    ASSERT_TRUE(chain.submit(JOBS_PER_LEG));
    ASSERT_TRUE(from->vgpu(0)->freeze(FREEZE_NS)) << "move " << move;
    to->port(0).write32(Bar::bar0, regs::pmc::ENABLE.offset, 0);
    to->port(0).write32(Bar::bar0, regs::pmc::ENABLE.offset, regs::pmc::enable::ALL);
    Status moved = move_vgpu(*from, *to);
    ASSERT_TRUE(moved) << "move " << move << ": " << moved.error().what();
    to->vgpu(0)->thaw();  // a vGPU moved away from earlier is still frozen
    port.move_to(&to->port(0));
    std::swap(from, to);
  }
  ASSERT_TRUE(chain.submit(JOBS_PER_LEG));
  Status ended = chain.ends_as(*want);
  EXPECT_TRUE(ended) << ended.error().what();
}

}  // namespace
}  // namespace vgpu::mediator
