// SPDX-License-Identifier: GPL-2.0-or-later
// The daemon as a process: attach and refusals, clean shutdown, a bad
// client closed alone, a client killed mid-work, attach/detach cycles.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "driver/runtime.h"
#include "vgpu/regs.h"
#include "vgpud/client/client_port.h"
#include "vgpud/tests/daemon_process.h"

namespace vgpu::vgpud {
namespace {

using testing::attach_or_null;
using testing::checked_workload;
using testing::DaemonProcess;

TEST(Vgpud, AttachedVmRunsCheckedKernels) {
  auto d = DaemonProcess::start({"--vram", "1G"});
  ASSERT_TRUE(d);
  std::string err;
  auto c = attach_or_null(d->socket(), "vm-a", &err);
  ASSERT_TRUE(c) << err;
  EXPECT_TRUE(checked_workload(*c, 1)) << "workload";
  EXPECT_GT(c->round_trips(), 0u);
  EXPECT_GT(c->posted(), 0u);
  EXPECT_TRUE(d->log_has("vm vm-a connected: pid " + std::to_string(getpid())));
  const std::string list = d->control("list");
  EXPECT_NE(list.find("vm-a"), std::string::npos) << list;
  c.reset();
  EXPECT_TRUE(d->log_has("vm vm-a disconnected: closed by the client"));
  EXPECT_EQ(d->log().find("moved the BAR layout"), std::string::npos) << "a posted write moved the layout";
  EXPECT_EQ(d->stop(), 0);
}

// pv=on through the daemon (spec §17): the PV doorbell is answered, not
// posted, so the batch's results are in the slot when the driver reads them.
TEST(Vgpud, PvVmRunsCheckedKernelsThroughHypercalls) {
  auto d = DaemonProcess::start({"--vram", "1G"});
  ASSERT_TRUE(d);
  std::string err;
  auto c = attach_or_null(d->socket(), "vm-pv", &err, true);
  ASSERT_TRUE(c) << err;
  EXPECT_TRUE(checked_workload(*c, 3, true)) << "workload";
  EXPECT_TRUE(d->log_has("vm vm-pv connected"));
  EXPECT_NE(d->log().find(", pv"), std::string::npos) << d->log();
  c.reset();
  EXPECT_EQ(d->log().find("moved the BAR layout"), std::string::npos) << "a posted write moved the layout";
  EXPECT_EQ(d->stop(), 0);
}

TEST(Vgpud, TwoVmsShareTheDaemonAndEachGetsItsOwnVram) {
  auto t = testing::start_two_vms({"--vram", "1G"}, "a", "b");
  ASSERT_TRUE(t.d && t.a && t.b);
  auto& [d, a, b] = t;
  EXPECT_NE(a->vm_id(), b->vm_id());
  EXPECT_EQ(lseek(a->vram_fd(), 0, SEEK_END), static_cast<off_t>(64 * MiB));
  Status sa, sb;
  std::thread ta([&] { sa = checked_workload(*a, 2); });
  std::thread tb([&] { sb = checked_workload(*b, 3); });
  ta.join();
  tb.join();
  EXPECT_TRUE(sa) << sa.error().what();
  EXPECT_TRUE(sb) << sb.error().what();
}

TEST(Vgpud, RefusalsNameTheirReason) {
  auto d = DaemonProcess::start({"--vram", "512M", "--max-vms", "2"});
  ASSERT_TRUE(d);
  AttachOptions big;
  big.name = "big";
  big.vram_bytes = 1024 * MiB;
  auto r = Client::attach(d->socket(), big);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().refusal, proto::Refusal::vram_exhausted) << r.error().message;
  // 512 MiB less 16 MiB and 2 x 24 MiB reserved for the daemon: in MiB, the user's unit.
  EXPECT_EQ(r.error().message, "1024 MiB asked, 448 MiB free on the daemon");
  AttachOptions bad;
  bad.name = "bad";
  bad.channels = 0;
  r = Client::attach(d->socket(), bad);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().refusal, proto::Refusal::bad_option);
  EXPECT_NE(r.error().message.find("channels"), std::string::npos) << r.error().message;
  auto a = attach_or_null(d->socket(), "a");
  ASSERT_TRUE(a);
  r = Client::attach(d->socket(), AttachOptions{.name = "a"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().refusal, proto::Refusal::bad_option) << "a second VM named a";
  auto b = attach_or_null(d->socket(), "b");
  ASSERT_TRUE(b);
  r = Client::attach(d->socket(), AttachOptions{.name = "c"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().refusal, proto::Refusal::too_many_vms);
}

TEST(Vgpud, SigtermWithVmsAttachedStopsCleanly) {
  auto d = DaemonProcess::start({"--vram", "1G"});
  ASSERT_TRUE(d);
  auto a = attach_or_null(d->socket(), "a");
  ASSERT_TRUE(a);
  const std::string sock = d->socket();
  EXPECT_EQ(d->stop(), 0);
  EXPECT_NE(access(sock.c_str(), F_OK), 0) << "the socket is removed";
  EXPECT_NE(access((sock + ".ctl").c_str(), F_OK), 0);
  EXPECT_EQ(a->read32(proto::REGION_BAR0, 0), 0xffffffffu) << "a lost device reads all ones";
  EXPECT_TRUE(a->lost());
}

TEST(Vgpud, SocketIsOwnerAndGroupOnly) {
  auto d = DaemonProcess::start({"--vram", "512M"});
  ASSERT_TRUE(d);
  struct stat st {};
  ASSERT_EQ(stat(d->socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
}

TEST(Vgpud, BadOptionsAndUnusableSocketAreClearErrors) {
  auto run = [](const std::string& args) {
    const std::string cmd = std::string(VGPUD_PATH) + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[512];
    while (fgets(buf, sizeof buf, p)) out += buf;
    const int status = pclose(p);
    return std::pair{WEXITSTATUS(status), out};
  };
  auto [rc1, out1] = run("--socket /tmp/x.sock --scheduler lottery");
  EXPECT_NE(rc1, 0);
  EXPECT_NE(out1.find("scheduler: 'lottery' is not one of fifo, credit, band"), std::string::npos) << out1;
  auto [rc2, out2] = run("--socket /nonexistent-dir/x.sock");
  EXPECT_NE(rc2, 0);
  EXPECT_NE(out2.find("/nonexistent-dir/x.sock"), std::string::npos) << out2;
  auto [rc3, out3] = run("--socket /tmp/x.sock --vram 100000G");
  EXPECT_NE(rc3, 0);
  EXPECT_NE(out3.find("--vram"), std::string::npos) << out3;
  auto [rc4, out4] = run("--help");
  EXPECT_EQ(rc4, 0);
  EXPECT_NE(out4.find("usage: vgpud"), std::string::npos);
}

// A raw connection that sends `bytes` and waits until the daemon closes it.
bool daemon_closes_after(const std::string& socket, const std::vector<std::byte>& bytes, bool half_close = false) {
  auto fd = connect_unix(socket);
  if (!fd) return false;
  (void)send_all(fd->get(), bytes);
  if (half_close) shutdown(fd->get(), SHUT_WR);
  timeval tv{10, 0};
  setsockopt(fd->get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd->get(), buf, sizeof buf, 0);
    if (n == 0) return true;
    if (n < 0) return false;
  }
}

TEST(Vgpud, BadMessagesCloseThatConnectionOnlyWithALogLine) {
  auto d = DaemonProcess::start({"--vram", "1G"});
  ASSERT_TRUE(d);
  auto victim = attach_or_null(d->socket(), "victim");
  ASSERT_TRUE(victim);
  // Oversized: a header announcing 1 GiB.
  proto::Header h{.id = 0, .command = static_cast<uint16_t>(proto::Command::region_read), .size = 1u << 30};
  const auto* hb = reinterpret_cast<const std::byte*>(&h);
  EXPECT_TRUE(daemon_closes_after(d->socket(), std::vector<std::byte>(hb, hb + sizeof h)));
  EXPECT_TRUE(d->log_has("announces 1073741824 bytes"));
  // Before ATTACH.
  EXPECT_TRUE(daemon_closes_after(d->socket(), proto::read_request(0, proto::REGION_BAR0, 0)));
  EXPECT_TRUE(d->log_has("before ATTACH"));
  // Truncated.
  auto t = proto::read_request(0, proto::REGION_BAR0, 0);
  t.resize(20);
  EXPECT_TRUE(daemon_closes_after(d->socket(), t, true));
  EXPECT_TRUE(d->log_has("truncated"));
  // Out of order: ids must go up by one.
  {
    auto c = attach_or_null(d->socket(), "skipper");
    ASSERT_TRUE(c);
    auto m = proto::read_request(5, proto::REGION_BAR0, 0);
    ASSERT_TRUE(send_all(c->socket_fd(), m));
    EXPECT_TRUE(d->log_has("out of order: id 5 after 0"));
  }
  // An access past the end of its BAR (QEMU's region size would stop
  // one; a client of its own making need not).
  {
    auto c = attach_or_null(d->socket(), "far");
    ASSERT_TRUE(c);
    ASSERT_TRUE(send_all(c->socket_fd(), proto::read_request(1, proto::REGION_BAR0, regs::pci::BAR0_SIZE)));
    EXPECT_TRUE(d->log_has("of region 0 is unaligned or outside its"));
  }
  EXPECT_TRUE(checked_workload(*victim, 4));
  EXPECT_FALSE(victim->lost());
}

TEST(Vgpud, IdleConnectionsAreBounded) {
  auto d = DaemonProcess::start({"--vram", "512M", "--max-vms", "1"});  // at most 4 * 1 + 16 connections
  ASSERT_TRUE(d);
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 20; ++i) {
    auto fd = connect_unix(d->socket());
    ASSERT_TRUE(fd);
    idle.push_back(std::move(*fd));
  }
  EXPECT_TRUE(daemon_closes_after(d->socket(), {})) << "the 21st connection is closed at once";
  EXPECT_TRUE(d->log_has("refused: 20 connections open (at most 20)"));
  idle.clear();
  std::string err;
  std::unique_ptr<Client> c;
  for (int t = 0; t < 2000 && !c; ++t) {
    c = attach_or_null(d->socket(), "after", &err);
    if (!c) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(c) << err;
}

TEST(Vgpud, ClientKilledMidWorkLosesItsVgpuOthersCarryOn) {
  auto d = DaemonProcess::start({"--vram", "1G"});
  ASSERT_TRUE(d);
  auto victim = attach_or_null(d->socket(), "victim");
  ASSERT_TRUE(victim);
  const uint64_t reserved_base = d->reserved_bytes();
  const uint64_t partitions_base = d->partition_bytes();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    // The doomed VM: queue long kernels and signal when they are on the GPU.
    auto c = attach_or_null(d->socket(), "doomed");
    if (!c) _exit(1);
    auto vm = testing::open_context(*c);
    if (!vm) _exit(2);
    for (int i = 0; i < 20; ++i) (void)vm->ctx->spin({50'000'000});
    (void)!write(ready[1], "x", 1);
    for (;;) pause();
  }
  close(ready[1]);
  char x;
  ASSERT_EQ(read(ready[0], &x, 1), 1) << "the doomed VM did not get going";
  close(ready[0]);
  std::atomic<bool> stop{false};
  Status victim_status;
  int runs = 0;
  std::thread t([&] {
    while (!stop && victim_status) {
      victim_status = checked_workload(*victim, static_cast<uint32_t>(runs));
      ++runs;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(d->log_has("vm doomed disconnected"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop = true;
  t.join();
  EXPECT_TRUE(victim_status) << victim_status.error().what();
  EXPECT_GE(runs, 1);
  // Its engine work ends (at most 20 x 50 ms), then its VRAM goes back.
  bool back = false;
  for (int i = 0; i < 300 && !back; ++i) {
    back = d->reserved_bytes() <= reserved_base && d->partition_bytes() == partitions_base;
    if (!back) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(back) << "reserved " << d->reserved_bytes() << " (baseline " << reserved_base << "), partitions "
                    << d->partition_bytes() << " (baseline " << partitions_base << ")";
  EXPECT_TRUE(checked_workload(*victim, 99));
}

TEST(Vgpud, TwoHundredAttachDetachCyclesLeaveNoGrowth) {
  auto d = DaemonProcess::start({"--vram", "1G"});
  ASSERT_TRUE(d);
  const uint64_t reserved_base = d->reserved_bytes();
  uint64_t rss_after_warmup = 0;
  for (int i = 0; i < 200; ++i) {
    // The previous VM's session may still be finishing its teardown (the
    // name is released after the partition): retry for up to 2 s.
    std::string err;
    std::unique_ptr<Client> c;
    for (int t = 0; t < 2000 && !c; ++t) {
      c = attach_or_null(d->socket(), "cycle", &err);
      if (!c) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(c) << "cycle " << i << ": " << err;
    EXPECT_NE(c->read32(proto::REGION_BAR0, 0), 0xffffffffu);
    c.reset();
    // The next attach of the same name waits for this one's teardown.
    for (int w = 0; w < 500 && d->partition_bytes() != 0; ++w)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (i == 19) rss_after_warmup = d->rss_kib();
  }
  for (int w = 0; w < 2000 && d->partition_bytes() != 0; ++w) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(d->partition_bytes(), 0u);
  EXPECT_EQ(d->reserved_bytes(), reserved_base);
  const uint64_t rss_end = d->rss_kib();
#ifndef __SANITIZE_ADDRESS__
  // (Under AddressSanitizer freed memory sits in its quarantine, so RSS
  // grows by design; LeakSanitizer checks the daemon at exit instead.)
  EXPECT_LE(rss_end, rss_after_warmup + 4096)
      << "RSS " << rss_after_warmup << " KiB after 20 cycles, " << rss_end << " KiB after 200";
#endif
  EXPECT_EQ(d->stop(), 0) << "a non-zero exit under LeakSanitizer is a leak";
  RecordProperty("rss_kib_after_20", static_cast<int>(rss_after_warmup));
  RecordProperty("rss_kib_after_200", static_cast<int>(rss_end));
}

// vgpuctl ARGS... against the daemon: its exit status and output.
std::pair<int, std::string> vgpuctl(const DaemonProcess& d, const std::string& args) {
  const std::string cmd = std::string(VGPUCTL_PATH) + " --socket " + d.socket() + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int status = pclose(p);
  return {WEXITSTATUS(status), out};
}

TEST(Vgpuctl, ListStatsAndSetWeight) {
  auto d = DaemonProcess::start({"--vram", "1G", "--scheduler", "band"});
  ASSERT_TRUE(d);
  auto a = attach_or_null(d->socket(), "alpha");
  ASSERT_TRUE(a);
  auto [rc, out] = vgpuctl(*d, "list");
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("SHARE_10S"), std::string::npos) << out;
  EXPECT_NE(out.find("alpha"), std::string::npos) << out;
  std::tie(rc, out) = vgpuctl(*d, "stats --json");
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("\"name\": \"alpha\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"trapped_reads\""), std::string::npos) << out;
  std::tie(rc, out) = vgpuctl(*d, "set-weight alpha 40");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(vgpuctl(*d, "stats --json").second.find("\"weight\": 40"), std::string::npos);
  std::tie(rc, out) = vgpuctl(*d, "set-weight nobody 4");
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("no VM named 'nobody'"), std::string::npos) << out;
  EXPECT_NE(vgpuctl(*d, "frobnicate").first, 0);
}

// The daemon's VRAM adds up (total = reserved + assigned + free), a VM
// that ran work has touched some of its VRAM and used some GPU time, and
// utilization (GPU time over wall time) is a fraction.
TEST(Vgpuctl, ListAndStatsShowUtilizationAndVram) {
  auto d = DaemonProcess::start({"--vram", "1G", "--max-vms", "2"});
  ASSERT_TRUE(d);
  auto a = attach_or_null(d->socket(), "alpha");
  ASSERT_TRUE(a);
  ASSERT_TRUE(checked_workload(*a, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // two share samples
  const auto j = nlohmann::json::parse(d->control("stats"));
  const uint64_t total = j["vram_total_bytes"], reserved = j["vram_reserved_bytes"],
                 assigned = j["vram_assigned_bytes"], free = j["vram_free_bytes"];
  EXPECT_EQ(total, GiB);
  EXPECT_EQ(reserved, 64 * MiB) << "16 MiB and 24 MiB per VM slot";
  EXPECT_EQ(assigned, 64 * MiB) << "alpha's VRAM";
  EXPECT_EQ(total, reserved + assigned + free);
  EXPECT_GT(j["vram_reserved_used_bytes"].get<uint64_t>(), 0u);
  EXPECT_LE(j["vram_reserved_used_bytes"].get<uint64_t>(), reserved);
  const auto& vm = j["vms"][0];
  EXPECT_EQ(vm["vram_bytes"], 64 * MiB);
  EXPECT_GT(vm["vram_touched_bytes"].get<uint64_t>(), 0u) << "the workload wrote its buffers";
  EXPECT_LE(vm["vram_touched_bytes"].get<uint64_t>(), 64 * MiB);
  EXPECT_EQ(vm["shadow_bytes"], 24 * MiB);
  EXPECT_GT(vm["shadow_used_bytes"].get<uint64_t>(), 0u);
  EXPECT_GT(vm["gpu_ns"].get<uint64_t>(), 0u);
  for (const char* k : {"utilization_1s", "utilization_10s", "share_1s", "share_10s"}) {
    EXPECT_GE(vm[k].get<double>(), 0.0) << k;
    EXPECT_LE(vm[k].get<double>(), 1.0) << k;
  }
  EXPECT_FALSE(vm["counters"].contains("reserved_vram_bytes")) << "host-wide: vram_reserved_used_bytes";
  const std::string list = d->control("list");
  EXPECT_EQ(list.rfind("GPU  utilization ", 0), 0u) << list;
  EXPECT_NE(list.find("VRAM 1024 MiB total: 64 MiB reserved for the daemon ("), std::string::npos) << list;
  EXPECT_NE(list.find("64 MiB assigned to 1 VMs, 896 MiB free"), std::string::npos) << list;
  EXPECT_NE(list.find("UTIL_1S"), std::string::npos) << list;
  a.reset();
  EXPECT_TRUE(d->log_has("vm alpha disconnected: closed by the client (pid "));
  const std::string log = d->log();
  const size_t at = log.find("vm alpha disconnected");
  ASSERT_NE(at, std::string::npos);
  const std::string line = log.substr(at, log.find('\n', at) - at);
  EXPECT_NE(line.find(", GPU time "), std::string::npos) << line;
  EXPECT_NE(line.find(" s attached)"), std::string::npos) << line;
  RecordProperty("disconnect_line", line);
}

TEST(Vgpuctl, UnreachableDaemonIsAClearError) {
  const std::string cmd = std::string(VGPUCTL_PATH) + " --socket /tmp/no-such-vgpud.sock list 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  EXPECT_NE(WEXITSTATUS(pclose(p)), 0);
  EXPECT_NE(out.find("/tmp/no-such-vgpud.sock.ctl"), std::string::npos) << out;
}

// vgpuctl stats reports the settings the host runs with, as the host has
// them: the command line's reach the scheduler.
TEST(Vgpud, StatsReportTheHostsSchedulerSettings) {
  auto d = DaemonProcess::start({"--vram", "1G", "--scheduler", "fifo", "--turn-ms", "5", "--max-gpu-ms", "700",
                                 "--slice-blocks", "8", "--ring-ahead", "off", "--watchdog-ms", "900"});
  ASSERT_TRUE(d);
  const auto stats = nlohmann::json::parse(d->control("stats"));
  EXPECT_EQ(stats["host"], nlohmann::json::parse(R"({"scheduler": "fifo", "turn_ms": 5, "max_gpu_ms": 700,
                                                      "slice_blocks": 8, "ring_ahead": false, "watchdog_ms": 900})"));
  auto defaults = DaemonProcess::start({"--vram", "1G"});
  ASSERT_TRUE(defaults);
  EXPECT_EQ(nlohmann::json::parse(defaults->control("stats"))["host"]["ring_ahead"], true) << "on by default";
}

TEST(Vgpud, SetWeightReachesTheScheduler) {
  auto d = DaemonProcess::start({"--vram", "1G", "--scheduler", "band"});
  ASSERT_TRUE(d);
  auto a = attach_or_null(d->socket(), "a");
  ASSERT_TRUE(a);
  EXPECT_EQ(d->control("set-weight a 30"), "ok\n");
  EXPECT_NE(d->control("stats").find("\"weight\": 30"), std::string::npos);
  EXPECT_EQ(d->control("set-weight a 0").rfind("error:", 0), 0u);
  // Whole numbers only, also when a client other than vgpuctl asks.
  EXPECT_EQ(d->control("set-weight a 2.5"), "error: weight: '2.5' is not a whole number in [1, 100]\n");
  EXPECT_EQ(d->control("set-weight a 7abc"), "error: weight: '7abc' is not a whole number in [1, 100]\n");
  EXPECT_EQ(d->control("set-weight a"), "error: usage: set-weight NAME WEIGHT\n");
  EXPECT_NE(d->control("stats").find("\"weight\": 30"), std::string::npos) << "unchanged by the refusals";
  EXPECT_EQ(d->control("set-weight nobody 3").rfind("error:", 0), 0u);
}

}  // namespace
}  // namespace vgpu::vgpud
