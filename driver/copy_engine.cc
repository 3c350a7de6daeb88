// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/copy_engine.h"

#include <algorithm>

#include "vgpu/bits.h"
#include "vgpu/classes.h"

namespace vgpu::driver {

namespace c = cls::copy;

void emit_copy_bind(PushBuffer& pb) {
  pb.inc(subch::COPY, cls::host::SET_OBJECT, {cls::host::SetObjectClass::make(cls::DMA_COPY)});
}

void emit_copy(PushBuffer& pb, uint64_t dst_va, uint64_t src_va, uint64_t bytes) {
  constexpr uint32_t launch = c::LaunchTransferType::make(static_cast<uint32_t>(c::Transfer::non_pipelined)) |
                              c::LaunchFlush::mask | c::LaunchSrcPitch::mask | c::LaunchDstPitch::mask;
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min(bytes - done, COPY_MAX_LINE);
    const uint64_t src = src_va + done, dst = dst_va + done;
    // OFFSET_IN_UPPER .. LINE_COUNT are consecutive methods.
    pb.inc(subch::COPY, c::OFFSET_IN_UPPER,
           {hi32(src), lo32(src), hi32(dst), lo32(dst), static_cast<uint32_t>(n), static_cast<uint32_t>(n),
            static_cast<uint32_t>(n), 1});
    pb.method(subch::COPY, c::LAUNCH_DMA, launch);
    done += n;
  }
}

void emit_copy_lines(PushBuffer& pb, const CopyLines& l) {
  constexpr uint32_t launch = c::LaunchTransferType::make(static_cast<uint32_t>(c::Transfer::non_pipelined)) |
                              c::LaunchFlush::mask | c::LaunchSrcPitch::mask | c::LaunchDstPitch::mask |
                              c::LaunchMultiLine::mask;
  pb.inc(subch::COPY, c::OFFSET_IN_UPPER,
         {hi32(l.src_va), lo32(l.src_va), hi32(l.dst_va), lo32(l.dst_va), l.pitch_in, l.pitch_out, l.line_bytes,
          l.lines});
  pb.method(subch::COPY, c::LAUNCH_DMA, launch);
}

}  // namespace vgpu::driver
