// SPDX-License-Identifier: GPL-2.0-or-later
// Semaphore releases, shared by the host (0x906F), copy (0x90B5) and
// compute (0x90C0) classes.
#include <cstdint>

#include "gpu/engines/class_object.h"
#include "gpu/engines/method_table.h"
#include "vgpu/bits.h"

namespace vgpu::gpu {

namespace {
// Four-word release layout: payload, 0, timestamp (low, high).
constexpr uint64_t SEM_PAYLOAD = 0;
constexpr uint64_t SEM_ZERO = 4;
constexpr uint64_t SEM_TIME_LO = 8;
constexpr uint64_t SEM_TIME_HI = 12;
constexpr uint64_t SEM_ALIGN = sizeof(uint32_t);
}  // namespace

MethodDone release_semaphore(ChannelContext& ctx, uint64_t va, uint32_t payload, bool four_words, uint32_t method) {
  // Each word is one atomic VRAM access; a misaligned word would not be.
  if (va % SEM_ALIGN != 0) return channel_fault(regs::ChannelError::bad_argument, method, va);

  // The payload goes last, so that a poller that sees it also sees the
  // timestamp of the same release.
  if (four_words) {
    const uint64_t now = ctx.clock.now_ns();
    const struct {
      uint64_t offset;
      uint32_t value;
    } words[] = {{SEM_TIME_LO, lo32(now)}, {SEM_TIME_HI, hi32(now)}, {SEM_ZERO, 0}};
    for (const auto& w : words) {
      auto written = ctx.mmu.write32(ctx.as, va + w.offset, w.value);
      if (!written) return mmu_channel_fault(method, written.error());
    }
  }
  auto written = ctx.mmu.write32(ctx.as, va + SEM_PAYLOAD, payload);
  if (!written) return mmu_channel_fault(method, written.error());
  if (ctx.semaphore_written) ctx.semaphore_written();
  return {};
}

}  // namespace vgpu::gpu
