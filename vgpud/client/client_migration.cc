// SPDX-License-Identifier: GPL-2.0-or-later
// The client's migration commands (docs/migration.md §7): each a round
// trip; the image travels in a memfd both ways.
#include "common/text.h"
#include "vgpud/client/client.h"

namespace vgpu::vgpud {

Result<Message> Client::call(proto::Command c, std::span<const std::byte> payload, std::span<const int> fds) {
  const uint16_t id = next_id_++;
  const char* name = proto::command_name(static_cast<uint16_t>(c));
  if (!send(proto::command(id, c, payload), fds))
    return fail(Errc::io_error, strfmt("vgpud: %s: the daemon is gone (%s)", name, lost_reason_.c_str()));
  ++round_trips_;
  auto r = wait_reply(id);
  if (!r) return fail(Errc::io_error, strfmt("vgpud: %s: the daemon is gone (%s)", name, lost_reason_.c_str()));
  if (r->header.command != static_cast<uint16_t>(c)) {
    lose(strfmt("a reply to %s for command %u", name, r->header.command));
    return fail(Errc::io_error, "vgpud: " + lost_reason_);
  }
  if (r->header.flags & proto::FLAG_ERROR) {
    const auto why = static_cast<proto::Refusal>(r->header.error);
    const std::string reason(reinterpret_cast<const char*>(r->payload.data()), r->payload.size());
    return fail(why == proto::Refusal::busy ? Errc::timeout : Errc::unsupported,
                strfmt("vgpud refused the %s (%s): %s", name, proto::refusal_name(why), reason.c_str()));
  }
  return std::move(*r);
}

Status Client::freeze(uint32_t timeout_ms) {
  const proto::FreezeRequest req{timeout_ms, 0};
  auto r = call(proto::Command::freeze, proto::bytes_of(req));
  if (!r) return std::unexpected(r.error());
  return {};
}

void Client::thaw() {
  auto r = call(proto::Command::thaw, {});
  if (!r && !lost_) lose(r.error().message);
}

Status Client::dirty_log(bool on) {
  const proto::DirtyLogRequest req{on ? 1u : 0u, 0};
  auto r = call(proto::Command::dirty_log, proto::bytes_of(req));
  if (!r) return std::unexpected(r.error());
  return {};
}

Result<uint64_t> Client::dirty_take(std::span<uint64_t> bitmap) {
  auto r = call(proto::Command::dirty_take, {});
  if (!r) return std::unexpected(r.error());
  if (r->payload.size() < sizeof(proto::DirtyTakeReply)) {
    lose("short dirty take reply");
    return fail(Errc::io_error, "vgpud: " + lost_reason_);
  }
  const auto head = proto::load<proto::DirtyTakeReply>(r->payload);
  if (r->payload.size() != sizeof head + head.words * sizeof(uint64_t)) {
    lose("dirty take reply of the wrong size");
    return fail(Errc::io_error, "vgpud: " + lost_reason_);
  }
  if (bitmap.size() < head.words)
    return fail(Errc::invalid_argument, strfmt("vgpu: a dirty bitmap of %zu words is short of the daemon's %llu",
                                               bitmap.size(), static_cast<unsigned long long>(head.words)));
  for (uint64_t w = 0; w < head.words; ++w)
    bitmap[w] |= proto::load<uint64_t>(r->payload, sizeof head + w * sizeof(uint64_t));
  return head.pages;
}

Result<std::vector<uint8_t>> Client::state_export() {
  auto r = call(proto::Command::state_export, {});
  if (!r) return std::unexpected(r.error());
  if (r->payload.size() != sizeof(proto::StateImage) || r->fds.size() != proto::STATE_FDS) {
    lose("malformed state export reply");
    return fail(Errc::io_error, "vgpud: " + lost_reason_);
  }
  const uint64_t bytes = proto::load<proto::StateImage>(r->payload).bytes;
  if (bytes > proto::MAX_IMAGE_BYTES) return fail(Errc::io_error, "vgpud: an exported image over the protocol's limit");
  auto image = read_image(r->fds[0].get(), bytes);
  if (!image) return fail(Errc::io_error, "vgpud: the exported image: " + image.error().message);
  return image;
}

Status Client::migrated() {
  auto r = call(proto::Command::migrated, {});
  if (!r) return std::unexpected(r.error());
  return {};
}

Status Client::state_import(std::span<const uint8_t> image) {
  if (image.empty() || image.size() > proto::MAX_IMAGE_BYTES)
    return fail(Errc::invalid_argument, strfmt("vgpu: an image of %zu bytes (1 to %llu move)", image.size(),
                                               static_cast<unsigned long long>(proto::MAX_IMAGE_BYTES)));
  auto fd = image_memfd(image);
  if (!fd) return fail(Errc::io_error, "vgpu: the image to import: " + fd.error().message);
  const proto::StateImage head{image.size()};
  const int fds[proto::STATE_FDS] = {fd->get()};
  auto r = call(proto::Command::state_import, proto::bytes_of(head), fds);
  if (!r) return std::unexpected(r.error());
  return {};
}

}  // namespace vgpu::vgpud
