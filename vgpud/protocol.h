// SPDX-License-Identifier: GPL-2.0-or-later
// The vgpud wire protocol (docs/vgpud.md): how one QEMU (or a test client)
// talks to the host daemon over a Unix stream socket. The shapes follow
// vfio-user's so that a later move is mechanical: the same 16-byte header
// (message id, command, size, flags, error), the same command numbers for
// the same jobs (VERSION 1, REGION_READ 9, REGION_WRITE 10, DEVICE_RESET
// 13) and the same REGION_READ/WRITE payload (offset, region, count,
// data). What vfio-user cannot say is ours, numbered from 0x100: a BAR
// layout that changes at run time (LAYOUT, daemon to client).
//
// Rules: a client's first message is ATTACH; message ids go up by one
// (mod 2^16) per message from the client; a reply carries the id of its
// command. Reads are answered. Writes that cannot change the BAR layout
// (write_is_posted) carry NO_REPLY: no round trip; any other write is
// answered once done, after the LAYOUT messages it caused, so that the
// client's direct mappings follow the mediator's before the guest's next
// access, as the embedded device's do. Anything
// else (a bad header, size or region, an unknown command, a message out of
// order) ends the connection. Every check is here, in one place:
// check_header and the parse_* functions.
#pragma once

#include <cstdint>
#include <cstring>
#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "vgpu/bits.h"
#include "vgpu/regs.h"

