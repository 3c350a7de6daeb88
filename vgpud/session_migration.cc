// SPDX-License-Identifier: GPL-2.0-or-later
// A session's migration commands (docs/migration.md §7): the QEMU of a
// vgpud VM asks its daemon to freeze and thaw the vGPU, to log the pages
// of its VRAM the device writes, and to export or import the device's
// image. VRAM itself moves in the QEMUs' RAM migration (the VRAM memfd is
// a RAMBlock on both sides); the image moves in a memfd. What the vGPU
// refuses is a refusal reply naming the reason, and the VM runs on; a
// malformed message ends this connection only, as any other does.
#include <cstring>

#include "common/text.h"
#include "gpu/mem/dirty_log.h"
#include "vgpud/session.h"

namespace vgpu::vgpud {

const char* migration_state_name(MigrationState s) {
  switch (s) {
    case MigrationState::running: return "running";
    case MigrationState::outgoing: return "outgoing";
    case MigrationState::frozen: return "frozen";
    case MigrationState::exported: return "exported";
    case MigrationState::imported: return "imported";
    case MigrationState::migrated: return "migrated";
  }
  return "unknown";
}

void Session::set_state(MigrationState s) {
  std::lock_guard lock(mutex_);
  state_ = s;
}

// What the vGPU refused: logged, and the refusal is the reply.
bool Session::refuse(uint16_t id, proto::Command cmd, proto::Refusal r, const std::string& reason, std::string& why) {
  daemon_.log(strfmt("vm %s: %s refused (%s): %s", name_.c_str(), proto::command_name(static_cast<uint16_t>(cmd)),
                     proto::refusal_name(r), reason.c_str()));
  return send(proto::command_refusal(id, cmd, r, reason), why);
}

bool Session::migration(const Message& m, std::string& why) {
  const auto cmd = static_cast<proto::Command>(m.header.command);
  const uint16_t id = m.header.id;
  auto malformed = [&](const Error& e) {
    why = "malformed message: " + e.message;
    return false;
  };
  switch (cmd) {
    case proto::Command::freeze: {
      auto ms = proto::parse_freeze(m.payload);
      if (!ms) return malformed(ms.error());
      if (Status s = vgpu_->freeze(uint64_t{*ms} * 1'000'000); !s)
        return refuse(id, cmd, proto::Refusal::busy, s.error().message, why);
      set_state(MigrationState::frozen);
      break;
    }
    case proto::Command::thaw:
      if (Status s = proto::parse_empty(m.payload, cmd); !s) return malformed(s.error());
      vgpu_->thaw();
      // The destination's first thaw after its import is its resume: the
      // move is done, and the name is this VM's alone once the source goes.
      if (state_ == MigrationState::imported) {
        daemon_.log(strfmt("vm %s: resumed after its migration", name_.c_str()));
        std::lock_guard lock(mutex_);
        incoming_ = false;
      }
      set_state(logging_ ? MigrationState::outgoing : MigrationState::running);
      break;
    case proto::Command::dirty_log: {
      auto on = proto::parse_dirty_log(m.payload);
      if (!on) return malformed(on.error());
      gpu::DirtyLog& log = daemon_.host().gpu().vram().dirty_log();
      if (*on && !logging_) log.start();
      if (!*on && logging_) log.stop();
      logging_ = *on;
      if (!vgpu_->frozen()) set_state(logging_ ? MigrationState::outgoing : MigrationState::running);
      break;
    }
    case proto::Command::dirty_take:
      if (Status s = proto::parse_empty(m.payload, cmd); !s) return malformed(s.error());
      return dirty_take(id, why);
    case proto::Command::state_export:
      if (Status s = proto::parse_empty(m.payload, cmd); !s) return malformed(s.error());
      return state_export(id, why);
    case proto::Command::state_import: {
      auto bytes = proto::parse_state_image(m.payload);
      if (!bytes) return malformed(bytes.error());
      if (m.fds.size() != proto::STATE_FDS) {
        why = strfmt("malformed message: state import with %zu descriptors, not %zu", m.fds.size(), proto::STATE_FDS);
        return false;
      }
      return state_import(m, *bytes, why);
    }
    case proto::Command::migrated:
      if (Status s = proto::parse_empty(m.payload, cmd); !s) return malformed(s.error());
      return migrated(id, why);
    default: why = "unexpected command"; return false;
  }
  if (!send_layout_if_changed(why)) return false;
  return send(proto::reply(id, cmd), why);
}

bool Session::dirty_take(uint16_t id, std::string& why) {
  const shadow::Partition& p = vgpu_->partition();
  const uint64_t pages = p.size / gpu::DirtyLog::PAGE;
  const uint64_t words = (pages + gpu::DirtyLog::PAGES_PER_WORD - 1) / gpu::DirtyLog::PAGES_PER_WORD;
  std::vector<uint64_t> bitmap(words);
  const proto::DirtyTakeReply head{daemon_.host().gpu().vram().dirty_log().take(p.base, p.size, bitmap), words};
  std::vector<std::byte> payload(sizeof head + words * sizeof(uint64_t));
  std::memcpy(payload.data(), &head, sizeof head);
  if (words) std::memcpy(payload.data() + sizeof head, bitmap.data(), words * sizeof(uint64_t));
  return send(proto::reply(id, proto::Command::dirty_take, payload), why);
}

bool Session::state_export(uint16_t id, std::string& why) {
  const auto cmd = proto::Command::state_export;
  auto image = vgpu_->export_image();
  if (!image) return refuse(id, cmd, proto::Refusal::bad_state, image.error().message, why);
  if (image->size() > proto::MAX_IMAGE_BYTES)
    return refuse(id, cmd, proto::Refusal::bad_state,
                  strfmt("the image's %zu bytes exceed the protocol's %llu", image->size(),
                         static_cast<unsigned long long>(proto::MAX_IMAGE_BYTES)),
                  why);
  auto fd = image_memfd(*image);
  if (!fd) return refuse(id, cmd, proto::Refusal::internal, fd.error().message, why);
  const proto::StateImage head{image->size()};
  const int fds[proto::STATE_FDS] = {fd->get()};
  set_state(MigrationState::exported);
  return send(proto::reply(id, cmd, proto::bytes_of(head)), why, fds);
}

bool Session::state_import(const Message& m, uint64_t bytes, std::string& why) {
  const auto cmd = proto::Command::state_import;
  auto image = read_image(m.fds[0].get(), bytes);
  if (!image) return refuse(m.header.id, cmd, proto::Refusal::bad_image, image.error().message, why);
  if (Status s = vgpu_->import_image(*image); !s)
    return refuse(m.header.id, cmd, proto::Refusal::bad_image, s.error().message, why);
  set_state(MigrationState::imported);
  weight_ = daemon_.host().weight(vgpu_->id());  // the source's, from the image
  daemon_.log(strfmt("vm %s: state imported (%llu bytes), weight %u", name_.c_str(),
                     static_cast<unsigned long long>(bytes), weight_));
  if (!send_layout_if_changed(why)) return false;
  return send(proto::reply(m.header.id, cmd), why);
}

// The source's QEMU says its migration completed (and, with QEMU's return
// path, that the destination loaded the state): nothing of this VM is
// needed here any more. Its vGPU is freed now rather than when its QEMU
// quits; the session stays until then, listed no more.
bool Session::migrated(uint16_t id, std::string& why) {
  const auto cmd = proto::Command::migrated;
  if (state_ != MigrationState::exported)
    return refuse(id, cmd, proto::Refusal::bad_state,
                  std::string("the VM is ") + migration_state_name(state_) +
                      ", not exported: only a source whose state went out is freed",
                  why);
  const uint64_t vram = vgpu_->config().vram_bytes;
  release_vgpu();
  migrated_ = true;
  set_state(MigrationState::migrated);
  daemon_.log(strfmt("vm %s: migrated: its vGPU is freed (VRAM %llu MiB)", name_.c_str(),
                     static_cast<unsigned long long>(vram / MiB)));
  return send(proto::reply(id, cmd), why);
}

// After MIGRATED: a thaw (the source's QEMU resumed after all) is refused
// by name, as the vGPU is gone; MIGRATED again is answered; anything else
// ends the connection.
bool Session::after_migration(const Message& m, std::string& why) {
  const auto cmd = static_cast<proto::Command>(m.header.command);
  if (cmd == proto::Command::migrated && m.payload.empty()) return send(proto::reply(m.header.id, cmd), why);
  if (cmd == proto::Command::thaw && m.payload.empty())
    return refuse(m.header.id, cmd, proto::Refusal::bad_state,
                  "the VM migrated away: its vGPU was freed when its migration completed", why);
  why = strfmt("command %u after the VM migrated away (its vGPU was freed)", m.header.command);
  return false;
}

}  // namespace vgpu::vgpud
