// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/bar_io.h"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace vgpu::driver {

namespace {
std::span<std::byte> direct(Port& port, uint64_t off, uint64_t bytes, bool allow) {
  if (!allow || bytes == 0) return {};
  auto s = port.map(Bar::bar1, off, bytes);
  return s.size() >= bytes ? s : std::span<std::byte>{};
}
}  // namespace

void bar1_write(Port& port, uint64_t bar_offset, std::span<const std::byte> src, bool allow_direct) {
  if (auto d = direct(port, bar_offset, src.size(), allow_direct); !d.empty()) {
    std::memcpy(d.data(), src.data(), src.size());
    std::atomic_thread_fence(std::memory_order_release);
    return;
  }
  uint64_t done = 0;
  while (done < src.size()) {
    const uint64_t at = bar_offset + done;
    const uint64_t word = at & ~uint64_t{3};
    const uint64_t skip = at - word;
    const uint64_t n = std::min<uint64_t>(4 - skip, src.size() - done);
    uint32_t v = 0;
    if (n != 4) v = port.read32(Bar::bar1, word);  // partial word: read-modify-write
    std::memcpy(reinterpret_cast<std::byte*>(&v) + skip, src.data() + done, n);
    port.write32(Bar::bar1, word, v);
    done += n;
  }
}

void bar1_read(Port& port, uint64_t bar_offset, std::span<std::byte> dst, bool allow_direct) {
  if (auto d = direct(port, bar_offset, dst.size(), allow_direct); !d.empty()) {
    std::atomic_thread_fence(std::memory_order_acquire);
    std::memcpy(dst.data(), d.data(), dst.size());
    return;
  }
  uint64_t done = 0;
  while (done < dst.size()) {
    const uint64_t at = bar_offset + done;
    const uint64_t word = at & ~uint64_t{3};
    const uint64_t skip = at - word;
    const uint64_t n = std::min<uint64_t>(4 - skip, dst.size() - done);
    const uint32_t v = port.read32(Bar::bar1, word);
    std::memcpy(dst.data() + done, reinterpret_cast<const std::byte*>(&v) + skip, n);
    done += n;
  }
}

}  // namespace vgpu::driver
