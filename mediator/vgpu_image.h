// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's migration image (docs/migration.md §3): one opaque, versioned
// blob, made on the source and read on the destination, in guest terms.
// Exactly one codec (vgpu_image_codec.cc). Layout, little endian:
//   header  {magic "VGPUIMG\0", u32 version, u32 flags, u64 bytes}
//   config  the source's VgpuConfig echo (checked against the destination)
//   sections {u32 tag, u32 length, length bytes} until the end
// A decoder refuses an unknown version, a section it does not know, a
// section or header cut short, and a config unlike the destination's, each
// with a message naming it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "mediator/vgpu_config.h"

namespace vgpu::mediator {

inline constexpr char IMAGE_MAGIC[8] = {'V', 'G', 'P', 'U', 'I', 'M', 'G', '\0'};
// The newest this build reads and the one it writes. 3: a channel record
// ends with its push-buffer cursor and divided work (a sliced launch moved
// between two pieces); 2 (read still): a compute object's state ends with
// its module table (PTX texts); 1 (read still) has none.
inline constexpr uint32_t IMAGE_VERSION = 3;
inline constexpr uint32_t IMAGE_VERSION_CURSOR = 3;  // the first with a channel's cursor and work
inline constexpr size_t IMAGE_HEADER_BYTES = sizeof IMAGE_MAGIC + 2 * sizeof(uint32_t) + sizeof(uint64_t);

// Section tags, in the order they are written.
enum class ImageSection : uint32_t {
  regs = 1,      // VirtualRegisters::save, then the messages and line level delivered
  channels = 2,  // guest channels and their run state (not built yet: M4)
  pv = 3,        // PV interface and spaces (not built yet: M4)
  modules = 4,   // PTX module texts by hash (not built yet: M4)
  host = 5,      // the scheduler weight (counters and gpu_ns: not built yet, M4)
};
const char* image_section_name(uint32_t tag);  // "regs", or "unknown"

// The options both sides must agree on.
struct ImageConfig {
  uint64_t vram_bytes = 0;
  uint32_t channels = 0;
  bool bar_remap = false;
  bool lazy_shadow = false;
  bool pv = false;
  bool operator==(const ImageConfig&) const = default;
};
ImageConfig image_config_of(const VgpuConfig& c);
// The first option that differs, as "vgpu: migration image has vram=512
// MiB, this device vram=256 MiB".
[[nodiscard]] Status check_image_config(const ImageConfig& image, const ImageConfig& here);

struct ImageSectionBytes {
  uint32_t tag = 0;
  std::vector<uint8_t> bytes;
};

struct VgpuImage {
  uint32_t version = IMAGE_VERSION;  // as decoded; encode_image writes IMAGE_VERSION
  uint32_t flags = 0;
  ImageConfig config;
  std::vector<ImageSectionBytes> sections;  // each tag at most once
  const ImageSectionBytes* find(ImageSection tag) const;
};

std::vector<uint8_t> encode_image(const VgpuImage& image);
[[nodiscard]] Result<VgpuImage> decode_image(std::span<const uint8_t> bytes);

}  // namespace vgpu::mediator
