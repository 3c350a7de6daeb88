// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's migration image: made from its parts, read back into a fresh
// vGPU through the guest's own paths (docs/migration.md §6). Nothing
// derived (shadows, BAR windows) is in the image; it is rebuilt here.
#include <optional>
#include <string>

#include "common/wire_codec.h"
#include "gpu/gpu.h"
#include "mediator/host.h"
#include "mediator/vgpu.h"
#include "mediator/vgpu_image.h"
#include "vgpu/options.h"

namespace vgpu::mediator {
namespace {

Error not_built(const std::string& what) {
  return Error{Errc::unsupported, "vgpu: migration of " + what + " is not built yet (docs/migration.md M4)"};
}

// The 'channels' section: a count, then (guest channel, record) pairs.
Result<std::vector<std::pair<uint32_t, ChannelRecord>>> decode_channels(const ImageSectionBytes* section,
                                                                        uint32_t version) {
  const gpu::ChannelImageLayout layout = version >= IMAGE_VERSION_CURSOR ? gpu::ChannelImageLayout::with_cursor
                                                                         : gpu::ChannelImageLayout::entry_boundary;
  std::vector<std::pair<uint32_t, ChannelRecord>> out;
  if (!section) return out;
  Reader r(section->bytes);
  const uint32_t count = r.u32();
  if (count > regs::NUM_CHANNELS)
    return fail(Errc::invalid_argument, "vgpu: migration image section 'channels' has " + std::to_string(count) +
                                            " channels, more than a GPU has");
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    const uint32_t c = r.u32();
    Result<ChannelRecord> record = decode_channel_record(r, layout);
    if (!record) return std::unexpected(record.error());
    out.emplace_back(c, std::move(*record));
  }
  if (!r.ok() || !r.at_end())
    return fail(Errc::invalid_argument, "vgpu: migration image section 'channels' ends at byte " +
                                            std::to_string(r.where()) + " of " + std::to_string(r.size()));
  return out;
}

// The 'host' section: the scheduler weight, in [1, VGPU_OPT_WEIGHT_MAX].
// None in an image from a build before it: the destination's weight stays.
Result<std::optional<uint32_t>> decode_host(const ImageSectionBytes* section) {
  if (!section) return std::optional<uint32_t>{};
  Reader r(section->bytes);
  const uint32_t weight = r.u32();
  if (!r.ok() || !r.at_end())
    return fail(Errc::invalid_argument, "vgpu: migration image section 'host' has " +
                                            std::to_string(section->bytes.size()) + " bytes, not the " +
                                            std::to_string(sizeof weight) + " this vgpu reads");
  if (weight == 0 || weight > VGPU_OPT_WEIGHT_MAX)
    return fail(Errc::invalid_argument, "vgpu: migration image section 'host' has weight " + std::to_string(weight) +
                                            ", not in [1, " + std::to_string(VGPU_OPT_WEIGHT_MAX) + "]");
  return std::optional<uint32_t>{weight};
}

}  // namespace

Result<gpu::ChannelImage> Vgpu::Physical::save_run(uint32_t pchid) { return host_.gpu().save_channel(pchid); }
Status Vgpu::Physical::restore_run(uint32_t pchid, const gpu::ChannelImage& image) {
  return host_.gpu().restore_channel(pchid, image);
}

Result<std::vector<uint8_t>> Vgpu::export_image() const {
  MediatorLock lock(mutex_);
  if (pv_.slot_base() != 0) return std::unexpected(not_built("the PV interface"));
  Writer chans;
  uint32_t bound = 0;
  for (uint32_t c = 0; c < config_.channels; ++c) bound += channels_.bound(c) ? 1 : 0;
  if (bound > 0 && !frozen_)
    return fail(Errc::invalid_argument, "vgpu: a vGPU with bound channels is exported only while frozen");
  chans.u32(bound);
  for (uint32_t c = 0; c < config_.channels; ++c) {
    if (!channels_.bound(c)) continue;
    // save only reads; the channels' const accessors do not reach the GPU.
    Result<ChannelRecord> record = const_cast<ShadowChannels&>(channels_).save(c);
    if (!record) return std::unexpected(record.error());
    chans.u32(c);
    encode_channel_record(*record, chans);
  }
  Writer regs;
  regs_.save(regs);
  for (uint64_t delivered : raised_delivered_) regs.u64(delivered);
  regs.boolean(line_delivered_);
  for (gpu::Bar bar : {gpu::Bar::bar1, gpu::Bar::bar3}) regs.u32(bars_.inst_reg(bar));
  // The scheduler weight (vgpuctl set-weight changes it at run time):
  // the destination takes it over whatever it was started with.
  Writer host;
  host.u32(host_.weight(id_));
  VgpuImage image;
  image.config = image_config_of(config_);
  image.sections.push_back({static_cast<uint32_t>(ImageSection::regs), regs.take()});
  if (bound > 0) image.sections.push_back({static_cast<uint32_t>(ImageSection::channels), chans.take()});
  image.sections.push_back({static_cast<uint32_t>(ImageSection::host), host.take()});
  return encode_image(image);
}

Status Vgpu::import_image(std::span<const uint8_t> bytes) {
  Result<VgpuImage> image = decode_image(bytes);
  if (!image) return std::unexpected(image.error());
  if (Status same = check_image_config(image->config, image_config_of(config_)); !same) return same;
  for (ImageSection tag : {ImageSection::pv, ImageSection::modules})
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
  Result<std::vector<std::pair<uint32_t, ChannelRecord>>> records = decode_channels(image->find(ImageSection::channels),
                                                                                    image->version);
  if (!records) return std::unexpected(records.error());
  Result<std::optional<uint32_t>> weight = decode_host(image->find(ImageSection::host));
  if (!weight) return std::unexpected(weight.error());
  Status imported = locked([&]() -> Status {
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
    for (const auto& [c, record] : *records) {
      if (Status put = channels_.restore(c, record); !put) {
        channels_.reset();
        return put;
      }
    }
    // Restored channels are stopped. A frozen destination (QEMU's incoming
    // side, frozen before the load) keeps them so until the thaw at resume:
    // the entries the GPU was already given must not run before the VM does.
    if (!frozen_)
      for (const auto& [c, record] : *records) physical_.set_runnable(pchid_of(c), channels_.guest_runnable(c));
    // Entries the guest rang that the GPU was not given yet: queued again
    // (while frozen, the thaw requeues them).
    for (const auto& [c, record] : *records)
      if (record.guest_put != record.physical_put) channels_.doorbell(c, record.guest_put);
    // A launch restored between slices and held there: a turn goes on with
    // it (while frozen, the thaw's end_turn does this).
    if (!frozen_)
      for (const auto& [c, record] : *records) channels_.end_turn(c);
    for (const auto& [c, record] : *records)
      if (record.run.work) Counters::bump(counters_.launches_moved_in);
    return {};
  });
  if (!imported || !*weight) return imported;
  return host_.set_weight(id_, **weight);  // in range: decode_host checked it
}

}  // namespace vgpu::mediator
