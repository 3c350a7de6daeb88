// SPDX-License-Identifier: GPL-2.0-or-later
#include "vgpud/protocol.h"

#include "common/text.h"
#include "vgpu/regs.h"

namespace vgpu::vgpud::proto {

const char* refusal_name(Refusal r) {
  switch (r) {
    case Refusal::none: return "none";
    case Refusal::vram_exhausted: return "VRAM exhausted";
    case Refusal::too_many_vms: return "too many VMs";
    case Refusal::bad_option: return "bad option";
    case Refusal::protocol: return "protocol error";
    case Refusal::internal: return "internal error";
    case Refusal::busy: return "busy";
    case Refusal::bad_state: return "bad state";
    case Refusal::bad_image: return "bad image";
  }
  return "unknown";
}

namespace {

// How a client may send a command: answered, posted (FLAG_NO_REPLY) or
// answered, or never (daemon to client, or not a command at all).
enum class FromClient { answered, posted_or_answered, never };

struct CommandInfo {
  const char* name;
  FromClient from_client;
};

// Each command's name and how a client may send it, side by side.
CommandInfo command_info(uint16_t command) {
  using enum FromClient;
  switch (static_cast<Command>(command)) {
    case Command::attach: return {"attach", answered};
    case Command::region_read: return {"region read", answered};
    case Command::region_write: return {"region write", posted_or_answered};  // the client's choice
    case Command::reset: return {"reset", answered};
    case Command::layout: return {"layout", never};
    case Command::freeze: return {"freeze", answered};
    case Command::thaw: return {"thaw", answered};
    case Command::dirty_log: return {"dirty log", answered};
    case Command::dirty_take: return {"dirty take", answered};
    case Command::state_export: return {"state export", answered};
    case Command::state_import: return {"state import", answered};
    case Command::migrated: return {"migrated", answered};
  }
  return {"command", never};
}

}  // namespace

const char* command_name(uint16_t command) { return command_info(command).name; }

std::vector<std::byte> message(const Header& h, std::span<const std::byte> payload) {
  Header out = h;
  out.size = static_cast<uint32_t>(sizeof(Header) + payload.size());
  std::vector<std::byte> m(out.size);
  std::memcpy(m.data(), &out, sizeof out);
  if (!payload.empty()) std::memcpy(m.data() + sizeof out, payload.data(), payload.size());
  return m;
}

std::vector<std::byte> read_request(uint16_t id, uint32_t region, uint64_t offset) {
  const RegionAccess a{offset, region, ACCESS_BYTES};
  return message(Header{.id = id, .command = static_cast<uint16_t>(Command::region_read)}, bytes_of(a));
}

bool write_is_posted(uint32_t region, uint64_t offset) {
  if (region != REGION_BAR0) return true;
  // The mediator's registers whose writes rebuild the BAR layout
  // (mediator/vgpu_regs.cc: set_pmc_enable's reset, set_bar_inst,
  // invalidate_tlb, set_userd_base, a CHAN_INST bind). The daemon logs an
  // internal error if a posted write ever moves the layout, so a register
  // added there and missed here shows (docs/vgpud.md).
  const auto o = static_cast<uint32_t>(offset);
  if (offset > UINT32_MAX) return true;
  return o != regs::pmc::ENABLE.offset && o != regs::pbus::BAR1_INST.offset && o != regs::pbus::BAR3_INST.offset &&
         o != regs::mmu::INVALIDATE.offset && o != regs::pfifo::USERD_BASE.offset &&
         !regs::pfifo::CHAN_INST.contains(o) && o != regs::pv::SLOT_BASE.offset && o != regs::pv::DOORBELL.offset;
}

std::vector<std::byte> write_request(uint16_t id, uint32_t region, uint64_t offset, uint32_t value) {
  struct {
    RegionAccess a;
    uint32_t value;
  } w{{offset, region, ACCESS_BYTES}, value};
  static_assert(sizeof w == 24);
  return message(Header{.id = id,
                        .command = static_cast<uint16_t>(Command::region_write),
                        .flags = write_is_posted(region, offset) ? FLAG_NO_REPLY : 0},
                 std::as_bytes(std::span(&w, 1)).first(sizeof(RegionAccess) + ACCESS_BYTES));
}

std::vector<std::byte> attach_request(uint16_t id, const AttachRequest& req) {
  return message(Header{.id = id, .command = static_cast<uint16_t>(Command::attach)}, bytes_of(req));
}

std::vector<std::byte> refusal(uint16_t id, Command c, Refusal why, const std::string& reason) {
  std::vector<std::byte> payload(sizeof(Hello) + reason.size());
  const Hello hello;
  std::memcpy(payload.data(), &hello, sizeof hello);
  if (!reason.empty()) std::memcpy(payload.data() + sizeof hello, reason.data(), reason.size());
  return message(Header{.id = id,
                        .command = static_cast<uint16_t>(c),
                        .flags = TYPE_REPLY | FLAG_ERROR,
                        .error = static_cast<uint32_t>(why)},
                 payload);
}

std::vector<std::byte> command(uint16_t id, Command c, std::span<const std::byte> payload) {
  return message(Header{.id = id, .command = static_cast<uint16_t>(c), .flags = TYPE_COMMAND}, payload);
}

std::vector<std::byte> reply(uint16_t id, Command c, std::span<const std::byte> payload) {
  return message(Header{.id = id, .command = static_cast<uint16_t>(c), .flags = TYPE_REPLY}, payload);
}

std::vector<std::byte> command_refusal(uint16_t id, Command c, Refusal why, const std::string& reason) {
  return message(Header{.id = id,
                        .command = static_cast<uint16_t>(c),
                        .flags = TYPE_REPLY | FLAG_ERROR,
                        .error = static_cast<uint32_t>(why)},
                 std::as_bytes(std::span(reason)));
}

std::vector<std::byte> attach_reply(uint16_t id, const AttachReply& reply) {
  struct {
    Hello hello;
    AttachReply reply;
  } r{{}, reply};
  static_assert(sizeof r == sizeof(Hello) + sizeof(AttachReply));
  return message(Header{.id = id, .command = static_cast<uint16_t>(Command::attach), .flags = TYPE_REPLY}, bytes_of(r));
}

std::vector<std::byte> layout_message(const LayoutHead& head, std::span<const LayoutRange> ranges) {
  std::vector<std::byte> payload(sizeof head + ranges.size_bytes());
  std::memcpy(payload.data(), &head, sizeof head);
  if (!ranges.empty()) std::memcpy(payload.data() + sizeof head, ranges.data(), ranges.size_bytes());
  return message(Header{.command = static_cast<uint16_t>(Command::layout), .flags = FLAG_NO_REPLY}, payload);
}

Status check_header(const Header& h) {
  if (h.size < sizeof(Header) || h.size > MAX_CLIENT_MESSAGE)
    return fail(Errc::invalid_argument,
                strfmt("message %u: size %u outside [%zu, %u]", h.id, h.size, sizeof(Header), MAX_CLIENT_MESSAGE));
  if (h.flags & ~FLAGS_KNOWN)
    return fail(Errc::invalid_argument, strfmt("message %u: unknown flags %#x", h.id, h.flags));
  if ((h.flags & FLAG_TYPE_MASK) != TYPE_COMMAND || (h.flags & FLAG_ERROR) || h.error != 0)
    return fail(Errc::invalid_argument,
                strfmt("message %u: not a command (flags %#x, error %u)", h.id, h.flags, h.error));
  switch (command_info(h.command).from_client) {
    case FromClient::answered:
      if (h.flags & FLAG_NO_REPLY)
        return fail(Errc::invalid_argument, strfmt("message %u: command %u must be answered", h.id, h.command));
      return {};
    case FromClient::posted_or_answered: return {};
    case FromClient::never: break;
  }
  return fail(Errc::invalid_argument, strfmt("message %u: unknown command %u", h.id, h.command));
}

bool plausible_attach_reply(const Header& h) {
  return h.command == static_cast<uint16_t>(Command::attach) && (h.flags & FLAG_TYPE_MASK) == TYPE_REPLY &&
         !(h.flags & ~FLAGS_KNOWN) && h.size >= sizeof(Header) + sizeof(Hello) && h.size <= MAX_CLIENT_MESSAGE + 4096;
}

Result<std::span<const std::byte>> check_hello(const Header& h, std::span<const std::byte> payload, uint16_t id) {
  if (!plausible_attach_reply(h) || h.id != id || payload.size() < sizeof(Hello))
    return fail(Errc::unsupported, "not an ATTACH reply");
  const auto hello = load<Hello>(payload);
  if (hello.magic != MAGIC) return fail(Errc::unsupported, strfmt("magic %#x, not %#x", hello.magic, MAGIC));
  if (hello.version != VERSION)
    return fail(Errc::invalid_argument,
                strfmt("it speaks protocol version %u, this client %u", hello.version, VERSION));
  return payload.subspan(sizeof(Hello));
}

Result<std::string> parse_name(const char (&name)[NAME_BYTES]) {
  std::string out;
  size_t i = 0;
  for (; i < NAME_BYTES && name[i]; ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return fail(Errc::invalid_argument, strfmt("name: character %#x is not one of [A-Za-z0-9._-]", c & 0xff));
    out.push_back(c);
  }
  if (i == NAME_BYTES) return fail(Errc::invalid_argument, strfmt("name: longer than %zu characters", NAME_BYTES - 1));
  for (; i < NAME_BYTES; ++i)
    if (name[i]) return fail(Errc::invalid_argument, "name: bytes after its end are not zero");
  if (out.empty()) return fail(Errc::invalid_argument, "name: empty");
  return out;
}

namespace {
// The payload as one T, or an error naming `what` when its size is not T's.
template <typename T>
Result<T> load_exact(std::span<const std::byte> payload, const char* what) {
  if (payload.size() != sizeof(T))
    return fail(Errc::invalid_argument, strfmt("%s: payload of %zu bytes, not %zu", what, payload.size(), sizeof(T)));
  return load<T>(payload);
}
}  // namespace

Result<AttachRequest> parse_attach(std::span<const std::byte> payload) {
  const auto req_or = load_exact<AttachRequest>(payload, "attach");
  if (!req_or) return std::unexpected(req_or.error());
  const auto req = *req_or;
  if (req.version != VERSION)
    return fail(Errc::invalid_argument,
                strfmt("attach: protocol version %u, this daemon speaks %u", req.version, VERSION));
  if (req.options & ~OPTS_KNOWN)
    return fail(Errc::invalid_argument, strfmt("attach: unknown options %#x", req.options));
  if (auto n = parse_name(req.name); !n) return std::unexpected(n.error().context("attach"));
  return req;
}

Result<Access> parse_access(std::span<const std::byte> payload, bool write, const uint64_t (&bar_sizes)[NUM_REGIONS]) {
  const size_t want = sizeof(RegionAccess) + (write ? ACCESS_BYTES : 0);
  if (payload.size() != want)
    return fail(Errc::invalid_argument, strfmt("region access: payload of %zu bytes, not %zu", payload.size(), want));
  const auto a = load<RegionAccess>(payload);
  if (a.count != ACCESS_BYTES) return fail(Errc::invalid_argument, strfmt("region access: count %u, not 4", a.count));
  if (a.region >= NUM_REGIONS || bar_sizes[a.region] == 0)
    return fail(Errc::invalid_argument, strfmt("region access: no region %u", a.region));
  const uint64_t size = bar_sizes[a.region];
  if (a.offset % ACCESS_BYTES || a.offset > size - ACCESS_BYTES)
    return fail(Errc::invalid_argument,
                strfmt("region access: offset %s of region %u is unaligned or outside its %s bytes",
                       hex(a.offset).c_str(), a.region, hex(size).c_str()));
  Access out{a.region, a.offset, 0};
  if (write) out.value = load<uint32_t>(payload, sizeof(RegionAccess));
  return out;
}

Result<uint32_t> parse_freeze(std::span<const std::byte> payload) {
  const auto r_or = load_exact<FreezeRequest>(payload, "freeze");
  if (!r_or) return std::unexpected(r_or.error());
  const auto r = *r_or;
  if (r.timeout_ms == 0 || r.timeout_ms > MAX_FREEZE_MS || r.reserved != 0)
    return fail(Errc::invalid_argument, strfmt("freeze: timeout %u ms outside [1, %u] or reserved %u not zero",
                                               r.timeout_ms, MAX_FREEZE_MS, r.reserved));
  return r.timeout_ms;
}

Result<bool> parse_dirty_log(std::span<const std::byte> payload) {
  const auto r_or = load_exact<DirtyLogRequest>(payload, "dirty log");
  if (!r_or) return std::unexpected(r_or.error());
  const auto r = *r_or;
  if (r.on > 1 || r.reserved != 0)
    return fail(Errc::invalid_argument,
                strfmt("dirty log: on %u is not 0 or 1, or reserved %u not zero", r.on, r.reserved));
  return r.on == 1;
}

Result<uint64_t> parse_state_image(std::span<const std::byte> payload) {
  const auto r_or = load_exact<StateImage>(payload, "state image");
  if (!r_or) return std::unexpected(r_or.error());
  const auto r = *r_or;
  if (r.bytes == 0 || r.bytes > MAX_IMAGE_BYTES)
    return fail(Errc::invalid_argument,
                strfmt("state image: %llu bytes outside [1, %llu]", static_cast<unsigned long long>(r.bytes),
                       static_cast<unsigned long long>(MAX_IMAGE_BYTES)));
  return r.bytes;
}

Status parse_empty(std::span<const std::byte> payload, Command c) {
  if (!payload.empty())
    return fail(Errc::invalid_argument, strfmt("command %u: a payload of %zu bytes where none belongs",
                                               static_cast<unsigned>(c), payload.size()));
  return {};
}

}  // namespace vgpu::vgpud::proto