namespace vgpu::vgpud::proto {

// Version 2: every reply to ATTACH begins with a Hello, so that a client
// can tell vgpud from any other program listening on a socket.
// Version 3: the migration commands (0x101-0x106, docs/migration.md §7);
// a version 2 daemon would end the connection at the first of them, so a
// client of either version is refused at ATTACH by the other.
// Version 4: OPT_INCOMING (a migration's destination may share its
// source's name) and MIGRATED 0x107 (the source's move completed: its vGPU
// is freed).
inline constexpr uint32_t VERSION = 4;
inline constexpr uint32_t MAGIC = 0x64706776;  // "vgpd", little-endian

// The start of every ATTACH reply's payload (accepted or refused).
struct Hello {
  uint32_t magic = MAGIC;
  uint32_t version = VERSION;
};
static_assert(sizeof(Hello) == 8);

// The control socket (vgpuctl; vgpud/control.cc) speaks text: one request
// line, then the answer, whose first line is CONTROL_HELLO, a space and
// CONTROL_VERSION, so that vgpuctl can tell vgpud from another program.
inline constexpr const char* CONTROL_HELLO = "vgpud-control";
inline constexpr uint32_t CONTROL_VERSION = 1;

// vfio-user's header: 16 bytes, little-endian.
struct Header {
  uint16_t id = 0;  // the client's message number; replies echo it
  uint16_t command = 0;
  uint32_t size = 0;  // the whole message, header included
  uint32_t flags = 0;
  uint32_t error = 0;  // a reply with FLAG_ERROR: a Refusal
};
static_assert(sizeof(Header) == 16);

inline constexpr uint32_t FLAG_TYPE_MASK = 0xf;  // vfio-user's message type
inline constexpr uint32_t TYPE_COMMAND = 0;
inline constexpr uint32_t TYPE_REPLY = 1;
inline constexpr uint32_t FLAG_NO_REPLY = 1u << 4;
inline constexpr uint32_t FLAG_ERROR = 1u << 5;
inline constexpr uint32_t FLAGS_KNOWN = FLAG_TYPE_MASK | FLAG_NO_REPLY | FLAG_ERROR;

enum class Command : uint16_t {
  attach = 1,         // vfio-user VERSION: announce the VM, get its vGPU
  region_read = 9,    // a trapped read: answered
  region_write = 10,  // a trapped write: posted (FLAG_NO_REPLY) or answered
  reset = 13,         // a device reset (guest reboot): answered
  layout = 0x100,     // daemon to client: a BAR's new layout
  // Live migration (docs/migration.md §7), each answered; a refusal is a
  // reply with FLAG_ERROR, its Refusal in `error` and the reason as text.
  freeze = 0x101,        // FreezeRequest -> ok, or busy / bad_state
  thaw = 0x102,          // -> ok (a vGPU not frozen: nothing happens)
  dirty_log = 0x103,     // DirtyLogRequest: start (on) or stop the VRAM dirty log -> ok
  dirty_take = 0x104,    // -> DirtyTakeReply, then the bitmap words
  state_export = 0x105,  // -> StateImage, with a sealed memfd holding the image; or bad_state
  state_import = 0x106,  // StateImage, with a memfd holding the image -> ok, or bad_image
  // The source's QEMU: its migration completed and the destination loaded
  // the state (QEMU's return path) -> ok, the vGPU freed; or bad_state
  // (not exported). Afterwards THAW is refused (bad_state) and any other
  // command ends the connection.
  migrated = 0x107,
};
inline constexpr uint16_t FIRST_MIGRATION_COMMAND = 0x101;
inline constexpr uint16_t LAST_MIGRATION_COMMAND = 0x107;

// Regions are PCI BAR indexes (vfio-user's region index).
inline constexpr uint32_t REGION_BAR0 = 0;
inline constexpr uint32_t REGION_BAR1 = 1;
inline constexpr uint32_t REGION_BAR3 = 3;

// The largest message a client may send (ATTACH is the largest), and the
// largest the daemon sends (a layout of a fragmented BAR1).
inline constexpr uint32_t MAX_CLIENT_MESSAGE = 256;
inline constexpr uint32_t MAX_DAEMON_MESSAGE = 4u << 20;

// Why an ATTACH was refused (the reply's error field; its payload is a
// Hello and the reason as text).
enum class Refusal : uint32_t {
  none = 0,
  vram_exhausted = 1,
  too_many_vms = 2,
  bad_option = 3,
  protocol = 4,
  internal = 5,
  busy = 6,       // freeze: a channel did not reach a boundary in time (the vGPU runs on)
  bad_state = 7,  // export: a state the image cannot carry (the vGPU runs on), or not frozen
  bad_image = 8,  // import: the image was refused (the codec's message)
};
const char* refusal_name(Refusal r);
// A command's name for messages ("freeze"); "command" for one not known.
const char* command_name(uint16_t command);

// ---- ATTACH
inline constexpr uint32_t OPT_BAR_REMAP = 1u << 0;
inline constexpr uint32_t OPT_LAZY_SHADOW = 1u << 1;
inline constexpr uint32_t OPT_PV = 1u << 2;  // offer the paravirtual interface (spec §17)
// A migration's destination (QEMU -incoming): it may take the name of a VM
// attached to this daemon, its source, which keeps it until it is freed
// (MIGRATED or its disconnect); docs/migration.md §7.
inline constexpr uint32_t OPT_INCOMING = 1u << 3;
inline constexpr uint32_t OPTS_KNOWN = OPT_BAR_REMAP | OPT_LAZY_SHADOW | OPT_PV | OPT_INCOMING;
inline constexpr size_t NAME_BYTES = 32;  // NUL-padded; [A-Za-z0-9._-], 1..31 characters

struct AttachRequest {
  uint32_t version = VERSION;
  uint32_t channels = 0;
  uint64_t vram_bytes = 0;
  uint32_t weight = 0;
  uint32_t options = 0;
  char name[NAME_BYTES] = {};
};
static_assert(sizeof(AttachRequest) == 56);

// The reply (after its Hello) comes with three file descriptors (SCM_RIGHTS), in this order:
// the VM's VRAM (a sealed memfd of vram_bytes; offset 0 is guest VRAM 0),
// the interrupt eventfd, and the interrupt status page (IrqStatus).
// `scheduler` names the daemon's policy, for the client's effective
// settings (QEMU's qom-get scheduler, its warning when it asked for
// another): an index into SCHEDULERS plus one; 0, as an older daemon
// sends, says nothing.
inline constexpr std::array<std::string_view, 3> SCHEDULERS{"fifo", "credit", "band"};
inline constexpr uint32_t scheduler_code(std::string_view name) {
  for (size_t i = 0; i < SCHEDULERS.size(); ++i)
    if (SCHEDULERS[i] == name) return static_cast<uint32_t>(i + 1);
  return 0;
}
inline constexpr std::string_view scheduler_of(uint32_t code) {
  return code >= 1 && code <= SCHEDULERS.size() ? SCHEDULERS[code - 1] : std::string_view{};
}
struct AttachReply {
  uint32_t vm_id = 0;
  uint32_t scheduler = 0;
  uint64_t vram_bytes = 0;
  uint64_t bar1_size = 0;
  uint64_t bar3_size = 0;
};
static_assert(sizeof(AttachReply) == 32);
inline constexpr size_t ATTACH_FDS = 3;

// The interrupt status page, shared: the daemon stores the line's level,
// counts its rising edges and the vGPU's interrupt messages per vector
// (spec §11.6), then signals the eventfd. The client reads it when the
// eventfd fires: INTx follows `level`; a changed `messages` count is an
// MSI message on that vector (several between two looks coalesce into one,
// as a waiter only needs to know that one came).
struct IrqStatus {
  uint32_t level;
  uint32_t reserved;
  uint64_t edges;
  uint64_t messages[regs::pci::MSI_VECTORS];
};
static_assert(sizeof(IrqStatus) == 16 + 8 * regs::pci::MSI_VECTORS);
inline constexpr size_t IRQ_STATUS_BYTES = 4096;

// ---- REGION_READ / REGION_WRITE (vfio-user's payload); 4-byte accesses only.
struct RegionAccess {
  uint64_t offset = 0;
  uint32_t region = 0;
  uint32_t count = 0;  // bytes of data: 4
};
static_assert(sizeof(RegionAccess) == 16);
inline constexpr uint32_t ACCESS_BYTES = 4;

// Whether a write is posted: every write but those to the BAR0 registers
// that can move the BAR layout (PMC.ENABLE, the BAR1/BAR3 instances,
// MMU.INVALIDATE, PFIFO.USERD_BASE, CHAN_INST) and the PV registers
// (SLOT_BASE, DOORBELL: a batch changes BAR tables, and its results must
// be in the slot when the write returns, spec §17). BAR1/BAR3 writes
// (page-table and USERD words, doorbells) and PRAMIN only mark guest
// memory dirty.
bool write_is_posted(uint32_t region, uint64_t offset);

// ---- LAYOUT (daemon to client, FLAG_NO_REPLY): ranges sorted, covering the BAR.
struct LayoutHead {
  uint64_t generation = 0;
  uint32_t region = 0;
  uint32_t count = 0;
};
struct LayoutRange {
  uint64_t bar_offset = 0;
  uint64_t vram_offset = 0;  // in the VM's VRAM fd (direct ranges)
  uint64_t size = 0;
  uint32_t trapped = 0;
  uint32_t reserved = 0;
};
static_assert(sizeof(LayoutHead) == 16 && sizeof(LayoutRange) == 32);

// ---- migration (docs/migration.md §7)
// The longest freeze a client may ask for, and the largest image either
// side moves (a memfd; the daemon reads no more than this from it).
inline constexpr uint32_t MAX_FREEZE_MS = 60'000;
inline constexpr uint64_t MAX_IMAGE_BYTES = 256 * MiB;
struct FreezeRequest {
  uint32_t timeout_ms = 0;  // 1..MAX_FREEZE_MS
  uint32_t reserved = 0;
};
struct DirtyLogRequest {
  uint32_t on = 0;  // 0 or 1
  uint32_t reserved = 0;
};
// The reply to DIRTY_TAKE: pages marked, then `words` 64-bit words, bit i
// of word w = VM VRAM page 64 w + i (VGPU_DIRTY_PAGE_BYTES pages), each
// mark taken (cleared) by this reply.
struct DirtyTakeReply {
  uint64_t pages = 0;
  uint64_t words = 0;
};
// STATE_EXPORT's reply and STATE_IMPORT's request: the image's size; the
// image is the memfd's first `bytes` bytes.
struct StateImage {
  uint64_t bytes = 0;
};
static_assert(sizeof(FreezeRequest) == 8 && sizeof(DirtyLogRequest) == 8 && sizeof(DirtyTakeReply) == 16 &&
              sizeof(StateImage) == 8);
inline constexpr size_t STATE_FDS = 1;

// ---- building messages
std::vector<std::byte> message(const Header& h, std::span<const std::byte> payload);
template <typename T>
std::span<const std::byte> bytes_of(const T& v) {
  return std::as_bytes(std::span(&v, 1));
}
std::vector<std::byte> read_request(uint16_t id, uint32_t region, uint64_t offset);
// Posted or answered as write_is_posted says.
std::vector<std::byte> write_request(uint16_t id, uint32_t region, uint64_t offset, uint32_t value);
std::vector<std::byte> attach_request(uint16_t id, const AttachRequest& req);
// An ATTACH refused: a Hello, then the reason.
std::vector<std::byte> refusal(uint16_t id, Command c, Refusal why, const std::string& reason);
// An ATTACH accepted: a Hello, then the reply.
std::vector<std::byte> attach_reply(uint16_t id, const AttachReply& reply);
std::vector<std::byte> layout_message(const LayoutHead& head, std::span<const LayoutRange> ranges);
// A command with a payload, answered (migration commands).
std::vector<std::byte> command(uint16_t id, Command c, std::span<const std::byte> payload = {});
// A reply to command `c`: done, or refused (FLAG_ERROR, the reason as text).
std::vector<std::byte> reply(uint16_t id, Command c, std::span<const std::byte> payload = {});
std::vector<std::byte> command_refusal(uint16_t id, Command c, Refusal why, const std::string& reason);

// ---- checking what a client sent (the daemon's side)
// The header alone: size in [16, MAX_CLIENT_MESSAGE], a command message
// with known flags. The payload is checked by the parse_* functions.
[[nodiscard]] Status check_header(const Header& h);
[[nodiscard]] Result<AttachRequest> parse_attach(std::span<const std::byte> payload);
// A region access of 4 bytes, aligned, inside its BAR (bar_sizes is
// indexed by region; 0: no such region); a write carries its 4 data bytes.
struct Access {
  uint32_t region;
  uint64_t offset;
  uint32_t value;  // writes
};
inline constexpr size_t NUM_REGIONS = 4;
[[nodiscard]] Result<Access> parse_access(std::span<const std::byte> payload, bool write,
                                          const uint64_t (&bar_sizes)[NUM_REGIONS]);
// Migration payloads. A wrong size or value ends the connection, as any
// malformed message does; what the vGPU refuses is a refusal reply.
[[nodiscard]] Result<uint32_t> parse_freeze(std::span<const std::byte> payload);  // the timeout, ms
[[nodiscard]] Result<bool> parse_dirty_log(std::span<const std::byte> payload);
[[nodiscard]] Result<uint64_t> parse_state_image(std::span<const std::byte> payload);  // bytes
// THAW, DIRTY_TAKE and STATE_EXPORT carry nothing.
[[nodiscard]] Status parse_empty(std::span<const std::byte> payload, Command c);
// Whether a client's command may carry descriptors (STATE_IMPORT: one).
inline constexpr size_t fds_allowed(uint16_t command) {
  return command == static_cast<uint16_t>(Command::state_import) ? STATE_FDS : 0;
}
// ---- checking the daemon's first reply (the client's side)
// A reply to ATTACH `id` that begins with our Hello: the rest of its
// payload. Errors: Errc::unsupported when the peer is not vgpud at all
// (not a reply, another command, no magic); Errc::invalid_argument when it
// is vgpud of another protocol version (the message says which).
[[nodiscard]] Result<std::span<const std::byte>> check_hello(const Header& h, std::span<const std::byte> payload,
                                                             uint16_t id);
// A header that could start a reply to ATTACH (before reading its payload).
bool plausible_attach_reply(const Header& h);

// A VM's name as the daemon accepts it.
[[nodiscard]] Result<std::string> parse_name(const char (&name)[NAME_BYTES]);

template <typename T>
T load(std::span<const std::byte> b, size_t at = 0) {
  T v{};
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

}  // namespace vgpu::vgpud::proto
