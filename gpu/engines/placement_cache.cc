// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/placement_cache.h"

#include <algorithm>

namespace vgpu::gpu {

std::optional<Placed> PlacementCache::find(const Key& k, uint64_t generation) {
  std::lock_guard l(mutex_);
  // Anything made before an invalidate is gone for good.
  std::erase_if(entries_, [&](const Entry& e) { return e.generation != generation; });
  auto it = std::ranges::find(entries_, k, &Entry::key);
  if (it == entries_.end()) return std::nullopt;
  std::rotate(it, it + 1, entries_.end());
  ++hits_;
  return entries_.back().placed;
}

void PlacementCache::add(const Key& k, uint64_t generation, const Placed& p) {
  std::lock_guard l(mutex_);
  std::erase_if(entries_, [&](const Entry& e) { return e.generation != generation || e.key == k; });
  if (entries_.size() >= CAPACITY) entries_.erase(entries_.begin());
  entries_.push_back({k, generation, p});
}

uint64_t PlacementCache::hits() const {
  std::lock_guard l(mutex_);
  return hits_;
}

}  // namespace vgpu::gpu
