// SPDX-License-Identifier: GPL-2.0-or-later
#include "vgpud/tests/daemon_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "driver/runtime.h"
#include "vgpud/client/client_port.h"
#include "vgpud/wire.h"
#include "pv-driver/pv_page_tables.h"

extern char** environ;

namespace vgpu::vgpud::testing {
namespace {

uint64_t json_number(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return ~uint64_t{0};
  return std::strtoull(json.c_str() + at + key.size() + 4, nullptr, 10);
}

}  // namespace

const char* DaemonProcess::binary() {
  const char* b = std::getenv("VGPUD_TEST_BINARY");
  return b != nullptr && *b != '\0' ? b : VGPUD_PATH;
}

std::unique_ptr<DaemonProcess> DaemonProcess::start(const std::vector<std::string>& args) {
  auto d = std::unique_ptr<DaemonProcess>(new DaemonProcess());
  char tmpl[] = "/tmp/vgpud-test-XXXXXX";
  if (!mkdtemp(tmpl)) return nullptr;
  d->dir_ = tmpl;
  d->socket_ = d->dir_ + "/vgpud.sock";
  d->log_path_ = d->dir_ + "/vgpud.log";
  std::vector<std::string> argv_s = {binary(), "--socket", d->socket_};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, d->log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int rc = posix_spawn(&d->pid_, binary(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return nullptr;
  for (int i = 0; i < 1000; ++i) {
    if (!d->control("stats").empty()) return d;
    if (!d->running()) return nullptr;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return nullptr;
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0) stop(5);
  std::remove(log_path_.c_str());
  rmdir(dir_.c_str());
}

bool DaemonProcess::running() {
  if (pid_ <= 0) return false;
  int status;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

int DaemonProcess::stop(int timeout_s) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < timeout_s * 100; ++i) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return -1;
}

std::string DaemonProcess::control(const std::string& line) const {
  auto fd = connect_unix(socket_ + ".ctl");
  if (!fd) return "";
  const std::string req = line + "\n";
  if (!send_all(fd->get(), std::as_bytes(std::span(req.data(), req.size())))) return "";
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd->get(), buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  // The protocol's first line (protocol.h), then the answer.
  const std::string hello = std::string(proto::CONTROL_HELLO) + " " + std::to_string(proto::CONTROL_VERSION) + "\n";
  if (out.rfind(hello, 0) != 0) return "";
  return out.substr(hello.size());
}

uint64_t DaemonProcess::rss_kib() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  return 0;
}

std::string DaemonProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool DaemonProcess::log_has(const std::string& text) const {
  for (int i = 0; i < 200; ++i) {
    if (log().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

uint64_t DaemonProcess::reserved_bytes() const { return json_number(control("stats"), "vram_reserved_used_bytes"); }
uint64_t DaemonProcess::partition_bytes() const { return json_number(control("stats"), "vram_assigned_bytes"); }

Result<OpenVm> open_context(Client& client) {
  OpenVm vm;
  auto port = ClientPort::create(client);
  if (!port) return std::unexpected(port.error());
  vm.port = std::move(*port);
  auto dev = driver::Device::open(*vm.port);
  if (!dev) return std::unexpected(dev.error());
  vm.dev = std::move(*dev);
  auto ctx = vm.dev->create_context();
  if (!ctx) return std::unexpected(ctx.error());
  vm.ctx = std::move(*ctx);
  return vm;
}

Status checked_workload(Client& client, uint32_t seed, bool pv) {
  auto port = ClientPort::create(client);
  if (!port) return std::unexpected(port.error());
  driver::DeviceOptions options;
  options.paravirtual = pv ? pvdriver::open_pv_tables : nullptr;
  auto dev = driver::Device::open(**port, options);
  if (!dev) return std::unexpected(dev.error().context("open"));
  auto ctx = (*dev)->create_context();
  if (!ctx) return std::unexpected(ctx.error().context("context"));
  constexpr uint32_t N = 4096;
  auto x = (*ctx)->alloc(N * sizeof(float));
  auto y = (*ctx)->alloc(N * sizeof(float));
  if (!x || !y) return fail(Errc::out_of_memory, "alloc");
  const float a = static_cast<float>(seed % 7 + 1);
  const float xv = static_cast<float>(seed % 5 + 2);
  std::vector<float> yv(N);
  for (uint32_t i = 0; i < N; ++i) yv[i] = static_cast<float>(i % 13);
  if (auto s = (*ctx)->upload(*y, std::span<const float>(yv)); !s) return std::unexpected(s.error().context("upload"));
  auto f1 = (*ctx)->fill({*x, N, xv});
  if (!f1) return std::unexpected(f1.error().context("fill"));
  auto f2 = (*ctx)->saxpy({*x, *y, N, a});
  if (!f2) return std::unexpected(f2.error().context("saxpy"));
  if (auto s = (*ctx)->wait(*f2); !s) return std::unexpected(s.error().context("wait"));
  std::vector<float> got(N);
  if (auto s = (*ctx)->download(*y, std::span<float>(got)); !s) return std::unexpected(s.error().context("download"));
  for (uint32_t i = 0; i < N; ++i) {
    const float want = a * xv + yv[i];
    if (got[i] != want)
      return fail(Errc::device_error,
                  "element " + std::to_string(i) + ": " + std::to_string(got[i]) + ", want " + std::to_string(want));
  }
  return {};
}

AttachOptions test_options(const std::string& name) {
  AttachOptions o;
  o.name = name;
  o.channels = 8;
  return o;
}

std::unique_ptr<Client> attach_or_null(const std::string& socket, const std::string& name, std::string* error,
                                       bool pv) {
  AttachOptions o = test_options(name);
  o.pv = pv;
  return attach_or_null(socket, o, error);
}

std::unique_ptr<Client> attach_or_null(const std::string& socket, const AttachOptions& o, std::string* error) {
  auto c = Client::attach(socket, o);
  if (!c) {
    if (error) *error = c.error().message;
    return nullptr;
  }
  return std::move(*c);
}

TwoVms start_two_vms(const std::vector<std::string>& args, const std::string& a, const std::string& b) {
  TwoVms t;
  t.d = DaemonProcess::start(args);
  if (!t.d) return t;
  t.a = attach_or_null(t.d->socket(), a);
  t.b = attach_or_null(t.d->socket(), b);
  return t;
}

}  // namespace vgpu::vgpud::testing
