// SPDX-License-Identifier: GPL-2.0-or-later
// Unix-socket plumbing shared by the daemon, vgpuctl and the client
// library: whole messages in and out (with file descriptors as
// SCM_RIGHTS), the peer's credentials, and listening sockets with the
// daemon's permission rules.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "vgpud/protocol.h"

namespace vgpu::vgpud {

// Owns one file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1);
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

struct Message {
  proto::Header header;
  std::vector<std::byte> payload;
  std::vector<UniqueFd> fds;  // passed with it (SCM_RIGHTS)
};

// How a receive ended when it gave no message.
enum class RecvEnd { closed, truncated, oversized, timeout, io };
struct RecvError {
  RecvEnd end;
  std::string what;
};

// One whole message, or why there is none: the peer closed between
// messages (closed), in the middle of one (truncated), announced more than
// max_size or less than a header (oversized), or the socket failed.
// Descriptors are kept only when keep_fds (others are closed at once).
std::expected<Message, RecvError> recv_message(int fd, uint32_t max_size, bool keep_fds);
// All of `bytes`, the descriptors with the first byte. Never raises SIGPIPE.
[[nodiscard]] Status send_all(int fd, std::span<const std::byte> bytes, std::span<const int> fds = {});

struct PeerCred {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};
[[nodiscard]] Result<PeerCred> peer_cred(int fd);

// A listening socket at `path` with mode 0660 (owner and `group` only; no
// group given: the caller's). A stale socket file (nobody listening) is
// replaced; a live one, or any other file, is an error.
[[nodiscard]] Result<UniqueFd> listen_unix(const std::string& path, std::optional<gid_t> group);
// timeout_ms >= 0: give up after that long when the listener's backlog is
// full (a blocking connect would wait for it to accept).
[[nodiscard]] Result<UniqueFd> connect_unix(const std::string& path, int timeout_ms = -1);
// Receives on fd give up after `ms` (0: wait for ever).
void set_recv_timeout(int fd, uint32_t ms);

// A migration's device image travels in a memfd (STATE_EXPORT's reply,
// STATE_IMPORT's message; docs/migration.md §7): written whole and sealed.
[[nodiscard]] Result<UniqueFd> image_memfd(std::span<const uint8_t> image);
// `bytes` from the start of a peer's descriptor, which may be anything (a
// pipe, a socket, a file shorter than it says): only a regular file (a
// memfd) holding them is read, and pread never blocks on one.
[[nodiscard]] Result<std::vector<uint8_t>> read_image(int fd, uint64_t bytes);

// Where VMs connect when no socket is given (vgpud --socket, vgpuctl
// --socket): $VGPUD_SOCKET, else DEFAULT_SOCKET (in the directory that
// vgpud.service's RuntimeDirectory makes).
inline constexpr const char* SOCKET_ENV = "VGPUD_SOCKET";
inline constexpr const char* DEFAULT_SOCKET = "/run/vgpud/vgpud.sock";
std::string default_socket();

// How long a client waits for the daemon's first answer: VGPUD_TIMEOUT
// (seconds, fractions allowed, (0, 3600]) or DEFAULT_TIMEOUT_MS.
inline constexpr uint32_t DEFAULT_TIMEOUT_MS = 5000;
inline constexpr const char* TIMEOUT_ENV = "VGPUD_TIMEOUT";
// "2", "0.5": milliseconds; anything else (or out of range) an error
// naming `what` (the option or the variable).
[[nodiscard]] Result<uint32_t> parse_timeout(const std::string& what, const std::string& seconds);
[[nodiscard]] Result<uint32_t> timeout_from_env();
// "5 s", "0.5 s"
std::string seconds_text(uint32_t ms);
// The errors every client gives for a peer that is not vgpud, or that is
// silent.
std::string not_vgpud(const std::string& path);
std::string no_answer(const std::string& path, uint32_t timeout_ms);

}  // namespace vgpu::vgpud
