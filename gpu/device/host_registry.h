// SPDX-License-Identifier: GPL-2.0-or-later
// Host memory a device has registered for DMA (DmaRegistrar), counted per
// base: two bus windows onto one guest RAM register it once, and the last
// of them to go unregisters it. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace vgpu::gpu {

class HostRegistry {
 public:
  // True when this is base's first registration: register it with the device.
  bool add(std::byte* base, uint64_t bytes);
  // Its size when this was base's last registration: unregister it then.
  std::optional<uint64_t> remove(std::byte* base);
  // Whether [p, p + len) lies in one registered mapping.
  bool covers(const std::byte* p, uint64_t len) const;
  uint64_t mappings() const;  // distinct bases registered now
  uint64_t bytes() const;     // their bytes

 private:
  struct Entry {
    uint64_t bytes;
    uint32_t refs;
  };
  mutable std::mutex mutex_;
  std::map<std::byte*, Entry, std::less<>> by_base_;
};

}  // namespace vgpu::gpu
