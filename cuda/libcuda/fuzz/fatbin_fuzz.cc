// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target: a fat binary from a guest's program (docs/fuzzing.md),
// through the codec (cuda/libcuda/fatbin.h): parse, unpack every entry,
// extract the PTX cuModuleLoadData would load, and, when the container
// lies whole inside the input, check_image on it as cuModuleLoadData
// calls it. What must hold: no crash, no sanitizer report (no read outside
// the input), no leak, no hang, every Error has a message, and an unpacked
// payload has the size its entry declares.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "cuda/libcuda/fatbin.h"
#include "cuda/libcuda/module_image.h"

namespace {

using namespace vgpu::cuda;

constexpr uint64_t MAX_UNPACK = 1u << 20;  // libFuzzer's -rss_limit stays far
constexpr uint64_t MAX_TEXT = 1u << 20;

void fail(const char* what) {
  (void)what;
  std::abort();
}

void check_entries(const fatbin::Container& c) {
  for (const fatbin::Entry& e : c.entries) {
    auto out = fatbin::unpack(e, MAX_UNPACK);
    if (!out) {
      if (out.error().message.empty()) fail("an unpack Error without a message");
      continue;
    }
    if (e.compression != fatbin::Compression::none && out->size() != e.uncompressed_bytes)
      fail("an unpacked payload of another size than declared");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto c = fatbin::parse(bytes);
  if (!c) {
    if (c.error().message.empty()) fail("a parse Error without a message");
  } else {
    check_entries(*c);
  }
  auto text = fatbin::extract_ptx(bytes, fatbin::Target{}, MAX_TEXT);
  if (!text && text.error().message.empty()) fail("an extract Error without a message");
  if (c) {  // the whole container is in the input: what cuModuleLoadData does with it
    std::vector<std::byte> copy(bytes.begin(), bytes.end());
    ImageCheck img = check_image(copy.data(), MAX_TEXT);
    if (img.result != CUDA_SUCCESS && img.message.empty()) fail("a refused image without a message");
    if (img.result == CUDA_SUCCESS && (!text || img.text != *text)) fail("check_image and extract_ptx disagree");
  }
  return 0;
}
