// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/pinned_ram.h"

#include "driver/msg.h"
#include "vgpu/formats.h"

namespace vgpu::driver {

Result<PinnedPages> PinnedRam::pin(uint64_t bytes) {
  constexpr uint64_t PAGE = fmt::SMALL_PAGE;
  if (bytes == 0) return fail(Errc::invalid_argument, "pin: zero bytes");
  const uint64_t size = align_up(bytes, PAGE);
  std::lock_guard lock(mutex_);
  auto at = free_.alloc(size, PAGE);
  if (!at)
    return fail(Errc::out_of_memory, msg("pin: {} bytes asked, {} bytes of pinnable RAM free (largest run {})", bytes,
                                         free_.free_bytes(), free_.largest_free()));
  PinnedPages p;
  p.host = ram_.subspan(*at, size);
  p.bus.reserve(size / PAGE);
  for (uint64_t off = 0; off < size; off += PAGE) p.bus.push_back(bus_base_ + *at + off);
  return p;
}

void PinnedRam::unpin(std::span<std::byte> host) {
  if (host.empty() || host.data() < ram_.data() || host.data() >= ram_.data() + ram_.size()) return;
  std::lock_guard lock(mutex_);
  (void)free_.free(static_cast<uint64_t>(host.data() - ram_.data()));
}

uint64_t PinnedRam::free_bytes() const {
  std::lock_guard lock(mutex_);
  return free_.free_bytes();
}

}  // namespace vgpu::driver
