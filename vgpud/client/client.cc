// SPDX-License-Identifier: GPL-2.0-or-later
#include "vgpud/client/client.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>

#include "common/text.h"

namespace vgpu::vgpud {

namespace {

std::unexpected<AttachError> no_vgpud(std::string message) {
  return std::unexpected(AttachError{proto::Refusal::none, std::move(message)});
}

}  // namespace

std::expected<std::unique_ptr<Client>, AttachError> Client::attach(const std::string& socket, const AttachOptions& o) {
  uint32_t timeout_ms = 0;
  if (o.timeout_ms) {
    timeout_ms = *o.timeout_ms;
  } else {
    auto env = timeout_from_env();
    if (!env) return no_vgpud(env.error().message);
    timeout_ms = *env;
  }
  auto fd = connect_unix(socket, static_cast<int>(timeout_ms));
  if (!fd) return no_vgpud(fd.error().message);
  std::unique_ptr<Client> c(new Client());
  c->fd_ = std::move(*fd);
  proto::AttachRequest req;
  req.vram_bytes = o.vram_bytes;
  req.channels = o.channels;
  req.weight = o.weight;
  req.options = (o.bar_remap ? proto::OPT_BAR_REMAP : 0) | (o.lazy_shadow ? proto::OPT_LAZY_SHADOW : 0) |
                (o.pv ? proto::OPT_PV : 0) | (o.incoming ? proto::OPT_INCOMING : 0);
  std::strncpy(req.name, o.name.c_str(), proto::NAME_BYTES - 1);
  const uint16_t id = c->next_id_++;
  if (!c->send(proto::attach_request(id, req))) return no_vgpud(socket + " closed the connection without answering");
  // The first answer, bounded in time and size: whoever listens there
  // must answer as vgpud, with our magic, soon.
  set_recv_timeout(c->fd_.get(), timeout_ms);
  auto r = recv_message(c->fd_.get(), proto::MAX_CLIENT_MESSAGE + 4096, true);
  if (!r) {
    switch (r.error().end) {
      case RecvEnd::timeout: return no_vgpud(no_answer(socket, timeout_ms));
      case RecvEnd::closed: return no_vgpud(socket + " closed the connection without answering");
      case RecvEnd::truncated:
      case RecvEnd::oversized: return no_vgpud(not_vgpud(socket));
      case RecvEnd::io: return no_vgpud(socket + ": " + r.error().what);
    }
  }
  auto rest = proto::check_hello(r->header, r->payload, id);
  if (!rest && rest.error().code == Errc::unsupported) return no_vgpud(not_vgpud(socket));
  if (!rest) return no_vgpud("vgpud at " + socket + ": " + rest.error().message);
  set_recv_timeout(c->fd_.get(), 0);
  if (r->header.flags & proto::FLAG_ERROR)
    return std::unexpected(AttachError{static_cast<proto::Refusal>(r->header.error),
                                       std::string(reinterpret_cast<const char*>(rest->data()), rest->size())});
  if (rest->size() != sizeof(proto::AttachReply) || r->fds.size() != proto::ATTACH_FDS)
    return std::unexpected(AttachError{proto::Refusal::protocol, "malformed attach reply"});
  c->reply_ = proto::load<proto::AttachReply>(*rest);
  c->vram_fd_ = std::move(r->fds[0]);
  c->irq_fd_ = std::move(r->fds[1]);
  c->status_fd_ = std::move(r->fds[2]);
  void* page = mmap(nullptr, proto::IRQ_STATUS_BYTES, PROT_READ, MAP_SHARED, c->status_fd_.get(), 0);
  if (page == MAP_FAILED) return std::unexpected(AttachError{proto::Refusal::internal, "cannot map the status page"});
  c->status_ = static_cast<proto::IrqStatus*>(page);
  c->poll();  // the initial layouts
  return c;
}

Client::~Client() {
  if (status_) munmap(status_, proto::IRQ_STATUS_BYTES);
}

void Client::lose(const std::string& why) {
  if (!lost_) lost_reason_ = why;
  lost_ = true;
}

bool Client::send(const std::vector<std::byte>& m, std::span<const int> fds) {
  if (lost_) return false;
  if (Status s = send_all(fd_.get(), m, fds); !s) {
    lose(s.error().message);
    return false;
  }
  return true;
}

uint64_t Client::bar_size(uint32_t region) const {
  switch (region) {
    case proto::REGION_BAR1: return reply_.bar1_size;
    case proto::REGION_BAR3: return reply_.bar3_size;
    default: return 0;
  }
}

const std::vector<proto::LayoutRange>& Client::layout(uint32_t region) const {
  return region == proto::REGION_BAR1 ? bar1_ : bar3_;
}

void Client::apply_layout(const Message& m) {
  if (m.payload.size() < sizeof(proto::LayoutHead)) return lose("short layout message");
  const auto head = proto::load<proto::LayoutHead>(m.payload);
  if (m.payload.size() != sizeof head + uint64_t{head.count} * sizeof(proto::LayoutRange))
    return lose("layout message of the wrong size");
  std::vector<proto::LayoutRange> ranges(head.count);
  if (head.count) std::memcpy(ranges.data(), m.payload.data() + sizeof head, head.count * sizeof(proto::LayoutRange));
  (head.region == proto::REGION_BAR1 ? bar1_ : bar3_) = std::move(ranges);
  generation_ = head.generation;
}

std::optional<Message> Client::wait_reply(uint16_t id) {
  while (!lost_) {
    // Kept: STATE_EXPORT's reply carries the image's memfd.
    auto m = recv_message(fd_.get(), proto::MAX_DAEMON_MESSAGE, true);
    if (!m) {
      lose(m.error().what);
      break;
    }
    if (m->header.command == static_cast<uint16_t>(proto::Command::layout)) {
      apply_layout(*m);
      continue;
    }
    if ((m->header.flags & proto::FLAG_TYPE_MASK) == proto::TYPE_REPLY && m->header.id == id) return std::move(*m);
    lose(strfmt("unexpected message %u (command %u)", m->header.id, m->header.command));
  }
  return std::nullopt;
}

void Client::poll() {
  while (!lost_) {
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return;
    if (p.revents & (POLLHUP | POLLERR) && !(p.revents & POLLIN)) return lose("daemon hung up");
    auto m = recv_message(fd_.get(), proto::MAX_DAEMON_MESSAGE, false);
    if (!m) return lose(m.error().what);
    if (m->header.command != static_cast<uint16_t>(proto::Command::layout))
      return lose(strfmt("unexpected message %u (command %u)", m->header.id, m->header.command));
    apply_layout(*m);
  }
}

uint32_t Client::read32(uint32_t region, uint64_t offset) {
  const uint16_t id = next_id_++;
  if (!send(proto::read_request(id, region, offset))) return ~uint32_t{0};
  ++round_trips_;
  auto r = wait_reply(id);
  if (!r) return ~uint32_t{0};
  if (r->payload.size() != sizeof(proto::RegionAccess) + proto::ACCESS_BYTES) {
    lose("malformed read reply");
    return ~uint32_t{0};
  }
  return proto::load<uint32_t>(r->payload, sizeof(proto::RegionAccess));
}

void Client::write32(uint32_t region, uint64_t offset, uint32_t value) {
  const uint16_t id = next_id_++;
  if (!send(proto::write_request(id, region, offset, value))) return;
  if (!proto::write_is_posted(region, offset)) {
    ++round_trips_;
    (void)wait_reply(id);  // and the layouts it caused
    return;
  }
  ++posted_;
  // Layouts the daemon sends after posted writes must not pile up unread
  // in a run of writes (the daemon gives up on a client that stops
  // reading).
  if (posted_ % 32 == 0) poll();
}

void Client::reset() {
  const uint16_t id = next_id_++;
  if (!send(proto::message(proto::Header{.id = id, .command = static_cast<uint16_t>(proto::Command::reset)}, {})))
    return;
  ++round_trips_;
  (void)wait_reply(id);
}

}  // namespace vgpu::vgpud
