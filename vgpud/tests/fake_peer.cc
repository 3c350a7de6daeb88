// SPDX-License-Identifier: GPL-2.0-or-later
#include "vgpud/tests/fake_peer.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>

namespace vgpu::vgpud::testing {
namespace {
std::mutex held_mutex;
constexpr const char* FOREIGN_ANSWER = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
}  // namespace

std::unique_ptr<FakePeer> FakePeer::start(Kind kind) {
  auto p = std::unique_ptr<FakePeer>(new FakePeer());
  p->kind_ = kind;
  char tmpl[] = "/tmp/vgpud-peer-XXXXXX";
  if (!mkdtemp(tmpl)) return nullptr;
  p->dir_ = tmpl;
  p->socket_ = p->dir_ + "/peer.sock";
  auto vm = listen_unix(p->socket_, std::nullopt);
  auto ctl = listen_unix(p->socket_ + ".ctl", std::nullopt);
  if (!vm || !ctl) return nullptr;
  p->vm_fd_ = std::move(*vm);
  p->ctl_fd_ = std::move(*ctl);
  p->stop_fd_ = UniqueFd(eventfd(0, EFD_CLOEXEC));
  for (int fd : {p->vm_fd_.get(), p->ctl_fd_.get()}) p->threads_.emplace_back([raw = p.get(), fd] { raw->serve(fd); });
  return p;
}

FakePeer::~FakePeer() {
  const uint64_t one = 1;
  (void)!write(stop_fd_.get(), &one, sizeof one);
  for (auto& t : threads_) t.join();
  held_.clear();
  unlink(socket_.c_str());
  unlink((socket_ + ".ctl").c_str());
  rmdir(dir_.c_str());
}

void FakePeer::serve(int listen_fd) {
  for (;;) {
    pollfd fds[2] = {{listen_fd, POLLIN, 0}, {stop_fd_.get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents) return;
    UniqueFd c(accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (!c) continue;
    if (kind_ == Kind::silent) {
      std::lock_guard lock(held_mutex);
      held_.push_back(std::move(c));
      continue;
    }
    const std::string text = FOREIGN_ANSWER;
    (void)send_all(c.get(), std::as_bytes(std::span(text.data(), text.size())));
    shutdown(c.get(), SHUT_WR);
    char buf[512];
    pollfd in{c.get(), POLLIN, 0};
    while (poll(&in, 1, 100) > 0 && recv(c.get(), buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
  }
}

}  // namespace vgpu::vgpud::testing
