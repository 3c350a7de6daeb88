// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU with a PTX module loaded moves (docs/migration.md §2, "User-kernel
// module slots"): the module table travels in the compute object's state
// (its texts, parsed again on the destination; image version 2), the data
// segment with VRAM. The guest launches the module it loaded on A after
// the move on B, with no new load, and gets the unmoved run's output.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ptx/module.h"
#include "ptx/params.h"
#include "tests/testing/moving_vgpu.h"
#include "tests/testing/user_kernels_ptx.h"

namespace vgpu::mediator {
namespace {

using namespace moving;

constexpr uint32_t ELEMENTS = 1000;
constexpr uint32_t BLOCK = 128;
constexpr uint32_t BUMP_BY = 3;
constexpr driver::LaunchShape BUMP_SHAPE{{4, 1, 1}, {64, 1, 1}};

std::shared_ptr<const ptx::Module> kernels() {
  static const auto parsed = ptx::parse_module(testing::USER_KERNELS_PTX);
  EXPECT_TRUE(parsed) << parsed.error().message;
  return parsed ? *parsed : nullptr;
}

uint32_t entry(const char* name) { return static_cast<uint32_t>(kernels()->find_entry(name)); }

// The guest's program: the kernels' module loaded once, then rounds of
// `bump` (the module's counter variable) and `vadd` (c = a + b + c's inputs
// rotated by the round), each launched without waiting.
struct ModuleGuest : GuestContext {
  driver::LoadedModule module;
  driver::Buffer a{}, b{}, c{};

  Status open(driver::Port& port) {
    if (Status s = open_context(port); !s) return s;
    auto m = ctx->load_module(testing::USER_KERNELS_PTX, kernels()->data_bytes());
    if (!m) return std::unexpected(m.error());
    module = *m;
    auto ba = ctx->alloc(ELEMENTS * 4), bb = ctx->alloc(ELEMENTS * 4), bc = ctx->alloc(ELEMENTS * 4);
    if (!ba || !bb || !bc) return fail(Errc::out_of_memory, "buffers");
    a = *ba, b = *bb, c = *bc;
    std::vector<float> xs(ELEMENTS), ys(ELEMENTS);
    for (uint32_t i = 0; i < ELEMENTS; ++i) xs[i] = static_cast<float>(i) * 0.5f, ys[i] = static_cast<float>(i % 7);
    if (Status s = ctx->upload(a, std::span<const float>(xs)); !s) return s;
    return ctx->upload(b, std::span<const float>(ys));
  }
  // One round: counter += BUMP_BY per thread; c = a + b; then a = c + b
  // (so each round reads the previous one's output).
  Status round() {
    ptx::ParamBuffer bump(kernels()->entries().at(entry("bump")));
    bump.set(0, BUMP_BY);
    auto f = ctx->launch_module(
        {.slot = module.slot, .entry = entry("bump"), .shape = BUMP_SHAPE, .params = bump.bytes()});
    if (!f) return std::unexpected(f.error());
    for (auto [x, y, out] : {std::tuple{a, b, c}, std::tuple{c, b, a}}) {
      ptx::ParamBuffer p(kernels()->entries().at(entry("vadd")));
      p.set(0, *ctx->gpu_va(x)).set(1, *ctx->gpu_va(y)).set(2, *ctx->gpu_va(out)).set(3, ELEMENTS);
      if (!bump.ok() || !p.ok()) return fail(Errc::invalid_argument, "parameters");
      const driver::LaunchShape shape{{(ELEMENTS + BLOCK - 1) / BLOCK, 1, 1}, {BLOCK, 1, 1}};
      auto v = ctx->launch_module({.slot = module.slot, .entry = entry("vadd"), .shape = shape, .params = p.bytes()});
      if (!v) return std::unexpected(v.error());
    }
    return {};
  }
  // a's bytes, then the counter's.
  Result<std::vector<std::byte>> result() {
    if (Status s = ctx->synchronize(); !s) return std::unexpected(s.error());
    std::vector<std::byte> out(ELEMENTS * 4 + sizeof(uint32_t));
    if (Status s = ctx->download(a, 0, std::span(out).first(ELEMENTS * 4)); !s) return std::unexpected(s.error());
    const ptx::Variable* counter = kernels()->find_variable("counter");
    if (counter == nullptr) return fail(Errc::not_found, "the module has no counter");
    if (Status s = ctx->download(module.data, counter->offset, std::span(out).last(sizeof(uint32_t))); !s)
      return std::unexpected(s.error());
    return out;
  }
};

constexpr int ROUNDS_BEFORE = 3, ROUNDS_AFTER = 2;

Result<std::vector<std::byte>> unmoved_module_output() {
  auto tb = make_testbed();
  if (!tb) return fail(Errc::device_error, "the unmoved testbed");
  ModuleGuest guest;
  if (Status s = guest.open(tb->port(0)); !s) return std::unexpected(s.error());
  for (int r = 0; r < ROUNDS_BEFORE + ROUNDS_AFTER; ++r)
    if (Status s = guest.round(); !s) return std::unexpected(s.error());
  return guest.result();
}

TEST(MigrationModules, AModuleLoadedBeforeTheMoveIsLaunchedAfterIt) {
  auto a = make_testbed(), b = make_testbed();
  ASSERT_TRUE(a && b && kernels());
  Result<std::vector<std::byte>> want = unmoved_module_output();
  ASSERT_TRUE(want) << want.error().what();

  MovingPort port(&a->port(0));
  ModuleGuest guest;
  Status opened = guest.open(port);
  ASSERT_TRUE(opened) << opened.error().what();
  for (int r = 0; r < ROUNDS_BEFORE; ++r) ASSERT_TRUE(guest.round());
  ASSERT_TRUE(a->vgpu(0)->freeze(FREEZE_NS));
  Status moved = move_vgpu(*a, *b);
  ASSERT_TRUE(moved) << moved.error().what();
  port.move_to(&b->port(0));

  for (int r = 0; r < ROUNDS_AFTER; ++r) ASSERT_TRUE(guest.round());
  Result<std::vector<std::byte>> got = guest.result();
  ASSERT_TRUE(got) << got.error().what();
  EXPECT_TRUE(*got == *want) << "the moved guest's output differs from the unmoved one's";
  uint32_t counter = 0;
  std::memcpy(&counter, got->data() + ELEMENTS * 4, sizeof counter);
  const uint32_t threads = BUMP_SHAPE.grid.x * BUMP_SHAPE.block.x;
  EXPECT_EQ(counter, 5 + BUMP_BY * threads * (ROUNDS_BEFORE + ROUNDS_AFTER));  // the module's initial 5
  EXPECT_TRUE(guest.ctx->status()) << "the channel reported an error on B";
}

}  // namespace
}  // namespace vgpu::mediator
