// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/mem/dirty_log.h"

#include <algorithm>
#include <bit>

namespace vgpu::gpu {

DirtyLog::DirtyLog(uint64_t bytes)
    : bytes_(bytes),
      words_((bytes / PAGE + PAGES_PER_WORD - 1) / PAGES_PER_WORD),
      bits_(std::make_unique<std::atomic<uint64_t>[]>(words_)) {}

void DirtyLog::mark_pages(uint64_t addr, uint64_t len) {
  if (addr >= bytes_) return;
  const uint64_t first = addr / PAGE;
  const uint64_t last = (std::min(bytes_, addr + std::min(len, bytes_ - addr)) - 1) / PAGE;  // inclusive
  for (uint64_t w = first / PAGES_PER_WORD; w <= last / PAGES_PER_WORD; ++w) {
    const uint64_t lo = std::max(first, w * PAGES_PER_WORD) % PAGES_PER_WORD;
    const uint64_t hi = std::min(last, w * PAGES_PER_WORD + PAGES_PER_WORD - 1) % PAGES_PER_WORD;
    const uint64_t mask = (hi - lo + 1 == PAGES_PER_WORD ? ~uint64_t{0} : ((uint64_t{1} << (hi - lo + 1)) - 1)) << lo;
    // Test first: a page marked again costs no write to a shared line.
    if ((bits_[w].load(std::memory_order_relaxed) & mask) != mask) bits_[w].fetch_or(mask, std::memory_order_release);
  }
}

uint64_t DirtyLog::take(uint64_t addr, uint64_t len, std::span<uint64_t> out) {
  if (addr % PAGE || len % PAGE || addr > bytes_ || len > bytes_ - addr) return 0;
  const uint64_t pages = len / PAGE;
  if (out.size() < (pages + PAGES_PER_WORD - 1) / PAGES_PER_WORD) return 0;
  const uint64_t first = addr / PAGE;
  uint64_t marked = 0;
  // One exchange per source word; its bits land in one or two out words.
  for (uint64_t done = 0; done < pages;) {
    const uint64_t page = first + done;
    const uint64_t w = page / PAGES_PER_WORD;
    const uint64_t lo = page % PAGES_PER_WORD;
    const uint64_t n = std::min(PAGES_PER_WORD - lo, pages - done);
    const uint64_t mask = (n == PAGES_PER_WORD ? ~uint64_t{0} : ((uint64_t{1} << n) - 1)) << lo;
    const uint64_t got = (mask == ~uint64_t{0} ? bits_[w].exchange(0, std::memory_order_acq_rel)
                                               : bits_[w].fetch_and(~mask, std::memory_order_acq_rel)) &
                         mask;
    marked += static_cast<uint64_t>(std::popcount(got));
    const uint64_t value = got >> lo;  // bit 0 = page `page`
    const uint64_t o = done / PAGES_PER_WORD, ob = done % PAGES_PER_WORD;
    out[o] |= value << ob;
    if (ob != 0 && o + 1 < out.size()) out[o + 1] |= value >> (PAGES_PER_WORD - ob);
    done += n;
  }
  return marked;
}

}  // namespace vgpu::gpu
