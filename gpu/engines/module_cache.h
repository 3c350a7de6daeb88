// SPDX-License-Identifier: GPL-2.0-or-later
// Parsed PTX modules by their text, shared by every channel of one device
// (docs/spec/vgpu.md §10.6): a module is parsed once however many
// channels, VMs or slots load it. The cache is bounded by the source bytes
// it keeps; a module in use stays alive in its slots after eviction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ptx/module.h"

namespace vgpu::gpu {

struct ModuleCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;  // parses, successful or not
  uint64_t entries = 0;
  uint64_t source_bytes = 0;
};

class ModuleCache {
 public:
  static constexpr uint64_t DEFAULT_MAX_BYTES = uint64_t{64} << 20;

  explicit ModuleCache(uint64_t max_source_bytes = DEFAULT_MAX_BYTES) : max_bytes_(max_source_bytes) {}

  // The module parsed from `text`, from the cache or parsed now (outside
  // the lock: two channels loading one new module may both parse it).
  // Refused texts are not kept.
  [[nodiscard]] std::expected<std::shared_ptr<const ptx::Module>, ptx::ParseError> get(std::string_view text);
  ModuleCacheStats stats() const;

 private:
  struct Entry {
    std::string text;
    std::shared_ptr<const ptx::Module> module;
  };
  using List = std::list<Entry>;  // most recently used first

  mutable std::mutex mutex_;
  uint64_t max_bytes_;
  List lru_;
  std::unordered_multimap<size_t, List::iterator> by_hash_;
  ModuleCacheStats stats_;
};

}  // namespace vgpu::gpu
