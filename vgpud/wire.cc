// SPDX-License-Identifier: GPL-2.0-or-later
#include "vgpud/wire.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/text.h"

namespace vgpu::vgpud {
namespace {

constexpr size_t MAX_FDS = 4;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

Result<sockaddr_un> unix_address(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path)
    return fail(Errc::invalid_argument,
                strfmt("socket path '%s': empty or longer than %zu bytes", path.c_str(), sizeof a.sun_path - 1));
  std::memcpy(a.sun_path, path.data(), path.size());
  return a;
}

// Reads exactly len bytes. Returns the bytes read before EOF, or -1.
ssize_t read_exact(int fd, std::byte* buf, size_t len, std::vector<UniqueFd>* fds, bool keep_fds) {
  size_t got = 0;
  while (got < len) {
    iovec iov{buf + got, len - got};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * MAX_FDS)];
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int passed;
        std::memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof passed);
        UniqueFd owned(passed);
        if (keep_fds && fds) fds->push_back(std::move(owned));
      }
    }
    if (n == 0) return static_cast<ssize_t>(got);
    got += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(got);
}

}  // namespace

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
}

std::expected<Message, RecvError> recv_message(int fd, uint32_t max_size, bool keep_fds) {
  Message msg;
  auto* head = reinterpret_cast<std::byte*>(&msg.header);
  const ssize_t n = read_exact(fd, head, sizeof msg.header, &msg.fds, keep_fds);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return std::unexpected(RecvError{RecvEnd::timeout, "no answer in time"});
  if (n < 0) return std::unexpected(RecvError{RecvEnd::io, errno_text("recvmsg")});
  if (n == 0) return std::unexpected(RecvError{RecvEnd::closed, "closed"});
  if (static_cast<size_t>(n) < sizeof msg.header)
    return std::unexpected(RecvError{RecvEnd::truncated, strfmt("truncated header (%zd of 16 bytes)", n)});
  const uint32_t size = msg.header.size;
  if (size < sizeof msg.header || size > max_size)
    return std::unexpected(
        RecvError{RecvEnd::oversized, strfmt("message %u of command %u announces %u bytes (at most %u)", msg.header.id,
                                             msg.header.command, size, max_size)});
  msg.payload.resize(size - sizeof msg.header);
  if (!msg.payload.empty()) {
    const ssize_t p = read_exact(fd, msg.payload.data(), msg.payload.size(), &msg.fds, keep_fds);
    if (p < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return std::unexpected(RecvError{RecvEnd::timeout, "no answer in time"});
    if (p < 0) return std::unexpected(RecvError{RecvEnd::io, errno_text("recvmsg")});
    if (static_cast<size_t>(p) < msg.payload.size())
      return std::unexpected(RecvError{RecvEnd::truncated, strfmt("message %u truncated: %zd of %zu payload bytes",
                                                                  msg.header.id, p, msg.payload.size())});
  }
  return msg;
}

Status send_all(int fd, std::span<const std::byte> bytes, std::span<const int> fds) {
  size_t sent = 0;
  bool fds_sent = fds.empty();
  while (sent < bytes.size()) {
    iovec iov{const_cast<std::byte*>(bytes.data() + sent), bytes.size() - sent};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * MAX_FDS)] = {};
    if (!fds_sent) {
      if (fds.size() > MAX_FDS) return fail(Errc::invalid_argument, "send: too many descriptors");
      m.msg_control = control;
      m.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    const ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Errc::io_error, errno_text("sendmsg"));
    fds_sent = true;
    sent += static_cast<size_t>(n);
  }
  return {};
}

Result<PeerCred> peer_cred(int fd) {
  ucred c{};
  socklen_t len = sizeof c;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &len) != 0) return fail(Errc::io_error, errno_text("SO_PEERCRED"));
  return PeerCred{c.pid, c.uid, c.gid};
}

Result<UniqueFd> listen_unix(const std::string& path, std::optional<gid_t> group) {
  auto addr = unix_address(path);
  if (!addr) return std::unexpected(addr.error());
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return fail(Errc::invalid_argument, "socket path '" + path + "': exists and is not a socket");
    if (auto live = connect_unix(path); live)
      return fail(Errc::invalid_argument, "socket path '" + path + "': another daemon is listening there");
    if (unlink(path.c_str()) != 0) return fail(Errc::io_error, "socket path '" + path + "': " + errno_text("unlink"));
  }
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return fail(Errc::io_error, errno_text("socket"));
  // Created with no access for anyone but the owner, then opened to the group.
  const mode_t old = umask(0177);
  const int rc = bind(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr);
  const int bind_errno = errno;
  umask(old);
  if (rc != 0) {
    errno = bind_errno;
    return fail(Errc::io_error, "socket path '" + path + "': " + errno_text("bind"));
  }
  if (group && chown(path.c_str(), static_cast<uid_t>(-1), *group) != 0) {
    const std::string why = errno_text("chown");
    unlink(path.c_str());
    return fail(Errc::io_error, "socket path '" + path + "': " + why);
  }
  if (chmod(path.c_str(), 0660) != 0 || listen(fd.get(), 64) != 0) {
    const std::string why = errno_text("chmod/listen");
    unlink(path.c_str());
    return fail(Errc::io_error, "socket path '" + path + "': " + why);
  }
  return fd;
}

