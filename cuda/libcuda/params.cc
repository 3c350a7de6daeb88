// SPDX-License-Identifier: GPL-2.0-or-later
#include "cuda/libcuda/params.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include "ptx/params.h"

namespace vgpu::cuda {
namespace {

std::expected<std::vector<std::byte>, CUresult> from_pointers(const ptx::EntryInfo& entry, void** kernel_params) {
  auto buf = ptx::pack_params(entry, kernel_params);
  if (!buf) return std::unexpected(CUDA_ERROR_INVALID_VALUE);
  return std::move(*buf);
}

std::expected<std::vector<std::byte>, CUresult> from_extra(const ptx::EntryInfo& entry, void** extra) {
  const void* pointer = nullptr;
  const size_t* size = nullptr;
  for (size_t i = 0;; i += 2) {
    if (i >= 2 * MAX_EXTRA_PAIRS) return std::unexpected(CUDA_ERROR_INVALID_VALUE);
    auto key = reinterpret_cast<uintptr_t>(extra[i]);
    if (key == CU_LAUNCH_PARAM_END_AS_INT) break;
    if (key == CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT)
      pointer = extra[i + 1];
    else if (key == CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT)
      size = static_cast<const size_t*>(extra[i + 1]);
    else
      return std::unexpected(CUDA_ERROR_INVALID_VALUE);
  }
  if (pointer == nullptr || size == nullptr || *size < entry.param_bytes)
    return std::unexpected(CUDA_ERROR_INVALID_VALUE);
  std::vector<std::byte> buf(entry.param_bytes);
  std::memcpy(buf.data(), pointer, buf.size());
  return buf;
}

}  // namespace

std::expected<std::vector<std::byte>, CUresult> pack_params(const ptx::EntryInfo& entry, void** kernel_params,
                                                            void** extra) {
  if (kernel_params != nullptr && extra != nullptr) return std::unexpected(CUDA_ERROR_INVALID_VALUE);
  if (extra != nullptr) return from_extra(entry, extra);
  if (kernel_params != nullptr) return from_pointers(entry, kernel_params);
  if (!entry.params.empty()) return std::unexpected(CUDA_ERROR_INVALID_VALUE);
  return std::vector<std::byte>{};
}

}  // namespace vgpu::cuda
