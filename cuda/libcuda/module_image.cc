// SPDX-License-Identifier: GPL-2.0-or-later
#include "cuda/libcuda/module_image.h"

#include <cstring>
#include <iterator>

namespace vgpu::cuda {
namespace {

// The first four bytes of the image are `magic`, read one at a time so that
// a shorter NUL-terminated text is never read past its end.
bool starts_with_word(const unsigned char* p, uint32_t magic) {
  for (unsigned i = 0; i < 4; ++i)
    if (p[i] != static_cast<unsigned char>(magic >> (8 * i))) return false;
  return true;
}

bool text_byte(unsigned char c) { return c >= 0x20 || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// One row per device status: what a load and what a launch answer.
struct StatusRow {
  cls::PtxStatus status;
  CUresult load;
  CUresult launch;
};
constexpr StatusRow STATUS_ROWS[] = {
    {cls::PtxStatus::ok, CUDA_SUCCESS, CUDA_ERROR_LAUNCH_FAILED},
    {cls::PtxStatus::parse_error, CUDA_ERROR_INVALID_PTX, CUDA_ERROR_LAUNCH_FAILED},
    {cls::PtxStatus::unsupported, CUDA_ERROR_INVALID_PTX, CUDA_ERROR_LAUNCH_FAILED},
    {cls::PtxStatus::too_large, CUDA_ERROR_INVALID_PTX, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES},
    {cls::PtxStatus::bad_version, CUDA_ERROR_UNSUPPORTED_PTX_VERSION, CUDA_ERROR_LAUNCH_FAILED},
    {cls::PtxStatus::bad_slot, CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_INVALID_HANDLE},
    {cls::PtxStatus::data_too_small, CUDA_ERROR_UNKNOWN, CUDA_ERROR_LAUNCH_FAILED},
    {cls::PtxStatus::mmu_fault, CUDA_ERROR_UNKNOWN, CUDA_ERROR_ILLEGAL_ADDRESS},
    {cls::PtxStatus::misaligned, CUDA_ERROR_UNKNOWN, CUDA_ERROR_MISALIGNED_ADDRESS},
    {cls::PtxStatus::trap, CUDA_ERROR_UNKNOWN, CUDA_ERROR_LAUNCH_FAILED},
    {cls::PtxStatus::timeout, CUDA_ERROR_UNKNOWN, CUDA_ERROR_LAUNCH_TIMEOUT},
    {cls::PtxStatus::resource, CUDA_ERROR_UNKNOWN, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES},
    {cls::PtxStatus::illegal, CUDA_ERROR_UNKNOWN, CUDA_ERROR_ILLEGAL_INSTRUCTION},
};

const StatusRow* row(cls::PtxStatus s) {
  for (const auto& r : STATUS_ROWS)
    if (r.status == s) return &r;
  return nullptr;
}

}  // namespace

ImageCheck check_image(const void* image, uint64_t max_bytes) {
  if (image == nullptr) return {CUDA_ERROR_INVALID_VALUE, {}, "the image is NULL"};
  const auto* p = static_cast<const unsigned char*>(image);
  if (starts_with_word(p, FATBIN_MAGIC) || starts_with_word(p, FATBIN_WRAPPER_MAGIC))
    return {CUDA_ERROR_NOT_SUPPORTED,
            {},
            "the image is a fat binary: vgpu loads PTX text only (fat binaries are a later step); "
            "build the module with nvcc -ptx (docs/cuda-programs.md)"};
  if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F')
    return {CUDA_ERROR_INVALID_IMAGE, {}, "the image is an ELF (cubin/SASS): vgpu loads PTX text only"};
  const char* text = static_cast<const char*>(image);
  size_t n = strnlen(text, max_bytes + 1);
  if (n > max_bytes)
    return {CUDA_ERROR_INVALID_PTX, {}, "the PTX text is longer than " + std::to_string(max_bytes) + " bytes"};
  for (size_t i = 0; i < n; ++i)
    if (!text_byte(p[i]))
      return {CUDA_ERROR_INVALID_IMAGE, {}, "the image is not PTX text (byte " + std::to_string(i) + " is binary)"};
  return {CUDA_SUCCESS, std::string_view(text, n), {}};
}

bool has_version_directive(std::string_view text) {
  for (size_t at = text.find(".version"); at != std::string_view::npos; at = text.find(".version", at + 1)) {
    // Not inside a // comment on its line.
    size_t line = text.rfind('\n', at);
    std::string_view before = text.substr(line == std::string_view::npos ? 0 : line + 1,
                                          at - (line == std::string_view::npos ? 0 : line + 1));
    if (before.find("//") == std::string_view::npos) return true;
  }
  return false;
}

CUresult load_result(ptx::ParseStatus s, bool has_version) {
  switch (s) {
    case ptx::ParseStatus::ok: return CUDA_SUCCESS;
    case ptx::ParseStatus::parse_error:
    case ptx::ParseStatus::unsupported:
    case ptx::ParseStatus::too_large: return CUDA_ERROR_INVALID_PTX;
    case ptx::ParseStatus::bad_version:
      return has_version ? CUDA_ERROR_UNSUPPORTED_PTX_VERSION : CUDA_ERROR_INVALID_IMAGE;
  }
  return CUDA_ERROR_INVALID_PTX;
}

CUresult load_result(cls::PtxStatus s, bool has_version) {
  if (s == cls::PtxStatus::bad_version && !has_version) return CUDA_ERROR_INVALID_IMAGE;
  const StatusRow* r = row(s);
  return r ? r->load : CUDA_ERROR_UNKNOWN;
}

CUresult launch_result(cls::PtxStatus s) {
  const StatusRow* r = row(s);
  return r ? r->launch : CUDA_ERROR_LAUNCH_FAILED;
}

}  // namespace vgpu::cuda
