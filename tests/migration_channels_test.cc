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

#include "driver/runtime.h"
#include "mediator/vgpu.h"
#include "testbed/testbed.h"

namespace vgpu::mediator {
namespace {

using driver::Bar;
using testbed::Mode;

constexpr uint64_t VM_VRAM = 64 * MiB;
constexpr uint32_t VM_CHANNELS = 8;
constexpr uint32_t N = 4096;     // elements per buffer
constexpr int JOBS_BEFORE = 24;  // submitted on A, not waited for
constexpr int JOBS_AFTER = 16;   // submitted on B
constexpr uint64_t FREEZE_NS = 5'000'000'000;

std::unique_ptr<testbed::Testbed> make_testbed() {
  testbed::TestbedConfig tc;
  tc.mode = Mode::fv_naive;  // every BAR access trapped: the driver keeps no mapping of A's VRAM
  tc.vram_per_vm = VM_VRAM;
  tc.channels_per_vm = VM_CHANNELS;
  auto tb = testbed::Testbed::create(tc);
  EXPECT_TRUE(tb) << tb.error().what();
  return tb ? std::move(*tb) : nullptr;
}

// The guest's side of the move: the driver talks to whichever vGPU is
// current, by trapped accesses only, and polls (the interrupt counts of
// two vGPUs are not one sequence).
class MovingPort final : public driver::Port {
 public:
  explicit MovingPort(driver::Port* target) : target_(target) {}
  void move_to(driver::Port* target) { target_ = target; }
  uint32_t read32(Bar bar, uint64_t offset) override { return target_->read32(bar, offset); }
  void write32(Bar bar, uint64_t offset, uint32_t value) override { target_->write32(bar, offset, value); }
  std::span<std::byte> map(Bar, uint64_t, uint64_t) override { return {}; }
  uint64_t bar_size(Bar bar) const override { return target_->bar_size(bar); }
  void relax() override { target_->relax(); }
  std::string name() const override { return "moving"; }

 private:
  driver::Port* target_;
};

// What RAM migration does for VRAM: the destination's partition gets the
// source's bytes.
void copy_partition(testbed::Testbed& from, testbed::Testbed& to) {
  const shadow::Partition& a = from.vgpu(0)->partition();
  const shadow::Partition& b = to.vgpu(0)->partition();
  ASSERT_EQ(a.size, b.size);
  std::memcpy(to.host()->gpu().vram().data() + b.base, from.host()->gpu().vram().data() + a.base, a.size);
}

struct Chain {
  std::unique_ptr<driver::Device> dev;
  std::unique_ptr<driver::Context> ctx;
  driver::Buffer x{}, y{};

