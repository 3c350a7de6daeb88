// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/channel_image.h"

#include <string>

#include "common/text.h"
#include "gpu/engines/class_object.h"

namespace vgpu::gpu {
namespace {

Error refused(uint32_t chid, const std::string& what, Errc code = Errc::invalid_argument) {
  return Error{code, "vgpu: migration of channel " + std::to_string(chid) + ": " + what};
}

Error bad_image(const std::string& what) {
  return Error{Errc::invalid_argument, "vgpu: migration image channel " + what};
}

// What save_channel_run cannot carry yet, or nullptr at an entry boundary.
const char* not_at_boundary(const ChannelRun& run) {
  if (run.engine_wait || run.following) return "engine work is outstanding";
  if (run.divided || run.held || run.next_piece) return "it is between pieces of divided work";
  if (run.parked) return "it is parked in a semaphore acquire";
  if (run.in_segment || run.command) return "it is inside a push-buffer segment";
  return nullptr;
}

}  // namespace

void encode_channel(const ChannelImage& image, Writer& w) {
  for (uint32_t f : {image.sem_a, image.sem_b, image.sem_c, image.mem_op_a}) w.u32(f);
  w.u32(static_cast<uint32_t>(image.objects.size()));
  for (const ObjectImage& o : image.objects) {
    w.u32(o.subch);
    w.u32(o.class_id);
    w.bytes(o.state);
  }
}

Result<ChannelImage> decode_channel(Reader& r) {
  ChannelImage image;
  for (uint32_t* f : {&image.sem_a, &image.sem_b, &image.sem_c, &image.mem_op_a}) *f = r.u32();
  const uint32_t count = r.u32();
  if (r.ok() && count > regs::NUM_SUBCHANNELS)
    return std::unexpected(bad_image("has " + std::to_string(count) + " objects, a channel has " +
                                     std::to_string(regs::NUM_SUBCHANNELS) + " subchannels"));
  uint32_t seen = 0;
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    ObjectImage o;
    o.subch = r.u32();
    o.class_id = r.u32();
    const std::span<const uint8_t> state = r.bytes();
    if (!r.ok()) break;
    if (o.subch >= regs::NUM_SUBCHANNELS || (seen >> o.subch & 1))
      return std::unexpected(bad_image("object on subchannel " + std::to_string(o.subch) +
                                       (o.subch >= regs::NUM_SUBCHANNELS ? " (out of range)" : " (given twice)")));
    if (state.size() > MAX_OBJECT_STATE_BYTES)
      return std::unexpected(bad_image("object state of " + std::to_string(state.size()) + " bytes (at most " +
                                       std::to_string(MAX_OBJECT_STATE_BYTES) + ")"));
    seen |= 1u << o.subch;
    o.state.assign(state.begin(), state.end());
    image.objects.push_back(std::move(o));
  }
  if (!r.ok()) return std::unexpected(bad_image("ends at byte " + std::to_string(r.where())));
  return image;
}

Result<ChannelImage> save_channel_run(uint32_t chid, const ChannelRun& run) {
  if (const char* why = not_at_boundary(run))
    return std::unexpected(
        refused(chid, std::string(why) + " (not built yet, docs/migration.md M4)", Errc::unsupported));
  ChannelImage image{run.sem_a, run.sem_b, run.sem_c, run.mem_op_a, {}};
  for (uint32_t subch = 0; subch < regs::NUM_SUBCHANNELS; ++subch) {
    const ClassObject* o = run.objects[subch].get();
    if (!o) continue;
    std::optional<std::vector<uint8_t>> state = o->save_state();
    if (!state)
      return std::unexpected(
          refused(chid, "the object on subchannel " + std::to_string(subch) + " has a state its class cannot save",
                  Errc::unsupported));
    image.objects.push_back({subch, o->class_id(), std::move(*state)});
  }
  return image;
}

Status restore_channel_run(uint32_t chid, ChannelRun& run, const ChannelImage& image) {
  std::array<std::unique_ptr<ClassObject>, regs::NUM_SUBCHANNELS> objects;
  for (const ObjectImage& o : image.objects) {
    if (o.subch >= regs::NUM_SUBCHANNELS || objects[o.subch])
      return std::unexpected(refused(chid, "subchannel " + std::to_string(o.subch) + " out of range or given twice"));
    std::unique_ptr<ClassObject> made = make_class_object(o.class_id);
    if (!made) return std::unexpected(refused(chid, "class " + hex(o.class_id) + " is not on this device"));
    if (!made->restore_state(o.state))
      return std::unexpected(refused(chid, "the state of the object on subchannel " + std::to_string(o.subch) +
                                               " is refused by its class"));
    objects[o.subch] = std::move(made);
  }
  run.objects = std::move(objects);
  run.sem_a = image.sem_a;
  run.sem_b = image.sem_b;
  run.sem_c = image.sem_c;
  run.mem_op_a = image.mem_op_a;
  return {};
}

}  // namespace vgpu::gpu
