// SPDX-License-Identifier: GPL-2.0-or-later
// The testbed a test starts from: one VM's config, and creation whose
// failure is a test failure.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "testbed/testbed.h"

namespace vgpu::testing {

// One VM of `mode` with `vram` and `channels`; the rest the testbed's defaults.
inline testbed::TestbedConfig one_vm(testbed::Mode mode, uint64_t vram,
                                     uint32_t channels = testbed::TestbedConfig{}.channels_per_vm) {
  testbed::TestbedConfig tc;
  tc.mode = mode;
  tc.vram_per_vm = vram;
  tc.channels_per_vm = channels;
  return tc;
}

// The testbed `tc`; when it cannot be made, a test failure naming the
// error, and nullptr.
inline std::unique_ptr<testbed::Testbed> create_testbed(const testbed::TestbedConfig& tc) {
  auto tb = testbed::Testbed::create(tc);
  EXPECT_TRUE(tb) << tb.error().what();
  return tb ? std::move(*tb) : nullptr;
}

}  // namespace vgpu::testing
