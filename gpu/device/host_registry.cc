// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/device/host_registry.h"

namespace vgpu::gpu {

bool HostRegistry::add(std::byte* base, uint64_t bytes) {
  std::lock_guard l(mutex_);
  auto [it, fresh] = by_base_.try_emplace(base, Entry{bytes, 0});
  ++it->second.refs;
  return fresh;
}

std::optional<uint64_t> HostRegistry::remove(std::byte* base) {
  std::lock_guard l(mutex_);
  auto it = by_base_.find(base);
  if (it == by_base_.end() || --it->second.refs > 0) return std::nullopt;
  const uint64_t bytes = it->second.bytes;
  by_base_.erase(it);
  return bytes;
}

bool HostRegistry::covers(const std::byte* p, uint64_t len) const {
  std::lock_guard l(mutex_);
  auto it = by_base_.upper_bound(p);
  if (it == by_base_.begin()) return false;
  --it;
  const auto off = static_cast<uint64_t>(p - it->first);
  return off <= it->second.bytes && len <= it->second.bytes - off;
}

uint64_t HostRegistry::mappings() const {
  std::lock_guard l(mutex_);
  return by_base_.size();
}

uint64_t HostRegistry::bytes() const {
  std::lock_guard l(mutex_);
  uint64_t n = 0;
  for (const auto& [base, e] : by_base_) n += e.bytes;
  return n;
}

}  // namespace vgpu::gpu
