// SPDX-License-Identifier: GPL-2.0-or-later
#include "ptx/params.h"

#include <cstring>

namespace vgpu::ptx {

bool ParamBuffer::set_bytes(size_t i, const void* value, size_t size) {
  if (i >= entry_->params.size()) return false;
  const Param& p = entry_->params[i];
  if (size != p.size || uint64_t{p.offset} + p.size > bytes_.size()) return false;
  std::memcpy(bytes_.data() + p.offset, value, size);
  return true;
}

std::optional<std::vector<std::byte>> pack_params(const EntryInfo& entry, const void* const* values) {
  ParamBuffer buf(entry);
  for (size_t i = 0; i < entry.params.size(); ++i)
    if (values[i] == nullptr || !buf.set_bytes(i, values[i], entry.params[i].size)) return std::nullopt;
  return std::move(buf).take();
}

std::optional<std::vector<std::byte>> pack_params(const EntryInfo& entry, std::initializer_list<uint64_t> values) {
  if (values.size() > entry.params.size()) return std::nullopt;
  ParamBuffer buf(entry);
  size_t i = 0;
  for (uint64_t v : values) {
    if (entry.params[i].size > sizeof v || !buf.set_bytes(i, &v, entry.params[i].size)) return std::nullopt;
    ++i;
  }
  return std::move(buf).take();
}

}  // namespace vgpu::ptx
