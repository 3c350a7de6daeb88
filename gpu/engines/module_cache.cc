// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/module_cache.h"

#include <functional>

namespace vgpu::gpu {

std::expected<std::shared_ptr<const ptx::Module>, ptx::ParseError> ModuleCache::get(std::string_view text) {
  const size_t hash = std::hash<std::string_view>{}(text);
  {
    std::lock_guard lock(mutex_);
    auto [first, last] = by_hash_.equal_range(hash);
    for (auto it = first; it != last; ++it) {
      if (it->second->text != text) continue;
      lru_.splice(lru_.begin(), lru_, it->second);
      ++stats_.hits;
      return it->second->module;
    }
    ++stats_.misses;
  }
  auto parsed = ptx::parse_module(text);
  if (!parsed) return std::unexpected(parsed.error());
  if (text.size() > max_bytes_) return *parsed;  // used, never kept

  std::lock_guard lock(mutex_);
  lru_.push_front(Entry{std::string(text), *parsed});
  by_hash_.emplace(hash, lru_.begin());
  ++stats_.entries;
  stats_.source_bytes += text.size();
  while (stats_.source_bytes > max_bytes_ && !lru_.empty()) {
    auto victim = std::prev(lru_.end());
    const size_t vh = std::hash<std::string_view>{}(victim->text);
    auto [first, last] = by_hash_.equal_range(vh);
    for (auto it = first; it != last; ++it)
      if (it->second == victim) {
        by_hash_.erase(it);
        break;
      }
    stats_.source_bytes -= victim->text.size();
    --stats_.entries;
    lru_.erase(victim);
  }
  return *parsed;
}

ModuleCacheStats ModuleCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace vgpu::gpu
