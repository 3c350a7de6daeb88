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
enum class RecvEnd { closed, truncated, oversized, io };
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
[[nodiscard]] Result<UniqueFd> connect_unix(const std::string& path);

}  // namespace vgpu::vgpud
