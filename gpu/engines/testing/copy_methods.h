// SPDX-License-Identifier: GPL-2.0-or-later
// A copy's method stream (class 0x90B5) for the engine tests: where it
// reads and writes and the shape of its lines, up to the semaphore and
// LAUNCH_DMA, which each test adds with the launch bits it checks.
#pragma once

#include <vector>

#include "gpu/engines/copy_object.h"
#include "gpu/engines/testing/engine_env.h"

namespace vgpu::gpu::testing {

// LAUNCH_DMA of a pitch-linear copy on both sides, not pipelined.
inline constexpr uint32_t COPY_LINEAR = cls::copy::LaunchTransferType::make(
                                            uint32_t(cls::copy::Transfer::non_pipelined)) |
                                        cls::copy::LaunchSrcPitch::make(1) | cls::copy::LaunchDstPitch::make(1);

inline std::vector<Method> copy_offsets(uint64_t src, uint64_t dst) {
  using namespace cls::copy;
  return {{OFFSET_IN_UPPER, hi32(src)},
          {OFFSET_IN_LOWER, lo32(src)},
          {OFFSET_OUT_UPPER, hi32(dst)},
          {OFFSET_OUT_LOWER, lo32(dst)}};
}

// `lines` lines of `line` bytes, `pitch_in` and `pitch_out` apart.
inline std::vector<Method> copy_lines(uint64_t src, uint64_t dst, uint32_t line, uint32_t lines, uint32_t pitch_in,
                                      uint32_t pitch_out) {
  using namespace cls::copy;
  std::vector<Method> m = copy_offsets(src, dst);
  m.insert(m.end(), {{PITCH_IN, pitch_in}, {PITCH_OUT, pitch_out}, {LINE_LENGTH_IN, line}, {LINE_COUNT, lines}});
  return m;
}

// copy_lines launched as a pitch-linear copy, multi-line when it has more than one line.
inline std::vector<Method> copy_2d(uint64_t src, uint64_t dst, uint32_t line, uint32_t lines, uint32_t pitch_in,
                                   uint32_t pitch_out) {
  using namespace cls::copy;
  std::vector<Method> m = copy_lines(src, dst, line, lines, pitch_in, pitch_out);
  m.push_back({LAUNCH_DMA, COPY_LINEAR | LaunchMultiLine::make(lines > 1 ? 1 : 0)});
  return m;
}

}  // namespace vgpu::gpu::testing
