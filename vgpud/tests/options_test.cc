// SPDX-License-Identifier: GPL-2.0-or-later
// vgpud's command line and its share arithmetic.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "driver/runtime.h"
#include "vgpud/options.h"
#include "vgpud/share_history.h"

namespace vgpu::vgpud {
namespace {

TEST(VgpudOptions, SizesAreWholeMib) {
  EXPECT_EQ(parse_size("512M").value(), 512 * MiB);
  EXPECT_EQ(parse_size("4G").value(), 4 * GiB);
  EXPECT_EQ(parse_size("2048K").value(), 2 * MiB);
  EXPECT_EQ(parse_size("1048576").value(), MiB);
  EXPECT_FALSE(parse_size("3"));
  EXPECT_FALSE(parse_size("0M"));
  EXPECT_FALSE(parse_size("-1G"));
  EXPECT_FALSE(parse_size("1T"));
  EXPECT_FALSE(parse_size("G"));
  EXPECT_FALSE(parse_size("99999999999999999999G"));
}

TEST(VgpudOptions, CommandLineSetsTheConfig) {
  auto cl = parse_command_line({"--socket",       "/tmp/s", "--vram",       "1G",  "--scheduler",  "band",
                                "--max-vms",      "3",      "--yield-us",   "800", "--group",      "0",
                                "--backend",      "model",  "--turn-ms",    "0",   "--max-gpu-ms", "250",
                                "--slice-blocks", "16",     "--ring-ahead", "off"});
  ASSERT_TRUE(cl) << cl.error().message;
  EXPECT_EQ(cl->config.socket, "/tmp/s");
  EXPECT_EQ(cl->config.vram_bytes, GiB);
  EXPECT_EQ(cl->config.scheduler, "band");
  EXPECT_EQ(cl->config.max_vms, 3u);
  EXPECT_EQ(cl->config.sched_params.yield_window_ns, 800'000u);
  EXPECT_EQ(cl->config.group, gid_t{0});
  EXPECT_EQ(cl->config.turn_ms, 0u);
  EXPECT_EQ(cl->config.max_gpu_ms, 250u);
  EXPECT_EQ(cl->config.slice_blocks, 16u);
  EXPECT_FALSE(cl->config.ring_ahead);
  auto on = parse_command_line({"--socket", "/tmp/s", "--ring-ahead", "on"});
  ASSERT_TRUE(on) << on.error().message;
  EXPECT_TRUE(on->config.ring_ahead);
}

TEST(VgpudOptions, TimeLimitsDefaultAsTheEmbeddedDeviceForTwoVms) {
  auto cl = parse_command_line({"--socket", "/tmp/s", "--max-vms", "2"});
  ASSERT_TRUE(cl) << cl.error().message;
  EXPECT_EQ(cl->config.turn_ms, uint32_t{VGPU_OPT_TURN_MS_DEFAULT});
  EXPECT_EQ(cl->config.max_gpu_ms, uint32_t{VGPU_OPT_MAX_GPU_MS_DEFAULT});
  EXPECT_EQ(cl->config.ring_ahead, VGPU_OPT_RING_AHEAD_DEFAULT != 0);
}

// With more VMs the default maximum shrinks so that the others' legal work
// (the bound of docs/scheduler.md) stays inside the driver's fence wait;
// a maximum given on the command line is kept.
TEST(VgpudOptions, DefaultMaxGpuMsKeepsEveryFenceWaitInsideTheDriversTimeout) {
  EXPECT_EQ(DRIVER_WAIT_MS * uint64_t{1'000'000}, driver::DeviceOptions{}.timeout_ns) << "the driver's default wait";
  for (uint32_t vms : {2u, 3u, 4u, 8u, 64u}) {
    auto cl = parse_command_line({"--socket", "/tmp/s", "--max-vms", std::to_string(vms)});
    ASSERT_TRUE(cl) << cl.error().message;
    const uint64_t worst_ms = uint64_t{vms - 1} * (cl->config.turn_ms + cl->config.max_gpu_ms);
    EXPECT_LE(worst_ms, OTHERS_WAIT_BUDGET_MS) << vms << " VMs";
    EXPECT_GT(cl->config.max_gpu_ms, 0u) << "never 'no limit'";
  }
  EXPECT_EQ(default_max_gpu_ms(8, 30), 9000u / 7 - 30);
  auto given = parse_command_line({"--socket", "/tmp/s", "--max-vms", "8", "--max-gpu-ms", "4000"});
  ASSERT_TRUE(given);
  EXPECT_EQ(given->config.max_gpu_ms, 4000u);
}

// --backend cuda (docs/cuda-worker.md): one worker process per VM, on the
// GPU unless --worker-device fake (tests); the worker's binary found at
// the daemon's start unless given; both refused without cuda; 'worker',
// the old name, refused with the new one.
TEST(VgpudOptions, CudaIsAWorkerPerVm) {
  auto cl = parse_command_line({"--socket", "/tmp/s", "--backend", "cuda"});
  ASSERT_TRUE(cl) << cl.error().message;
  EXPECT_EQ(cl->config.engine_backend, gpu::EngineBackend::worker);
  EXPECT_EQ(cl->config.worker_device, "cuda");
  EXPECT_EQ(cl->config.worker_binary, "") << "found by the daemon (find_worker_binary)";
  cl = parse_command_line(
      {"--socket", "/tmp/s", "--backend", "cuda", "--worker-device", "fake", "--worker-binary", "/opt/vgpu-worker"});
  ASSERT_TRUE(cl) << cl.error().message;
  EXPECT_EQ(cl->config.worker_device, "fake");
  EXPECT_EQ(cl->config.worker_binary, "/opt/vgpu-worker");
  cl = parse_command_line({"--socket", "/tmp/s", "--backend", "model"});
  ASSERT_TRUE(cl) << cl.error().message;
  EXPECT_EQ(cl->config.engine_backend, gpu::EngineBackend::model);
  for (const char* opt : {"--worker-device", "--worker-binary"}) {
    cl = parse_command_line({"--socket", "/tmp/s", opt, "fake"});
    ASSERT_FALSE(cl) << opt;
    EXPECT_EQ(cl.error().message, "--worker-device and --worker-binary go with --backend cuda");
  }
  cl = parse_command_line({"--socket", "/tmp/s", "--backend", "cuda", "--worker-device", "gpu"});
  ASSERT_FALSE(cl);
  EXPECT_EQ(cl.error().message, "worker-device: 'gpu' is not one of cuda, fake");
  for (const char* old : {"worker", "fake_device"}) {
    cl = parse_command_line({"--socket", "/tmp/s", "--backend", old});
    ASSERT_FALSE(cl) << old;
    EXPECT_EQ(cl.error().message,
              std::string(old) == "worker"
                  ? "backend: 'worker' is now 'cuda' (vgpud's cuda back end is one worker process per VM)"
                  : "backend: 'fake_device' is not one of model, cuda");
  }
}

// An executable file at `path` (its directories made).
void make_executable(const std::string& path) {
  ASSERT_EQ(system(("mkdir -p \"$(dirname '" + path + "')\" && : > '" + path + "' && chmod +x '" + path + "'").c_str()),
            0);
}

// Where vgpud finds its worker without --worker-binary: beside it, then a
// build tree's ../worker, then the installed one; none: each path named.
TEST(VgpudOptions, TheWorkerIsFoundBesideVgpudThenInstalled) {
  char tmpl[] = "/tmp/vgpud-worker-find-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, vgpud = dir + "/vgpud/vgpud", installed = dir + "/libexec/vgpu-worker";
  make_executable(vgpud);
  auto none = find_worker_binary(vgpud, installed);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message.rfind("--backend cuda: no vgpu-worker executable found (give --worker-binary PATH); "
                                       "tried " +
                                           dir + "/vgpud/vgpu-worker (",
                                       0),
            0u)
      << none.error().message;
  EXPECT_NE(none.error().message.find(dir + "/vgpud/../worker/vgpu-worker ("), std::string::npos);
  EXPECT_NE(none.error().message.find(installed + " (No such file or directory)"), std::string::npos);
  make_executable(installed);
  EXPECT_EQ(find_worker_binary(vgpud, installed).value_or(""), installed);
  make_executable(dir + "/worker/vgpu-worker");
  EXPECT_EQ(find_worker_binary(vgpud, installed).value_or(""), dir + "/vgpud/../worker/vgpu-worker");
  make_executable(dir + "/vgpud/vgpu-worker");
  EXPECT_EQ(find_worker_binary(vgpud, installed).value_or(""), dir + "/vgpud/vgpu-worker");
  ASSERT_EQ(system(("rm -rf '" + dir + "'").c_str()), 0);
}

TEST(VgpudOptions, EmptyPathsAreRefusedByName) {
  for (const char* opt : {"--socket", "--control", "--worker-binary"}) {
    auto cl = parse_command_line({"--backend", "cuda", opt, ""});
    ASSERT_FALSE(cl) << opt;
    EXPECT_EQ(cl.error().message, std::string(opt) + ": empty path");
  }
}

TEST(VgpudOptions, ErrorsNameTheOption) {
  auto starts = [](const std::vector<std::string>& args, const std::string& prefix) {
    auto cl = parse_command_line(args);
    return !cl && cl.error().message.rfind(prefix, 0) == 0;
  };
  // The device's options: the option table's messages (as QEMU's, the C
  // API's and the benches'; tests/option_table_test.cc).
  EXPECT_TRUE(starts({"--socket", "/s", "--scheduler", "lottery"}, "scheduler: 'lottery' is not one of"));
  EXPECT_TRUE(starts({"--socket", "/s", "--max-vms", "0"}, "--max-vms"));
  EXPECT_TRUE(starts({"--socket", "/s", "--backend", "nvidia"}, "backend"));
  EXPECT_TRUE(starts({"--socket", "/s", "--backend", "gpu"}, "backend: 'gpu' is not one of model, cuda"));
  EXPECT_TRUE(starts({"--socket", "/s", "--group", "no-such-group-here"}, "--group"));
  EXPECT_TRUE(starts({"--socket", "/s", "--vram"}, "--vram: 1 required SIZE missing"));
  EXPECT_TRUE(starts({"--socket", "/s", "--frobnicate", "1"}, "unknown option '--frobnicate'"));
  EXPECT_TRUE(starts({"--socket", "/s", "--max-vms", "7abc"}, "--max-vms: '7abc' is not a whole number in [1, 64]"));
  EXPECT_TRUE(starts({"--socket", "/s", "--yield-us", "2.5"}, "--yield-us: '2.5'"));
  EXPECT_TRUE(starts({"--socket", "/s", "--turn-ms", "1001"}, "turn-ms: 1001 ms is above the maximum 1000 ms"));
  EXPECT_TRUE(starts({"--socket", "/s", "--max-gpu-ms", "-1"}, "max-gpu-ms: '-1' is not a whole number of ms"));
  EXPECT_TRUE(starts({"--socket", "/s", "--slice-blocks", "16777216"}, "slice-blocks: 16777216 blocks is above"));
  EXPECT_TRUE(starts({"--socket", "/s", "--watchdog-ms", "3600001"}, "watchdog-ms: 3600001 ms is above"));
  EXPECT_TRUE(starts({"--socket", "/s", "--ring-ahead", "yes"}, "ring-ahead: 'yes' is not on or off"));
  EXPECT_TRUE(parse_command_line({"--help"})->help);
  EXPECT_TRUE(parse_command_line({"--version"})->version);
}

TEST(VgpudOptions, OptEqualsValueAndOptValueAreTheSame) {
  auto a = parse_command_line({"--socket=/tmp/s", "--vram=1G", "--max-vms=3", "--ring-ahead=off"});
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->config.socket, "/tmp/s");
  EXPECT_EQ(a->config.vram_bytes, GiB);
  EXPECT_EQ(a->config.max_vms, 3u);
  EXPECT_FALSE(a->config.ring_ahead);
}

// No --socket: $VGPUD_SOCKET, else the systemd unit's /run/vgpud/vgpud.sock.
TEST(VgpudOptions, DefaultSocketIsTheEnvironmentsOrTheSystemOne) {
  unsetenv(SOCKET_ENV);
  EXPECT_EQ(parse_command_line({})->config.socket, DEFAULT_SOCKET);
  setenv(SOCKET_ENV, "/tmp/mine.sock", 1);
  EXPECT_EQ(parse_command_line({})->config.socket, "/tmp/mine.sock");
  EXPECT_EQ(parse_command_line({"--socket", "/tmp/s"})->config.socket, "/tmp/s");
  unsetenv(SOCKET_ENV);
}

// --help and the man page come from the one table: every option is in both.
TEST(VgpudOptions, HelpAndManPageDescribeEveryOption) {
  const std::string help = usage(), man = man_page();
  for (const OptionSpec& o : options()) {
    EXPECT_NE(help.find(std::string(o.name) + " " + o.value), std::string::npos) << o.name;
    EXPECT_GT(std::string(o.help).size(), 10u) << o.name << " has a description";
    std::string roff_name;
    for (const char* c = o.name; *c; ++c) roff_name += *c == '-' ? std::string("\\-") : std::string(1, *c);
    EXPECT_NE(man.find(roff_name), std::string::npos) << o.name;
  }
}

TEST(ShareHistory, ShareIsGpuTimeOverAllVmsInTheWindow) {
  ShareHistory h;
  const uint64_t S = 1'000'000'000;
  h.sample(0, {{1, 0}, {2, 0}});
  h.sample(S / 2, {{1, 100}, {2, 300}});
  h.sample(S, {{1, 200}, {2, 600}});
  EXPECT_DOUBLE_EQ(h.share(1, S), 0.25);
  EXPECT_DOUBLE_EQ(h.share(2, S), 0.75);
  h.sample(2 * S, {{1, 1200}, {2, 600}});  // only vm 1 ran in the last second
  EXPECT_DOUBLE_EQ(h.share(1, S), 1.0);
  EXPECT_DOUBLE_EQ(h.share(3, S), 0.0);
}

// One busy VM alone has all of the share whatever it uses; utilization
// is its GPU time over wall time.
TEST(ShareHistory, UtilizationIsGpuTimeOverWallTime) {
  ShareHistory h;
  const uint64_t S = 1'000'000'000;
  h.sample(0, {{1, 0}, {2, 0}});
  h.sample(S, {{1, S / 10}, {2, 0}});
  EXPECT_DOUBLE_EQ(h.share(1, S), 1.0);
  EXPECT_DOUBLE_EQ(h.utilization(1, S), 0.1);
  EXPECT_DOUBLE_EQ(h.utilization(2, S), 0.0);
  h.sample(2 * S, {{1, S / 10 + S / 4}, {2, S / 2}});
  EXPECT_DOUBLE_EQ(h.utilization(1, S), 0.25);
  EXPECT_DOUBLE_EQ(h.utilization(2, S), 0.5);
  EXPECT_DOUBLE_EQ(h.gpu_utilization(S), 0.75);
  EXPECT_DOUBLE_EQ(h.gpu_utilization(10 * S), (0.35 + 0.5) / 2) << "over the 2 s there are";
  EXPECT_DOUBLE_EQ(ShareHistory().gpu_utilization(S), 0.0) << "no samples";
}

TEST(ShareHistory, AVmThatJoinedCountsFromZero) {
  ShareHistory h;
  h.sample(0, {{1, 50}});
  h.sample(100, {{1, 150}, {2, 100}});
  EXPECT_DOUBLE_EQ(h.share(2, 1000), 0.5);
}

}  // namespace
}  // namespace vgpu::vgpud
