// SPDX-License-Identifier: GPL-2.0-or-later
// vgpud --backend cuda (docs/cuda-worker.md) on the fake worker: each
// attached VM gets a worker process of its own, `workers` (vgpuctl
// workers) shows them; a worker killed between commands is restarted by
// the daemon (restarts 1, a new pid), its VM's channel hears of it once,
// and the other VM's worker and results are untouched.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "driver/runtime.h"
#include "tests/testing/fill_check.h"
#include "vgpud/client/client_port.h"
#include "vgpud/tests/daemon_process.h"

namespace vgpu::vgpud {
namespace {

using testing::attach_or_null;
using testing::DaemonProcess;

struct WorkerRow {
  int pid = 0;
  std::string state;
  unsigned restarts = 0;
  std::string rest;  // the device and the last failure
};

// The `workers` answer: a header line, then NAME VM_ID PID STATE RESTARTS DEVICE LAST_FAILURE.
std::map<std::string, WorkerRow> parse_workers(const std::string& answer) {
  std::map<std::string, WorkerRow> rows;
  std::istringstream in(answer);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string name;
    unsigned id = 0;
    WorkerRow r;
    if (l >> name >> id >> r.pid >> r.state >> r.restarts) {
      std::getline(l, r.rest);
      rows[name] = r;
    }
  }
  return rows;
}

int parent_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  char state = 0;
  int ppid = -1;
  rest >> state >> ppid;
  return ppid;
}

// A VM's driver on its client: fills a buffer and reads it back (the
// worker runs fills and copies; saxpy and the other built-ins are not in
// it yet).
struct FillVm {
  std::unique_ptr<Client> client;
  std::unique_ptr<ClientPort> port;
  std::unique_ptr<driver::Device> dev;

  Status fill(float value) { return vgpu::testing::fill_new_and_check(*dev, 4096, value); }
};

std::unique_ptr<FillVm> open_vm(const DaemonProcess& d, const std::string& name) {
  auto vm = std::make_unique<FillVm>();
  vm->client = attach_or_null(d.socket(), name);
  if (!vm->client) return nullptr;
  auto port = ClientPort::create(*vm->client);
  if (!port) return nullptr;
  vm->port = std::move(*port);
  auto dev = driver::Device::open(*vm->port, {});
  if (!dev) return nullptr;
  vm->dev = std::move(*dev);
  return vm;
}

// The device the workers run on: VGPU_WORKER_TEST_DEVICE (fake in CI,
// cuda on the GPU machine, with VGPUD_TEST_BINARY a staged vgpud beside its
// vgpu-worker and VGPUCTL_TEST_BINARY a staged vgpuctl).
std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

std::string run_vgpuctl(const std::string& socket) {
  const std::string vgpuctl = env_or("VGPUCTL_TEST_BINARY", VGPUCTL_PATH);
  FILE* p = popen((vgpuctl + " --socket " + socket + " workers 2>&1").c_str(), "r");
  if (p == nullptr) return "";
  std::string out;
  char buf[512];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

// The worker vgpud should find without --worker-binary: the one beside it
// (a staged vgpud), else its build tree's (../worker/vgpu-worker).
std::string expected_worker() {
  const std::string vgpud = DaemonProcess::binary();
  const std::string beside = vgpud.substr(0, vgpud.rfind('/') + 1) + "vgpu-worker";
  return access(beside.c_str(), X_OK) == 0 ? beside : VGPU_WORKER_BIN;
}

std::string real(const std::string& path) {
  char* r = realpath(path.c_str(), nullptr);
  std::string out = r ? r : "(" + path + ": no such file)";
  free(r);
  return out;
}

TEST(VgpudWorkers, EachVmHasItsOwnWorkerAndAKilledOneIsRestarted) {
  // No --worker-binary: vgpud (build/vgpud/vgpud) finds ../worker/vgpu-worker.
  const std::string device = env_or("VGPU_WORKER_TEST_DEVICE", "fake");
  auto d = DaemonProcess::start({"--vram", "1G", "--backend", "cuda", "--worker-device", device});
  ASSERT_TRUE(d);
  const std::string started = "backend cuda: a worker process per VM on " + device + " (";
  const size_t at = d->log().find(started);
  ASSERT_NE(at, std::string::npos) << d->log();
  const std::string found = d->log().substr(at + started.size(), d->log().find(')', at) - at - started.size());
  EXPECT_EQ(real(found), real(expected_worker())) << "the worker beside vgpud";
  auto a = open_vm(*d, "a"), b = open_vm(*d, "b");
  ASSERT_TRUE(a && b) << d->log();
  EXPECT_TRUE(a->fill(1.0f));
  EXPECT_TRUE(b->fill(2.0f));

  const std::string shown = run_vgpuctl(d->socket());
  auto rows = parse_workers(shown);
  ASSERT_EQ(rows.size(), 2u) << shown;
  const WorkerRow wa = rows["a"], wb = rows["b"];
  EXPECT_GT(wa.pid, 0);
  EXPECT_GT(wb.pid, 0);
  EXPECT_NE(wa.pid, wb.pid);
  EXPECT_EQ(parent_of(wa.pid), d->pid()) << "the daemon started a's worker";
  EXPECT_EQ(parent_of(wb.pid), d->pid());
  EXPECT_EQ(wa.state, "ready");
  EXPECT_EQ(wa.restarts, 0u);
  EXPECT_EQ(wb.restarts, 0u);

  ASSERT_EQ(kill(wa.pid, SIGKILL), 0);
  WorkerRow now;
  for (int i = 0; i < 500 && now.restarts == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    now = parse_workers(d->control("workers"))["a"];
  }
  EXPECT_EQ(now.restarts, 1u) << d->control("workers");
  EXPECT_GT(now.pid, 0);
  EXPECT_NE(now.pid, wa.pid);
  EXPECT_EQ(now.state, "ready");
  EXPECT_NE(now.rest.find("killed by signal"), std::string::npos) << now.rest;
  const WorkerRow b_after = parse_workers(d->control("workers"))["b"];
  EXPECT_EQ(b_after.pid, wb.pid);
  EXPECT_EQ(b_after.restarts, 0u);
  EXPECT_NE(d->log().find("vm a: worker " + std::to_string(wa.pid) + " ended (worker died: killed by signal"),
            std::string::npos)
      << d->log();

  // a's next work hears of the lost worker once (its device bytes are
  // gone), then runs on the new one; b never noticed.
  const Status first = a->fill(3.0f);
  ASSERT_FALSE(first);
  EXPECT_NE(first.error().message.find("kernel_error"), std::string::npos) << first.error().what();
  EXPECT_TRUE(a->fill(4.0f));
  EXPECT_TRUE(b->fill(5.0f));
  EXPECT_EQ(parse_workers(d->control("workers"))["b"].pid, wb.pid);
  a.reset();
  b.reset();
  EXPECT_EQ(d->stop(), 0);
}

TEST(VgpudWorkers, WithoutWorkersTheRequestSaysSo) {
  auto d = DaemonProcess::start({"--vram", "1G"});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->control("workers"), "error: the daemon runs no workers (vgpud --backend cuda starts one per VM)\n");
  EXPECT_EQ(d->stop(), 0);
}

}  // namespace
}  // namespace vgpu::vgpud
