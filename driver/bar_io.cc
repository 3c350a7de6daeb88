// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/bar_io.h"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace vgpu::driver {

namespace {
constexpr uint64_t WORD = sizeof(uint32_t);

// One word of a transfer through BAR1's 32-bit accesses: `n` bytes from
// byte `skip` of the word at `word`, `done` bytes into the caller's buffer.
struct WordPiece {
  uint64_t word, skip, n, done;
};

// Calls fn(piece) for each word that `bytes` at `bar_offset` touch, in order.
template <typename Fn>
void for_each_word(uint64_t bar_offset, uint64_t bytes, Fn&& fn) {
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t at = bar_offset + done;
    const uint64_t word = at & ~(WORD - 1);
    const uint64_t skip = at - word;
    const uint64_t n = std::min<uint64_t>(WORD - skip, bytes - done);
    fn(WordPiece{word, skip, n, done});
    done += n;
  }
}

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
  for_each_word(bar_offset, src.size(), [&](const WordPiece& p) {
    uint32_t v = 0;
    if (p.n != WORD) v = port.read32(Bar::bar1, p.word);  // partial word: read-modify-write
    std::memcpy(reinterpret_cast<std::byte*>(&v) + p.skip, src.data() + p.done, p.n);
    port.write32(Bar::bar1, p.word, v);
  });
}

void bar1_read(Port& port, uint64_t bar_offset, std::span<std::byte> dst, bool allow_direct) {
  if (auto d = direct(port, bar_offset, dst.size(), allow_direct); !d.empty()) {
    std::atomic_thread_fence(std::memory_order_acquire);
    std::memcpy(dst.data(), d.data(), dst.size());
    return;
  }
  for_each_word(bar_offset, dst.size(), [&](const WordPiece& p) {
    const uint32_t v = port.read32(Bar::bar1, p.word);
    std::memcpy(dst.data() + p.done, reinterpret_cast<const std::byte*>(&v) + p.skip, p.n);
  });
}

}  // namespace vgpu::driver
