// SPDX-License-Identifier: GPL-2.0-or-later
// A channel's run state in the migration image (docs/migration.md §2,
// "Physical channel run state at the boundary"; M4): what the model holds
// for a bound channel that is not in guest memory and not rebuilt. This
// first part carries a channel stopped at a GPFIFO entry boundary: the
// host-class method state and the bound subchannel objects. A channel in a
// push-buffer segment, parked in an acquire, waiting for engine work or
// between pieces of divided work is refused by name (the rest of M4).
// One codec (channel_image.cc), over common/wire_codec.h.
#pragma once

#include <cstdint>
#include <vector>

#include "common/error.h"
#include "common/wire_codec.h"
#include "gpu/channel.h"

namespace vgpu::gpu {

struct ObjectImage {
  uint32_t subch = 0;
  uint32_t class_id = 0;
  std::vector<uint8_t> state;  // ClassObject::save_state
  bool operator==(const ObjectImage&) const = default;
};

struct ChannelImage {
  // Host class (906F) method state; GP_GET and ACQUIRE are the RAMFC words
  // the model loads and publishes, carried with the shadow (mediator).
  uint32_t sem_a = 0;
  uint32_t sem_b = 0;
  uint32_t sem_c = 0;
  uint32_t mem_op_a = 0;
  std::vector<ObjectImage> objects;  // by subchannel, ascending
  bool operator==(const ChannelImage&) const = default;
};

// The most state bytes one object may carry: the largest class's State,
// plus a compute object's module table with up to 8 MiB of PTX text
// (ModuleSlots::MAX_SOURCE_BYTES; object_image.cc checks the sum).
inline constexpr uint32_t MAX_OBJECT_STATE_BYTES = (uint32_t{8} << 20) + (uint32_t{4} << 10);

void encode_channel(const ChannelImage& image, Writer& w);
// Refuses a cut image, a subchannel out of range or given twice, and an
// object's state over MAX_OBJECT_STATE_BYTES, each by name.
[[nodiscard]] Result<ChannelImage> decode_channel(Reader& r);

// The image of channel `chid`'s run, which must be stopped at an entry
// boundary with no engine work outstanding (the caller, the PFIFO thread's
// owner, guarantees nothing runs it). Refused, naming why: the states the
// image does not carry yet.
[[nodiscard]] Result<ChannelImage> save_channel_run(uint32_t chid, const ChannelRun& run);
// Into a run just loaded from its instance block: the objects are made by
// make_class_object and take their state through restore_state. A class
// the device does not have or a state its class refuses fails, and the run
// is left as it was.
[[nodiscard]] Status restore_channel_run(uint32_t chid, ChannelRun& run, const ChannelImage& image);

}  // namespace vgpu::gpu
