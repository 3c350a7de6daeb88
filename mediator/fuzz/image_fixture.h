// SPDX-License-Identifier: GPL-2.0-or-later
// The `image` target's VM (image_fuzz.cc) and its seed maker
// (image_seeds.cc) share it: one fv-opt testbed VM of 64 MiB whose driver
// made a context and ran a saxpy, so its VRAM holds a channel's instance
// block, page tables and GPFIFO. A seed exported from it names them, and
// the fuzzer's import binds that channel through the guest path.
#pragma once

#include <cstdlib>
#include <memory>
#include <vector>

#include "driver/runtime.h"
#include "testbed/testbed.h"

namespace vgpu::fuzz {

inline constexpr uint64_t IMAGE_VM_VRAM = 64 * MiB;
inline constexpr uint32_t IMAGE_ELEMENTS = 1024;

struct ImageFixture {
  std::unique_ptr<testbed::Testbed> tb;
  std::unique_ptr<driver::Device> dev;
  std::unique_ptr<driver::Context> ctx;
};

inline ImageFixture make_image_fixture() {
  ImageFixture f;
  testbed::TestbedConfig tc;
  tc.mode = testbed::Mode::fv_opt;
  tc.vram_per_vm = IMAGE_VM_VRAM;
  tc.log = [](LogKind, const std::string&) {};
  auto made = testbed::Testbed::create(tc);
  if (!made) std::abort();
  f.tb = std::move(*made);
  auto dev = driver::Device::open(f.tb->port(0));
  if (!dev) std::abort();
  f.dev = std::move(*dev);
  auto ctx = f.dev->create_context();
  if (!ctx) std::abort();
  f.ctx = std::move(*ctx);
  auto x = f.ctx->alloc(IMAGE_ELEMENTS * sizeof(float)), y = f.ctx->alloc(IMAGE_ELEMENTS * sizeof(float));
  if (!x || !y) std::abort();
  auto done = f.ctx->saxpy({*x, *y, IMAGE_ELEMENTS, 2.0f});
  if (!done || !f.ctx->synchronize()) std::abort();
  return f;
}

}  // namespace vgpu::fuzz
