// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's migration image: made from its parts, read back into a fresh
// vGPU through the guest's own paths (docs/migration.md §6). Nothing
// derived (shadows, BAR windows) is in the image; it is rebuilt here.
#include <string>

#include "common/wire_codec.h"
#include "mediator/vgpu.h"
#include "mediator/vgpu_image.h"

namespace vgpu::mediator {
namespace {

Error not_built(const std::string& what) {
  return Error{Errc::unsupported, "vgpu: migration of " + what + " is not built yet (docs/migration.md M4)"};
}

}  // namespace

Result<std::vector<uint8_t>> Vgpu::export_image() const {
  MediatorLock lock(mutex_);
  for (uint32_t c = 0; c < config_.channels; ++c)
    if (channels_.bound(c)) return std::unexpected(not_built("a bound channel (channel " + std::to_string(c) + ")"));
  if (pv_.slot_base() != 0) return std::unexpected(not_built("the PV interface"));
  Writer regs;
  regs_.save(regs);
  for (uint64_t delivered : raised_delivered_) regs.u64(delivered);
  regs.boolean(line_delivered_);
  for (gpu::Bar bar : {gpu::Bar::bar1, gpu::Bar::bar3}) regs.u32(bars_.inst_reg(bar));
  VgpuImage image;
  image.config = image_config_of(config_);
  image.sections.push_back({static_cast<uint32_t>(ImageSection::regs), regs.take()});
  return encode_image(image);
}

Status Vgpu::import_image(std::span<const uint8_t> bytes) {
  Result<VgpuImage> image = decode_image(bytes);
  if (!image) return std::unexpected(image.error());
  if (Status same = check_image_config(image->config, image_config_of(config_)); !same) return same;
  for (ImageSection tag : {ImageSection::channels, ImageSection::pv, ImageSection::modules})
    if (image->find(tag))
      return std::unexpected(
          not_built(std::string("section '") + image_section_name(static_cast<uint32_t>(tag)) + "'"));
  const ImageSectionBytes* section = image->find(ImageSection::regs);
  if (!section) return std::unexpected(Error{Errc::invalid_argument, "vgpu: migration image has no 'regs' section"});

  Reader r(section->bytes);
  VirtualRegisters restored;
  const bool regs_ok = restored.restore(r);
  std::array<uint64_t, regs::pci::MSI_VECTORS> delivered{};
  for (uint64_t& d : delivered) d = r.u64();
  const bool line = r.boolean();
  std::array<uint32_t, 2> bar_inst{r.u32(), r.u32()};
  if (!regs_ok || !r.ok() || !r.at_end())
    return std::unexpected(Error{Errc::invalid_argument, "vgpu: migration image section 'regs' has " +
                                                             std::to_string(r.size()) + " bytes, not the " +
                                                             std::to_string(r.where()) + " this vgpu reads"});
  return locked([&]() -> Status {
    for (uint32_t c = 0; c < config_.channels; ++c)
      if (channels_.bound(c))
        return fail(Errc::invalid_argument,
                    "vgpu: a migration image is read only into a vGPU with no bound channel (channel " +
                        std::to_string(c) + " is bound)");
    regs_ = restored;
    raised_delivered_ = delivered;
    line_delivered_ = line;
    set_bar_inst(gpu::Bar::bar1, bar_inst[0]);
    set_bar_inst(gpu::Bar::bar3, bar_inst[1]);
    set_userd_base(regs_.userd_base);
    return {};
  });
}

}  // namespace vgpu::mediator
