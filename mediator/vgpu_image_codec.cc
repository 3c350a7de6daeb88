// SPDX-License-Identifier: GPL-2.0-or-later
#include <algorithm>
#include <cstring>
#include <string>

#include "common/wire_codec.h"
#include "mediator/vgpu_image.h"
#include "vgpu/bits.h"

namespace vgpu::mediator {
namespace {

constexpr uint32_t LAST_SECTION = static_cast<uint32_t>(ImageSection::host);

Error refused(const std::string& what) { return Error{Errc::invalid_argument, "vgpu: migration image " + what}; }

std::string mib(uint64_t bytes) {
  return bytes % MiB == 0 ? std::to_string(bytes / MiB) + " MiB" : std::to_string(bytes) + " bytes";
}
const char* on_off(bool b) { return b ? "on" : "off"; }

// The header's config, in wire order: encode_image writes and decode_image
// reads it through this one list.
template <typename Config, typename Io>
void config_fields(Config& c, Io& io) {
  io.fields(c.vram_bytes, c.channels, c.bar_remap, c.lazy_shadow, c.pv);
}

}  // namespace

const char* image_section_name(uint32_t tag) {
  switch (static_cast<ImageSection>(tag)) {
    case ImageSection::regs: return "regs";
    case ImageSection::channels: return "channels";
    case ImageSection::pv: return "pv";
    case ImageSection::modules: return "modules";
    case ImageSection::host: return "host";
  }
  return "unknown";
}

ImageConfig image_config_of(const VgpuConfig& c) {
  return ImageConfig{c.vram_bytes, c.channels, c.bar_remap, c.lazy_shadow, c.pv};
}

Status check_image_config(const ImageConfig& image, const ImageConfig& here) {
  auto differs = [](const std::string& name, const std::string& theirs, const std::string& ours) {
    return std::unexpected(refused("has " + name + "=" + theirs + ", this device " + name + "=" + ours));
  };
  if (image.vram_bytes != here.vram_bytes) return differs("vram", mib(image.vram_bytes), mib(here.vram_bytes));
  if (image.channels != here.channels)
    return differs("channels", std::to_string(image.channels), std::to_string(here.channels));
  if (image.bar_remap != here.bar_remap) return differs("bar-remap", on_off(image.bar_remap), on_off(here.bar_remap));
  if (image.lazy_shadow != here.lazy_shadow)
    return differs("lazy-shadow", on_off(image.lazy_shadow), on_off(here.lazy_shadow));
  if (image.pv != here.pv) return differs("pv", on_off(image.pv), on_off(here.pv));
  return {};
}

const ImageSectionBytes* VgpuImage::find(ImageSection tag) const {
  auto it = std::find_if(sections.begin(), sections.end(),
                         [tag](const ImageSectionBytes& s) { return s.tag == static_cast<uint32_t>(tag); });
  return it == sections.end() ? nullptr : &*it;
}

std::vector<uint8_t> encode_image(const VgpuImage& image) {
  Writer w;
  for (char c : IMAGE_MAGIC) w.u8(static_cast<uint8_t>(c));
  w.u32(IMAGE_VERSION);
  w.u32(image.flags);
  const size_t bytes_at = w.size();
  w.u64(0);  // the total, filled in below
  config_fields(image.config, w);
  for (const ImageSectionBytes& s : image.sections) {
    w.u32(s.tag);
    w.bytes(s.bytes);
  }
  const uint64_t total = w.size();
  w.patch_u32(bytes_at, static_cast<uint32_t>(total));
  w.patch_u32(bytes_at + sizeof(uint32_t), static_cast<uint32_t>(total >> 32));
  return w.take();
}

Result<VgpuImage> decode_image(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  char magic[sizeof IMAGE_MAGIC];
  for (char& c : magic) c = static_cast<char>(r.u8());
  const uint32_t version = r.u32();
  VgpuImage image;
  image.version = version;
  image.flags = r.u32();
  const uint64_t total = r.u64();
  if (!r.ok())
    return std::unexpected(
        refused("header ends at byte " + std::to_string(bytes.size()) + " of " + std::to_string(IMAGE_HEADER_BYTES)));
  if (std::memcmp(magic, IMAGE_MAGIC, sizeof magic) != 0) return std::unexpected(refused("has no VGPUIMG magic"));
  if (version > IMAGE_VERSION)
    return std::unexpected(Error{Errc::unsupported, "vgpu: migration image version " + std::to_string(version) +
                                                        " is newer than this vgpu reads (" +
                                                        std::to_string(IMAGE_VERSION) + ")"});
  if (version == 0) return std::unexpected(refused("has version 0, which no vgpu writes"));
  if (total != bytes.size())
    return std::unexpected(refused("ends at byte " + std::to_string(bytes.size()) + " of " + std::to_string(total)));
  config_fields(image.config, r);
  if (!r.ok()) return std::unexpected(refused("config ends at byte " + std::to_string(bytes.size())));
  while (!r.at_end()) {
    const size_t start = r.where();
    ImageSectionBytes s;
    s.tag = r.u32();
    const uint32_t length = r.u32();
    if (r.ok() && (s.tag == 0 || s.tag > LAST_SECTION))
      return std::unexpected(refused("has section tag " + std::to_string(s.tag) + ", which this vgpu does not know"));
    if (!r.ok() || length > r.left())
      return std::unexpected(refused("section '" + std::string(image_section_name(s.tag)) + "' ends at byte " +
                                     std::to_string(bytes.size()) + " of " + std::to_string(start + 8 + length)));
    if (image.find(static_cast<ImageSection>(s.tag)))
      return std::unexpected(refused("has section '" + std::string(image_section_name(s.tag)) + "' twice"));
    Reader body = r.sub(length);
    s.bytes.assign(bytes.begin() + static_cast<ptrdiff_t>(start + 8),
                   bytes.begin() + static_cast<ptrdiff_t>(start + 8 + body.size()));
    image.sections.push_back(std::move(s));
  }
  return image;
}

}  // namespace vgpu::mediator
