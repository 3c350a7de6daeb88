// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target `wire` (docs/fuzzing.md): vgpud's wire protocol as one
// client's byte stream, into a real Session (vgpud/session.h) over a
// socket pair, on the guest-program harness's host, where a victim VM
// runs a fill during every input and its results and memory are checked
// after it (mediator/fuzz/guest_fixture.h). The input is a sequence of
// operations: a structured message (ATTACH with fields from the input,
// REGION_READ/WRITE of a register-header offset, RESET, a migration
// command (FREEZE with any timeout, THAW, DIRTY_LOG on/off/bad,
// DIRTY_TAKE, STATE_EXPORT, STATE_IMPORT with a memfd of input bytes,
// none or one that says more than it holds), or any header)
// with the right or a wrong id, size and flags; raw bytes; a cut of the
// stream (the client's side shut for writing) anywhere, messages
// included. What must hold: the session ends (its thread returns once the
// client is gone), the daemon side never crashes or leaks, and the victim
// is untouched.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include <sys/mman.h>

#include "mediator/fuzz/guest_fixture.h"
#include "vgpud/protocol.h"
#include "vgpud/session.h"

namespace {

using namespace vgpu;
using namespace vgpu::vgpud;
using vgpu::fuzz::Input;

constexpr uint32_t MAX_WIRE_OPS = 64;
constexpr uint32_t SESSION_END_SPINS = 20'000;  // of 100 us: 2 s

class FuzzDaemon final : public SessionHost {
 public:
  mediator::Host& host() override { return fuzz::Fixture::get().host(); }
  uint32_t slice_blocks() const override { return 0; }
  std::expected<void, std::pair<proto::Refusal, std::string>> admit(const std::string& name, bool) override {
    if (!name_.empty()) return std::unexpected(std::pair{proto::Refusal::too_many_vms, std::string("one VM")});
    name_ = name;
    return {};
  }
  void release(const std::string&) override { name_.clear(); }
  void log(const std::string&) override {}
  void session_ended() override {}

