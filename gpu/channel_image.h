// SPDX-License-Identifier: GPL-2.0-or-later
// A channel's run state in the migration image (docs/migration.md §2,
// "Physical channel run state at the boundary"; M4): what the model holds
// for a bound channel that is not in guest memory and not rebuilt: the
// host-class method state, the bound subchannel objects and, for a channel
// stopped inside a push-buffer segment, where (the cursor) and the divided
// work of its current method between two pieces (a sliced launch). A
// channel parked in an acquire, waiting for engine work, or between pieces
// of work its class cannot carry (a user launch, a copy) is refused by name.
// One codec (channel_image.cc), over common/wire_codec.h.
#pragma once

#include <cstdint>
#include <optional>
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

// Where a channel stopped inside the push-buffer segment of the GPFIFO
// entry at its GP_GET. The words are fetched again from guest memory (they
// must not change after submission, docs/migration.md §1).
struct SegmentCursor {
  uint64_t segment_va = 0;
  uint32_t segment_words = 0;
  uint32_t pos = 0;           // the next word
  bool in_command = false;    // a command in progress, at:
  uint32_t header = 0;        // its header word (decoded again)
  uint32_t header_index = 0;  // its header's word in the segment
  uint32_t command_done = 0;  // its methods done
  bool operator==(const SegmentCursor&) const = default;
};

// The current method's divided work between pieces (the cursor's command
// names the method and its subchannel's object makes the work again).
struct WorkImage {
  WorkState state;
  bool held = false;          // held at a slice boundary (else: the next piece at PFIFO's next turn)
  uint64_t op_engine_ns = 0;  // engine time of its pieces so far (CHAN_WATCHDOG)
  bool operator==(const WorkImage&) const = default;
};

struct ChannelImage {
  // Host class (906F) method state; GP_GET and ACQUIRE are the RAMFC words
  // the model loads and publishes, carried with the shadow (mediator).
  uint32_t sem_a = 0;
  uint32_t sem_b = 0;
  uint32_t sem_c = 0;
  uint32_t mem_op_a = 0;
  std::vector<ObjectImage> objects;     // by subchannel, ascending
  std::optional<SegmentCursor> cursor;  // none: at a GPFIFO entry boundary
  std::optional<WorkImage> work;        // only inside a command
  bool operator==(const ChannelImage&) const = default;
};

// The most state bytes one object may carry: the largest class's State,
// plus a compute object's module table with up to 8 MiB of PTX text
// (ModuleSlots::MAX_SOURCE_BYTES; object_image.cc checks the sum).
inline constexpr uint32_t MAX_OBJECT_STATE_BYTES = (uint32_t{8} << 20) + (uint32_t{4} << 10);
// The most state bytes divided work may carry (a built-in launch takes
// KERNEL_WORK_MAX_BYTES).
inline constexpr uint32_t MAX_WORK_STATE_BYTES = uint32_t{4} << 10;

// The record's layouts: `entry_boundary` (image versions 1 and 2) ends
// after the objects; `with_cursor` (3) adds the cursor and the work.
enum class ChannelImageLayout : uint8_t { entry_boundary, with_cursor };

void encode_channel(const ChannelImage& image, Writer& w);  // with_cursor
// Refuses a cut image, a subchannel out of range or given twice, an
// object's state over MAX_OBJECT_STATE_BYTES, a work state over
// MAX_WORK_STATE_BYTES, a cursor outside its segment or at a command that
// could not be in progress there, and work without a command, each by name.
[[nodiscard]] Result<ChannelImage> decode_channel(Reader& r,
                                                  ChannelImageLayout layout = ChannelImageLayout::with_cursor);

// The image of channel `chid`'s run, which must be stopped with no engine
// work outstanding (the caller, the PFIFO thread's owner, guarantees
// nothing runs it). Refused, naming why: the states the image does not
// carry (parked in an acquire, divided work whose class cannot save it, a
// fence a device wrote ahead of its method).
[[nodiscard]] Result<ChannelImage> save_channel_run(uint32_t chid, const ChannelRun& run);
// Into a run not loaded yet: the objects are made by make_class_object and
// take their state through restore_state; the cursor is set; divided work
// is checked by its object (ClassObject::check_work) and kept in
// `restored_work`, made again when the channel is loaded. A class the
// device does not have, a state its class refuses, or work without its
// object fails, and the run is left as it was.
[[nodiscard]] Status restore_channel_run(uint32_t chid, ChannelRun& run, const ChannelImage& image);

}  // namespace vgpu::gpu
