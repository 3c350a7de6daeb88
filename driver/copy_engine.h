// SPDX-License-Identifier: GPL-2.0-or-later
// Copy-engine transfers with class 0x90B5 (NVIDIA's published layout):
// pitch-linear, one line per launch, split where LINE_LENGTH_IN (32 bits)
// would overflow.
#pragma once

#include <cstdint>

#include "driver/pushbuf.h"

namespace vgpu::driver {

// Largest piece of one LAUNCH_DMA: the biggest page-aligned 32-bit length.
inline constexpr uint64_t COPY_MAX_LINE = 0x8000'0000;

// Binds 0x90B5 on subch::COPY.
void emit_copy_bind(PushBuffer& pb);
// dst_va <- src_va, bytes, as ceil(bytes / COPY_MAX_LINE) launches.
void emit_copy(PushBuffer& pb, uint64_t dst_va, uint64_t src_va, uint64_t bytes);

// A pitched copy in one launch: `lines` lines of line_bytes, line i from
// src_va + i * pitch_in to dst_va + i * pitch_out.
struct CopyLines {
  uint64_t dst_va, src_va;
  uint32_t line_bytes, lines, pitch_in, pitch_out;
};
void emit_copy_lines(PushBuffer& pb, const CopyLines& c);

}  // namespace vgpu::driver
