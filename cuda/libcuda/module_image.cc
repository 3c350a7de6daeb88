// SPDX-License-Identifier: GPL-2.0-or-later
#include "cuda/libcuda/module_image.h"

#include <cstring>
#include <iterator>
#include <span>

#include "cuda/libcuda/fatbin.h"

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

// The text is PTX-like: no binary bytes.
ImageCheck check_text(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i)
    if (!text_byte(static_cast<unsigned char>(text[i])))
      return {CUDA_ERROR_INVALID_IMAGE, {}, "the image is not PTX text (byte " + std::to_string(i) + " is binary)", {}};
  return {CUDA_SUCCESS, text, {}, {}};
}

// A fat binary in the program's memory: through the runtime's wrapper when
// it is one, its size from its header (the program's own bytes, as
// NVIDIA's driver reads them).
std::expected<std::span<const std::byte>, fatbin::Error> container_in_memory(const unsigned char* p) {
  if (starts_with_word(p, fatbin::WRAPPER_MAGIC)) {
    std::span<const std::byte> w(reinterpret_cast<const std::byte*>(p), fatbin::wrapper::BYTES);
    const uint64_t version = fatbin::get(w, fatbin::wrapper::VERSION);
    if (version < fatbin::wrapper::MIN_VERSION || version > fatbin::wrapper::MAX_VERSION)
      return std::unexpected(fatbin::Error{CUDA_ERROR_INVALID_IMAGE,
                                           "fat binary wrapper: version " + std::to_string(version) + " (1 or 2)"});
    p = reinterpret_cast<const unsigned char*>(static_cast<uintptr_t>(fatbin::get(w, fatbin::wrapper::DATA)));
    if (p == nullptr || !starts_with_word(p, fatbin::MAGIC))
      return std::unexpected(
          fatbin::Error{CUDA_ERROR_INVALID_IMAGE, "fat binary wrapper: its pointer is not to a fat binary"});
  }
  const auto* bytes = reinterpret_cast<const std::byte*>(p);
  auto size = fatbin::container_size(std::span(bytes, fatbin::container::HEADER_BYTES), fatbin::MAX_CONTAINER_BYTES);
  if (!size) return std::unexpected(size.error());
  return std::span(bytes, static_cast<size_t>(*size));
}

ImageCheck check_fat_binary(const unsigned char* p, uint64_t max_bytes) {
  auto bytes = container_in_memory(p);
  if (!bytes) return {bytes.error().result, {}, bytes.error().message, {}, true};
  const fatbin::Target target{.arch = CC_MAJOR * 10 + CC_MINOR};
  auto text = fatbin::extract_ptx(*bytes, target, max_bytes);
  if (!text) return {text.error().result, {}, text.error().message, {}, true};
  auto owned = std::make_unique<std::string>(std::move(*text));
  ImageCheck c = check_text(*owned);
  c.owned = std::move(owned);  // c.text points into it: the string itself does not move
  c.fat_binary = true;
  return c;
}

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
  if (image == nullptr) return {CUDA_ERROR_INVALID_VALUE, {}, "the image is NULL", {}};
  const auto* p = static_cast<const unsigned char*>(image);
  if (starts_with_word(p, fatbin::MAGIC) || starts_with_word(p, fatbin::WRAPPER_MAGIC))
    return check_fat_binary(p, max_bytes);
  if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F')
    return {CUDA_ERROR_INVALID_IMAGE, {}, "the image is an ELF (cubin/SASS): vgpu loads PTX text only", {}};
  const char* text = static_cast<const char*>(image);
  size_t n = strnlen(text, max_bytes + 1);
  if (n > max_bytes)
    return {CUDA_ERROR_INVALID_PTX, {}, "the PTX text is longer than " + std::to_string(max_bytes) + " bytes", {}};
  return check_text(std::string_view(text, n));
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
