// SPDX-License-Identifier: GPL-2.0-or-later
// A fill on the GPU, checked from the guest's side: the tests' way of
// asking "does this VM's work still run and come out right".
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "driver/runtime.h"

namespace vgpu::testing {

// Fills the first `count` floats of `buf` with `value`, waits for the
// fill and reads them back: an error when a step fails or a float read
// back is not `value` (naming the first such).
inline Status fill_and_check(driver::Context& ctx, const driver::Buffer& buf, uint32_t count, float value) {
  auto f = ctx.fill({buf, count, value});
  if (!f) return std::unexpected(f.error());
  if (Status s = ctx.wait(*f); !s) return s;
  std::vector<float> got(count);
  if (Status s = ctx.download(buf, std::span<float>(got)); !s) return s;
  for (uint32_t i = 0; i < count; ++i)
    if (got[i] != value)
      return fail(Errc::device_error,
                  "fill result differs: float " + std::to_string(i) + " is " + std::to_string(got[i]));
  return {};
}

// The same on a new context of `dev` and a new buffer of `count` floats
// (the worker tests' "does this VM still run work").
inline Status fill_new_and_check(driver::Device& dev, uint32_t count, float value) {
  auto ctx = dev.create_context();
  if (!ctx) return std::unexpected(ctx.error().context("context"));
  auto buf = (*ctx)->alloc(uint64_t{count} * sizeof(float));
  if (!buf) return std::unexpected(buf.error().context("alloc"));
  return fill_and_check(**ctx, *buf, count, value);
}

}  // namespace vgpu::testing
