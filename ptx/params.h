// SPDX-License-Identifier: GPL-2.0-or-later
// An entry's parameter buffer as the device reads it (docs/ptx.md,
// "Layout"): each parameter's bytes at its offset from the .entry list,
// param_bytes in all. One packer for everything that launches user
// kernels: libcuda's cuLaunchKernel (cuda/libcuda/params.h), the tests and
// the benchmark.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <vector>

#include "ptx/module.h"

namespace vgpu::ptx {

class ParamBuffer {
 public:
  explicit ParamBuffer(const EntryInfo& entry) : entry_(&entry), bytes_(entry.param_bytes) {}

  // Parameter i from `size` bytes at `value`; false, and nothing written,
  // when i is not a parameter or `size` is not its size.
  bool set_bytes(size_t i, const void* value, size_t size);
  template <typename T>
  ParamBuffer& set(size_t i, const T& value) {
    ok_ = set_bytes(i, &value, sizeof(T)) && ok_;
    return *this;
  }
  bool ok() const { return ok_; }  // every set() named a parameter of its size
  std::span<const std::byte> bytes() const { return bytes_; }
  std::vector<std::byte> take() && { return std::move(bytes_); }

 private:
  const EntryInfo* entry_;
  std::vector<std::byte> bytes_;
  bool ok_ = true;
};

// cuLaunchKernel's kernelParams form: values[i] points at parameter i's
// bytes (its size read from it). None if a pointer is null.
std::optional<std::vector<std::byte>> pack_params(const EntryInfo& entry, const void* const* values);

// Integer and pointer parameters in order, each taking the low bytes of
// its value (little endian). None if there are more values than
// parameters; parameters without a value stay zero.
std::optional<std::vector<std::byte>> pack_params(const EntryInfo& entry, std::initializer_list<uint64_t> values);

}  // namespace vgpu::ptx