 private:
  std::string name_;
};

void send_bytes(int fd, std::span<const std::byte> b) {
  size_t at = 0;
  while (at < b.size()) {
    const ssize_t n = send(fd, b.data() + at, b.size() - at, MSG_NOSIGNAL);
    if (n <= 0) return;  // the session closed: what is left goes nowhere
    at += static_cast<size_t>(n);
  }
}

constexpr uint32_t MAX_FUZZ_IMAGE = 4096;  // bytes of input in one STATE_IMPORT memfd

// A message, and the descriptor that goes with it (STATE_IMPORT's memfd).
struct Outgoing {
  std::vector<std::byte> bytes;
  UniqueFd fd;
};

// A memfd of input bytes (an image the decoder refuses or, rarely, takes).
UniqueFd image_fd(Input& in) {
  UniqueFd fd(memfd_create("wire-fuzz-image", MFD_CLOEXEC));
  std::vector<uint8_t> bytes(in.u16() % MAX_FUZZ_IMAGE);
  for (auto& b : bytes) b = in.u8();
  if (fd && !bytes.empty()) (void)!write(fd.get(), bytes.data(), bytes.size());
  return fd;
}

Outgoing migration_command(Input& in, uint16_t id) {
  const uint8_t k = in.u8();
  switch (k % 6) {
    case 0: {
      const proto::FreezeRequest r{k & 0x80 ? in.u32() : 1u + in.u8() % 50, k & 0x40 ? in.u32() : 0};
      return {proto::command(id, proto::Command::freeze, proto::bytes_of(r)), {}};
    }
    case 1: return {proto::command(id, proto::Command::thaw), {}};
    case 2: {
      const proto::DirtyLogRequest r{in.u8() % 3u, 0};
      return {proto::command(id, proto::Command::dirty_log, proto::bytes_of(r)), {}};
    }
    case 3: return {proto::command(id, k & 0x80 ? proto::Command::migrated : proto::Command::dirty_take), {}};
    case 4: return {proto::command(id, proto::Command::state_export), {}};
    default: {
      UniqueFd fd = k & 0x80 ? UniqueFd() : image_fd(in);
      const uint64_t declared = k & 0x40 ? in.u64() : (fd ? static_cast<uint64_t>(lseek(fd.get(), 0, SEEK_END)) : 1);
      const proto::StateImage r{declared};
      return {proto::command(id, proto::Command::state_import, proto::bytes_of(r)), std::move(fd)};
    }
  }
}

Outgoing structured(Input& in, uint16_t& id) {
  const uint8_t sel = in.u8();
  const uint16_t this_id = sel & 0x80 ? in.u16() : id;
  id = static_cast<uint16_t>(this_id + 1);
  switch (sel % 6) {
    case 0: {
      proto::AttachRequest r;
      const uint8_t f = in.u8();
      r.version = f & 1 ? in.u32() : proto::VERSION;
      r.channels = f & 2 ? in.u32() : 1 + in.u8() % 8;
      r.vram_bytes = f & 4 ? in.u64() : static_cast<uint64_t>(in.u8() % 3) * 64 * MiB;
      r.weight = in.u8();
      r.options = f & 8 ? in.u32() : in.u8() & proto::OPTS_KNOWN;
      const size_t len = f & 16 ? in.u8() % proto::NAME_BYTES : 1 + in.u8() % 8;
      for (size_t i = 0; i < len && i < proto::NAME_BYTES; ++i)
        r.name[i] = static_cast<char>(f & 32 ? in.u8() : 'a' + i);
      return {proto::attach_request(this_id, r), {}};
    }
    case 1:
    case 2: {
      const uint8_t region = in.u8();
      const uint32_t reg = region % 4;
      uint64_t offset = 0;
      if (reg == proto::REGION_BAR0 && !(region & 0x80)) {
        const uint8_t row = in.u8();
        offset = fuzz::register_offset(row, in.u8());
      } else {
        offset = in.u32() & ~3u;
      }
      if (sel % 6 == 1) return {proto::read_request(this_id, reg, offset), {}};
      return {proto::write_request(this_id, reg, offset, in.u32()), {}};
    }
    case 3:
      return {proto::message(proto::Header{.id = this_id, .command = static_cast<uint16_t>(proto::Command::reset)}, {}),
              {}};
    case 4: return migration_command(in, this_id);
    default: {
      proto::Header h{.id = this_id, .command = in.u16(), .size = 0, .flags = in.u8(), .error = in.u32()};
      std::vector<std::byte> payload(in.u8() % 64);
      for (auto& b : payload) b = std::byte{in.u8()};
      auto m = proto::message(h, payload);
      if (in.u8() & 1) {  // a size that lies
        const uint32_t size = in.u32();
        std::memcpy(m.data() + offsetof(proto::Header, size), &size, sizeof size);
      }
      return {std::move(m), {}};
    }
  }
}

void run(Input& in) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) fuzz::finding("socketpair failed");
  static FuzzDaemon daemon;
  auto session = std::make_unique<Session>(daemon, UniqueFd(sv[1]), PeerCred{});
  session->start();
  // Replies (and the ATTACH's descriptors, closed unread) drained on their
  // own thread, so that the session never waits on a full socket; it ends
  // when the session's side is closed.
  std::thread drain([fd = sv[0]] {
    char buf[65536];
    while (recv(fd, buf, sizeof buf, 0) > 0) {
    }
  });
  uint16_t id = 0;
  for (uint32_t i = 0; i < MAX_WIRE_OPS && !in.empty(); ++i) {
    const uint8_t op = in.u8();
    if (op % 8 == 7) break;  // the stream is cut here
    if (op % 8 == 6) {       // raw bytes, a message cut anywhere
      std::vector<std::byte> raw(in.u8() % 96);
      for (auto& b : raw) b = std::byte{in.u8()};
      send_bytes(sv[0], raw);
      continue;
    }
    Outgoing m = structured(in, id);
    if (op & 0x80) m.bytes.resize(in.u8() % (m.bytes.size() + 1));  // cut inside the message, then more follows
    if (m.fd && !m.bytes.empty()) {
      const int fds[1] = {m.fd.get()};
      (void)send_all(sv[0], m.bytes, fds);  // the session may be gone: what is left goes nowhere
    } else {
      send_bytes(sv[0], m.bytes);
    }
  }
  shutdown(sv[0], SHUT_WR);
  // The client is gone: the session must see it and end by itself.
  for (uint32_t spins = 0; !session->done() && spins < SESSION_END_SPINS; ++spins)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  if (!session->done()) fuzz::finding("the session did not end after its client closed");
  session.reset();
  drain.join();
  close(sv[0]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Fixture& f = fuzz::Fixture::get();
  Input in(data, size);
  f.victim_begin();
  run(in);
  f.victim_end();
  return 0;
}
