// SPDX-License-Identifier: GPL-2.0-or-later
// Guest memory for the interpreter outside the device model: one zeroed
// host buffer at a fixed guest address, handed out by a bump allocator.
// What the interpreter's tests, ptx_bench, the worker's built-in kernel
// tests and vgpu-worker-check's memory image run kernels on. Each guest
// page starts a host page, as the device's memory does (new[] of a large
// array starts 16 bytes into one, and then every 32-byte run of a
// coalesced load spans two cache lines).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>
#include <vector>

#include "gpu/ptx/interpreter.h"
#include "vgpu/bits.h"

namespace vgpu::ptx {

class FlatMemory : public GlobalMemory {
 public:
  static constexpr size_t HOST_PAGE = 4096;

  // `bytes` at guest address `base`; alloc() hands them out in steps of
  // `step` bytes (a power of two).
  FlatMemory(uint64_t base, size_t bytes, size_t step) : base_(base), step_(step), mem_(bytes) {}

  // The next `bytes` of the buffer, from a multiple of the step; the
  // caller checks that they fit (used() <= size()).
  uint64_t alloc(size_t bytes) {
    const uint64_t va = base_ + used_;
    used_ = align_up(used_ + bytes, step_);
    return va;
  }
  // `v` copied into the next alloc() (what is past the end is not).
  template <typename T>
  uint64_t put(const std::vector<T>& v) {
    const uint64_t va = alloc(v.size() * sizeof(T));
    const size_t room = va - base_ < mem_.size() ? mem_.size() - (va - base_) : 0;
    std::memcpy(mem_.data() + (va - base_), v.data(), std::min(v.size() * sizeof(T), room));
    return va;
  }
  template <typename T>
  T* at(uint64_t va) {
    return reinterpret_cast<T*>(mem_.data() + (va - base_));
  }

  uint64_t base() const { return base_; }
  size_t size() const { return mem_.size(); }
  size_t used() const { return used_; }
  std::span<std::byte> bytes() { return mem_; }
  std::span<const std::byte> bytes() const { return mem_; }

  std::expected<std::byte*, MemoryFault> access(uint64_t va, uint32_t bytes, bool write) override {
    if (va < base_ || va - base_ + bytes > mem_.size()) return std::unexpected(MemoryFault{va, write, "not mapped"});
    return mem_.data() + (va - base_);
  }

 private:
  template <typename T>
  struct PageAligned {
    using value_type = T;
    PageAligned() = default;
    template <typename U>
    explicit PageAligned(const PageAligned<U>&) {}
    T* allocate(size_t n) { return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{HOST_PAGE})); }
    void deallocate(T* p, size_t) { ::operator delete (p, std::align_val_t{HOST_PAGE}); }
    bool operator==(const PageAligned&) const = default;
  };

  uint64_t base_;
  size_t step_;
  std::vector<std::byte, PageAligned<std::byte>> mem_;
  size_t used_ = 0;
};

}  // namespace vgpu::ptx