Result<UniqueFd> connect_unix(const std::string& path, int timeout_ms) {
  auto addr = unix_address(path);
  if (!addr) return std::unexpected(addr.error());
  // Non-blocking when bounded: a Unix socket's connect fails with EAGAIN
  // while the listener's backlog is full; retried until the deadline.
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (timeout_ms >= 0 ? SOCK_NONBLOCK : 0), 0));
  if (!fd) return fail(Errc::io_error, errno_text("socket"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
  while (connect(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0) {
    if (errno == EINTR) continue;
    if (errno == EAGAIN && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (errno == EAGAIN)
      return fail(Errc::timeout, no_answer(path, static_cast<uint32_t>(timeout_ms)) + " (its backlog is full)");
    return fail(Errc::not_found, "cannot connect to " + path + ": " + std::strerror(errno));
  }
  if (timeout_ms >= 0) {
    const int flags = fcntl(fd.get(), F_GETFL);
    if (flags < 0 || fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0)
      return fail(Errc::io_error, errno_text("fcntl"));
  }
  return fd;
}

void set_recv_timeout(int fd, uint32_t ms) {
  const timeval tv{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>(ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

Result<uint32_t> parse_timeout(const std::string& what, const std::string& seconds) {
  constexpr double MAX_S = 3600;
  double v = 0;
  auto [p, ec] = std::from_chars(seconds.data(), seconds.data() + seconds.size(), v);
  if (seconds.empty() || ec != std::errc() || p != seconds.data() + seconds.size() || !(v > 0) || v > MAX_S ||
      v * 1000 < 1)
    return fail(Errc::invalid_argument,
                strfmt("%s: '%s' is not a number of seconds in (0, %g]", what.c_str(), seconds.c_str(), MAX_S));
  return static_cast<uint32_t>(v * 1000);
}

Result<uint32_t> timeout_from_env() {
  const char* env = std::getenv(TIMEOUT_ENV);
  if (!env) return DEFAULT_TIMEOUT_MS;
  return parse_timeout(TIMEOUT_ENV, env);
}

std::string default_socket() {
  const char* env = std::getenv(SOCKET_ENV);
  return env && *env ? env : DEFAULT_SOCKET;
}

std::string seconds_text(uint32_t ms) { return strfmt("%g s", static_cast<double>(ms) / 1000); }

std::string not_vgpud(const std::string& path) { return path + " does not speak the vgpud protocol"; }

std::string no_answer(const std::string& path, uint32_t timeout_ms) {
  return "vgpud at " + path + " did not answer in " + seconds_text(timeout_ms);
}

Result<UniqueFd> image_memfd(std::span<const uint8_t> image) {
  UniqueFd fd(memfd_create("vgpud-image", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return fail(Errc::io_error, errno_text("memfd_create"));
  size_t at = 0;
  while (at < image.size()) {
    const ssize_t n = write(fd.get(), image.data() + at, image.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(Errc::io_error, errno_text("writing the image memfd"));
    at += static_cast<size_t>(n);
  }
  if (fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
    return fail(Errc::io_error, errno_text("sealing the image memfd"));
  return fd;
}

Result<std::vector<uint8_t>> read_image(int fd, uint64_t bytes) {
  // Checked before anything is allocated: a peer cannot make the reader
  // reserve more than it has put in the file.
  struct stat st {};
  if (fstat(fd, &st) != 0) return fail(Errc::invalid_argument, errno_text("the image descriptor"));
  if (!S_ISREG(st.st_mode)) return fail(Errc::invalid_argument, "the image descriptor is not a memfd or file");
  if (static_cast<uint64_t>(st.st_size) < bytes)
    return fail(Errc::invalid_argument,
                strfmt("the image descriptor holds %llu of %llu bytes", static_cast<unsigned long long>(st.st_size),
                       static_cast<unsigned long long>(bytes)));
  std::vector<uint8_t> out(bytes);
  uint64_t at = 0;
  while (at < bytes) {
    const ssize_t n = pread(fd, out.data() + at, bytes - at, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Errc::invalid_argument, errno_text("reading the image descriptor"));
    if (n == 0)
      return fail(Errc::invalid_argument,
                  strfmt("the image descriptor ends after %llu of %llu bytes", static_cast<unsigned long long>(at),
                         static_cast<unsigned long long>(bytes)));
    at += static_cast<uint64_t>(n);
  }
  return out;
}

}  // namespace vgpu::vgpud
