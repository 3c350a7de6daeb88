// SPDX-License-Identifier: GPL-2.0-or-later
// A program on a Unix socket that is not vgpud: a silent one (accepts,
// never answers) or a foreign one (answers every connection with text,
// then closes it). Its control socket (PATH.ctl) behaves the same, so
// vgpuctl meets it too.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "vgpud/wire.h"

namespace vgpu::vgpud::testing {

class FakePeer {
 public:
  enum class Kind { silent, foreign };
  static std::unique_ptr<FakePeer> start(Kind kind);
  ~FakePeer();
  const std::string& socket() const { return socket_; }

 private:
  void serve(int listen_fd);
  Kind kind_ = Kind::silent;
  std::string dir_, socket_;
  UniqueFd vm_fd_, ctl_fd_, stop_fd_;
  std::vector<UniqueFd> held_;  // the silent peer's connections, open until the end
  std::vector<std::thread> threads_;
};

}  // namespace vgpu::vgpud::testing
