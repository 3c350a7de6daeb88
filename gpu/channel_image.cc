// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/channel_image.h"

#include <string>

#include "common/text.h"
#include "gpu/pushbuf.h"
#include "vgpu/formats.h"
#include "gpu/engines/class_object.h"

namespace vgpu::gpu {
namespace {

Error refused(uint32_t chid, const std::string& what, Errc code = Errc::invalid_argument) {
  return Error{code, "vgpu: migration of channel " + std::to_string(chid) + ": " + what};
}

Error bad_image(const std::string& what) {
  return Error{Errc::invalid_argument, "vgpu: migration image channel " + what};
}

// What save_channel_run cannot carry, or nullptr.
const char* not_carried(const ChannelRun& run) {
  if (run.engine_wait || run.following) return "engine work is outstanding";
  if (run.parked) return "it is parked in a semaphore acquire";
  if ((run.held || run.next_piece) && !run.divided && !run.restored_work)
    return "it is between pieces of divided work that is gone";
  if (run.released_early && run.in_segment) return "its fence was written by the device ahead of its method";
  return nullptr;
}

std::optional<SegmentCursor> cursor_of(const ChannelRun& run) {
  if (!run.in_segment) return std::nullopt;
  SegmentCursor c{run.segment_va, run.segment_words, run.pos, run.command.has_value(), 0, 0, run.command_done};
  if (run.command) {
    c.header = run.command_header;
    c.header_index = static_cast<uint32_t>((run.command_va - run.segment_va) / sizeof(uint32_t));
  }
  return c;
}

// Why a cursor could not be where a channel stopped, or nullptr.
const char* bad_cursor(const SegmentCursor& c) {
  constexpr uint32_t MAX_WORDS = fmt::gp::Length::mask;
  if (c.segment_words == 0 || c.segment_words > MAX_WORDS) return "a segment length of 0 or past an entry's field";
  if (c.segment_va % sizeof(uint32_t) != 0 ||
      c.segment_va + uint64_t{c.segment_words} * sizeof(uint32_t) > fmt::VA_LIMIT)
    return "a segment outside the address space";
  if (c.pos > c.segment_words) return "a next word past its segment";
  if (!c.in_command)
    return c.header != 0 || c.header_index != 0 || c.command_done != 0 ? "a command it is not in" : nullptr;
  const pushbuf::Command cmd = pushbuf::decode(c.header);
  if (cmd.kind == pushbuf::Kind::illegal || cmd.kind == pushbuf::Kind::end_segment || cmd.kind == pushbuf::Kind::nop ||
      pushbuf::methods(cmd) == 0)
    return "a command header that starts no method";
  const uint32_t data_words = cmd.kind == pushbuf::Kind::immediate ? 0 : cmd.count;
  if (uint64_t{c.header_index} + 1 + data_words > c.segment_words) return "a command past its segment";
  if (c.command_done >= pushbuf::methods(cmd)) return "a command with every method done";
  const uint32_t data_done = cmd.kind == pushbuf::Kind::immediate ? 0 : c.command_done;
  if (c.pos != c.header_index + 1 + data_done) return "a next word that is not its command's";
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
  w.boolean(image.cursor.has_value());
  if (const std::optional<SegmentCursor>& c = image.cursor) {
    w.u64(c->segment_va);
    for (uint32_t f : {c->segment_words, c->pos}) w.u32(f);
    w.boolean(c->in_command);
    for (uint32_t f : {c->header, c->header_index, c->command_done}) w.u32(f);
  }
  w.boolean(image.work.has_value());
  if (const std::optional<WorkImage>& work = image.work) {
    w.u32(work->state.kind);
    w.bytes(work->state.bytes);
    w.boolean(work->held);
    w.u64(work->op_engine_ns);
  }
}

namespace {

// The cursor and the work of a with_cursor record.
Status decode_progress(Reader& r, ChannelImage& image) {
  if (r.boolean()) {
    SegmentCursor c;
    c.segment_va = r.u64();
    for (uint32_t* f : {&c.segment_words, &c.pos}) *f = r.u32();
    c.in_command = r.boolean();
    for (uint32_t* f : {&c.header, &c.header_index, &c.command_done}) *f = r.u32();
    if (!r.ok()) return {};
    if (const char* why = bad_cursor(c)) return std::unexpected(bad_image(std::string("cursor has ") + why));
    image.cursor = c;
  }
  if (!r.boolean()) return {};
  WorkImage work;
  work.state.kind = r.u32();
  const std::span<const uint8_t> state = r.bytes();
  work.held = r.boolean();
  work.op_engine_ns = r.u64();
  if (!r.ok()) return {};
  if (state.size() > MAX_WORK_STATE_BYTES)
    return std::unexpected(bad_image("divided work state of " + std::to_string(state.size()) + " bytes (at most " +
                                     std::to_string(MAX_WORK_STATE_BYTES) + ")"));
  if (!image.cursor || !image.cursor->in_command)
    return std::unexpected(bad_image("has divided work outside a command"));
  work.state.bytes.assign(state.begin(), state.end());
  image.work = std::move(work);
  return {};
}

}  // namespace

Result<ChannelImage> decode_channel(Reader& r, ChannelImageLayout layout) {
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
  if (r.ok() && layout == ChannelImageLayout::with_cursor)
    if (Status progress = decode_progress(r, image); !progress) return std::unexpected(progress.error());
  if (!r.ok()) return std::unexpected(bad_image("ends at byte " + std::to_string(r.where())));
  return image;
}

Result<ChannelImage> save_channel_run(uint32_t chid, const ChannelRun& run) {
  if (const char* why = not_carried(run))
    return std::unexpected(
        refused(chid, std::string(why) + " (not built yet, docs/migration.md §10)", Errc::unsupported));
  ChannelImage image{run.sem_a, run.sem_b, run.sem_c, run.mem_op_a, {}, cursor_of(run), {}};
  if (run.divided || run.restored_work) {
    std::optional<WorkState> state = run.divided ? run.divided->save_progress() : run.restored_work;
    if (!state)
      return std::unexpected(refused(chid,
                                     "it is between pieces of divided work that does not travel (a user kernel "
                                     "launch or a copy; not built yet, docs/migration.md §10)",
                                     Errc::unsupported));
    image.work = WorkImage{std::move(*state), run.held, run.op_engine_ns};
  }
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
  std::optional<pushbuf::Command> command;
  if (image.cursor && image.cursor->in_command) command = pushbuf::decode(image.cursor->header);
  if (image.work) {
    const ClassObject* o = command ? objects[command->subch].get() : nullptr;
    if (!o) return std::unexpected(refused(chid, "its divided work has no object on its command's subchannel"));
    if (std::optional<std::string> why = o->check_work(pushbuf::method_of(*command, image.cursor->command_done),
                                                       image.work->state))
      return std::unexpected(refused(chid, "its divided work is refused: " + *why));
  }
  run.objects = std::move(objects);
  if (const std::optional<SegmentCursor>& c = image.cursor) {
    run.in_segment = true;
    run.segment_va = c->segment_va;
    run.segment_words = c->segment_words;
    run.window.clear();
    run.window_start = 0;
    run.pos = c->pos;
    run.command = command;
    run.command_header = c->header;
    run.command_done = c->command_done;
    run.command_va = c->segment_va + uint64_t{c->header_index} * sizeof(uint32_t);
  }
  if (image.work) {
    run.restored_work = image.work->state;
    run.held = image.work->held;
    run.next_piece = !image.work->held;
    run.op_engine_ns = image.work->op_engine_ns;
  }
  run.sem_a = image.sem_a;
  run.sem_b = image.sem_b;
  run.sem_c = image.sem_c;
  run.mem_op_a = image.mem_op_a;
  return {};
}

}  // namespace vgpu::gpu
