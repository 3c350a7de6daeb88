// SPDX-License-Identifier: GPL-2.0-or-later
// Test helpers: the vgpud binary as a separate process (as QEMUs see it),
// and a small checked workload that a VM runs through the daemon.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "driver/runtime.h"
#include "vgpud/client/client.h"
#include "vgpud/client/client_port.h"

namespace vgpu::vgpud::testing {

class DaemonProcess {
 public:
  // Starts `vgpud --socket DIR/vgpud.sock ARGS...` and waits until its
  // control socket answers.
  static std::unique_ptr<DaemonProcess> start(const std::vector<std::string>& args = {});
  // The vgpud it starts: $VGPUD_TEST_BINARY (a staged one on the GPU
  // machine), else the build's (VGPUD_PATH).
  static const char* binary();
  ~DaemonProcess();

  const std::string& socket() const { return socket_; }
  pid_t pid() const { return pid_; }
  // SIGTERM, then the exit status (-1: had to be killed after `timeout_s`).
  int stop(int timeout_s = 30);
  bool running();
  // The answer to a control request without the protocol's first line; ""
  // when unreachable or not vgpud.
  std::string control(const std::string& line) const;
  uint64_t rss_kib() const;
  std::string log() const;  // its stderr so far
  // Whether `text` shows in its log within 2 s.
  bool log_has(const std::string& text) const;
  // From `stats`: reserved VRAM in use, VRAM assigned to VMs.
  uint64_t reserved_bytes() const;
  uint64_t partition_bytes() const;

 private:
  std::string dir_, socket_, log_path_;
  pid_t pid_ = -1;
};

// Opens the device on the client, runs a fill and a saxpy on a fresh
// context, downloads and checks every element. `seed` varies the values.
// `pv`: the driver uses the paravirtual interface (the VM attached with pv).
[[nodiscard]] Status checked_workload(Client& client, uint32_t seed, bool pv = false);

// An attached VM's port, its device and a fresh context (destroyed in
// that order backwards).
struct OpenVm {
  std::unique_ptr<ClientPort> port;
  std::unique_ptr<driver::Device> dev;
  std::unique_ptr<driver::Context> ctx;
};
Result<OpenVm> open_context(Client& client);

// The tests' attach options: `name`, 64 MiB, 8 channels, the rest the defaults.
AttachOptions test_options(const std::string& name);

// Attach with test_options(name), pv as given.
std::unique_ptr<Client> attach_or_null(const std::string& socket, const std::string& name, std::string* error = nullptr,
                                       bool pv = false);
// Attach with `o`; on failure null, and the reason in *error if given.
std::unique_ptr<Client> attach_or_null(const std::string& socket, const AttachOptions& o, std::string* error = nullptr);

// A daemon and two VMs attached to it, the start of the two-VM tests.
struct TwoVms {
  std::unique_ptr<DaemonProcess> d;
  std::unique_ptr<Client> a, b;
  // Detaches a, then b, then stops the daemon: its exit status.
  int stop() {
    a.reset();
    b.reset();
    return d->stop();
  }
};

// Starts vgpud with `args` and attaches `a`, then `b` (attach_or_null's
// defaults). A null member is what did not start or attach.
TwoVms start_two_vms(const std::vector<std::string>& args, const std::string& a, const std::string& b);

}  // namespace vgpu::vgpud::testing