  Status open(driver::Port& port) {
    auto d = driver::Device::open(port);
    if (!d) return std::unexpected(d.error());
    dev = std::move(*d);
    auto c = dev->create_context();
    if (!c) return std::unexpected(c.error());
    ctx = std::move(*c);
    auto bx = ctx->alloc(N * sizeof(float)), by = ctx->alloc(N * sizeof(float));
    if (!bx || !by) return std::unexpected(bx ? by.error() : bx.error());
    x = *bx;
    y = *by;
    std::vector<float> xs(N), ys(N, 0.0f);
    for (uint32_t i = 0; i < N; ++i) xs[i] = static_cast<float>(i % 97) * 0.25f + 0.5f;
    if (Status s = ctx->upload(x, std::span<const float>(xs)); !s) return s;
    return ctx->upload(y, std::span<const float>(ys));
  }
  // Jobs k: y = 1.5 x + y, each reading the previous job's y; not waited for.
  Status submit(int jobs) {
    for (int k = 0; k < jobs; ++k)
      if (auto f = ctx->saxpy({x, y, N, 1.5f}); !f) return std::unexpected(f.error());
    return {};
  }
  Result<std::vector<std::byte>> result() {
    if (Status s = ctx->synchronize(); !s) return std::unexpected(s.error());
    std::vector<std::byte> out(N * sizeof(float));
    if (Status s = ctx->download(y, 0, out); !s) return std::unexpected(s.error());
    return out;
  }
};

// The output of `jobs` chained jobs on a vGPU that never moves.
Result<std::vector<std::byte>> unmoved_output(int jobs) {
  auto tb = make_testbed();
  if (!tb) return fail(Errc::device_error, "the unmoved testbed");
  Chain reference;
  if (Status s = reference.open(tb->port(0)); !s) return std::unexpected(s.error());
  if (Status s = reference.submit(jobs); !s) return std::unexpected(s.error());
  return reference.result();
}

// The move itself, from a frozen source: its image and its VRAM go to the
// destination, which imports the image.
Status move_vgpu(testbed::Testbed& from, testbed::Testbed& to) {
  Result<std::vector<uint8_t>> image = from.vgpu(0)->export_image();
  if (!image) return std::unexpected(image.error());
  copy_partition(from, to);
  return to.vgpu(0)->import_image(*image);
}

TEST(MigrationChannels, AChainOfJobsMovedMidwayEndsAsTheUnmovedChain) {
  auto a = make_testbed(), b = make_testbed();
  ASSERT_TRUE(a && b);
  Result<std::vector<std::byte>> want = unmoved_output(JOBS_BEFORE + JOBS_AFTER);
  ASSERT_TRUE(want) << want.error().what();

  MovingPort port(&a->port(0));
  Chain chain;
  ASSERT_TRUE(chain.open(port));
  ASSERT_TRUE(chain.submit(JOBS_BEFORE));
  Status frozen = a->vgpu(0)->freeze(FREEZE_NS);
  ASSERT_TRUE(frozen) << frozen.error().what();
  Status moved = move_vgpu(*a, *b);
  ASSERT_TRUE(moved) << moved.error().what();
  port.move_to(&b->port(0));

  ASSERT_TRUE(chain.submit(JOBS_AFTER));
  Result<std::vector<std::byte>> got = chain.result();
  ASSERT_TRUE(got) << got.error().what();
  EXPECT_TRUE(*got == *want) << "the moved chain's output differs from the unmoved one's";
  const auto* f = reinterpret_cast<const float*>(got->data());
  EXPECT_EQ(f[1], (JOBS_BEFORE + JOBS_AFTER) * 1.5f * 0.75f);  // x[1] = 0.75, every job ran once
  EXPECT_TRUE(chain.ctx->status()) << "the channel reported an error on B";
}

// Jobs the guest rang while A was frozen were never given to A's GPU: they
// travel as GP_PUT ahead of the GPU's put and run on B without a new
// doorbell.
TEST(MigrationChannels, JobsRungWhileFrozenRunOnTheDestination) {
  auto a = make_testbed(), b = make_testbed();
  ASSERT_TRUE(a && b);
  Result<std::vector<std::byte>> want = unmoved_output(JOBS_BEFORE + JOBS_AFTER);
  ASSERT_TRUE(want) << want.error().what();

  MovingPort port(&a->port(0));
  Chain chain;
  ASSERT_TRUE(chain.open(port));
  ASSERT_TRUE(chain.submit(JOBS_BEFORE));
  ASSERT_TRUE(a->vgpu(0)->freeze(FREEZE_NS));
  ASSERT_TRUE(chain.submit(JOBS_AFTER));  // rung on the frozen source
  Status moved = move_vgpu(*a, *b);
  ASSERT_TRUE(moved) << moved.error().what();
  port.move_to(&b->port(0));

  Result<std::vector<std::byte>> got = chain.result();
  ASSERT_TRUE(got) << got.error().what();
  EXPECT_TRUE(*got == *want) << "the moved chain's output differs from the unmoved one's";
}

// QEMU's destination freezes its vGPU before the load and thaws it at
// resume: an import into a frozen vGPU runs nothing, neither the entries A
// had given its GPU nor those rung while A was frozen, until the thaw.
TEST(MigrationChannels, AFrozenDestinationRunsNothingUntilItsThaw) {
  constexpr auto WATCH = std::chrono::milliseconds(100);
  auto a = make_testbed(), b = make_testbed();
  ASSERT_TRUE(a && b);
  Result<std::vector<std::byte>> want = unmoved_output(JOBS_BEFORE + JOBS_AFTER);
  ASSERT_TRUE(want) << want.error().what();

  MovingPort port(&a->port(0));
  Chain chain;
  ASSERT_TRUE(chain.open(port));
  ASSERT_TRUE(chain.submit(JOBS_BEFORE));
  ASSERT_TRUE(a->vgpu(0)->freeze(FREEZE_NS));
  ASSERT_TRUE(chain.submit(JOBS_AFTER));  // rung on the frozen source
  ASSERT_TRUE(b->vgpu(0)->freeze(FREEZE_NS));
  Status moved = move_vgpu(*a, *b);
  ASSERT_TRUE(moved) << moved.error().what();
  port.move_to(&b->port(0));

  const shadow::Partition& part = b->vgpu(0)->partition();
  const std::byte* vram = b->host()->gpu().vram().data() + part.base;
  const std::vector<std::byte> at_import(vram, vram + part.size);
  std::this_thread::sleep_for(WATCH);
  EXPECT_EQ(std::memcmp(at_import.data(), vram, part.size), 0) << "the frozen destination ran work before its thaw";
  b->vgpu(0)->thaw();
  Result<std::vector<std::byte>> got = chain.result();
  ASSERT_TRUE(got) << got.error().what();
  EXPECT_TRUE(*got == *want) << "the moved chain's output differs from the unmoved one's";
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
  Result<std::vector<std::byte>> got = chain.result();
  ASSERT_TRUE(got) << got.error().what();
  EXPECT_TRUE(*got == *want) << "the moved chain's output differs from the unmoved one's";
}

// A launch held between slices is not in the image yet (DividedWork::image,
// the rest of M4): the export is refused, naming it, and the source, thawed
// as a cancelled migration leaves it, finishes the launch.
TEST(MigrationChannels, AMoveDuringASlicedSpinIsRefusedAndTheSourceFinishesIt) {
  constexpr uint64_t SPIN_NS = 120'000'000;  // sliced by time (the default)
  constexpr auto INTO_SPIN = std::chrono::milliseconds(20);
  auto a = make_testbed();
  ASSERT_TRUE(a);
  Chain chain;
  ASSERT_TRUE(chain.open(a->port(0)));
  auto spin = chain.ctx->spin({SPIN_NS});
  ASSERT_TRUE(spin) << spin.error().what();
  std::this_thread::sleep_for(INTO_SPIN);
  ASSERT_TRUE(a->vgpu(0)->freeze(FREEZE_NS));
  Result<std::vector<uint8_t>> image = a->vgpu(0)->export_image();
  ASSERT_FALSE(image) << "a launch between slices was exported";
  EXPECT_NE(image.error().message.find("between pieces of divided work (not built yet"), std::string::npos)
      << image.error().message;
  a->vgpu(0)->thaw();
  Status ended = chain.ctx->wait(*spin);
  EXPECT_TRUE(ended) << ended.error().what();
  EXPECT_TRUE(chain.ctx->status()) << "the refused export left a channel error";
}

}  // namespace
}  // namespace vgpu::mediator
