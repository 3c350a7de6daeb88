// SPDX-License-Identifier: GPL-2.0-or-later
// Clients of the daemon pointed at something that is not vgpud: a silent
// peer (accepts, never answers) and a foreign one (answers text). The
// client library and every vgpuctl command give up in the time asked,
// with a message that names the socket, and vgpuctl exits 1. Then
// vgpuctl's and vgpud's argument checks (usage errors exit 2).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>

#include "vgpud/client/client.h"
#include "vgpud/tests/fake_peer.h"

namespace vgpu::vgpud {
namespace {

using testing::FakePeer;
using Clock = std::chrono::steady_clock;

constexpr uint32_t SHORT_MS = 300;
// Generous: the point is "in about the time asked", not a race.
constexpr auto GIVE_UP_WITHIN = std::chrono::seconds(3);

std::pair<int, std::string> run(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string vgpuctl(const std::string& args) { return std::string(VGPUCTL_PATH) + " " + args; }

TEST(ClientPeers, SilentPeerTimesOutNamingTheSocket) {
  auto peer = FakePeer::start(FakePeer::Kind::silent);
  ASSERT_TRUE(peer);
  AttachOptions o;
  o.timeout_ms = SHORT_MS;
  const auto t0 = Clock::now();
  auto c = Client::attach(peer->socket(), o);
  ASSERT_FALSE(c);
  EXPECT_LT(Clock::now() - t0, GIVE_UP_WITHIN);
  EXPECT_EQ(c.error().refusal, proto::Refusal::none);
  EXPECT_EQ(c.error().message, "vgpud at " + peer->socket() + " did not answer in 0.3 s");
}

TEST(ClientPeers, ForeignPeerIsNamedAsNotVgpud) {
  auto peer = FakePeer::start(FakePeer::Kind::foreign);
  ASSERT_TRUE(peer);
  AttachOptions o;
  o.timeout_ms = SHORT_MS;
  auto c = Client::attach(peer->socket(), o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, peer->socket() + " does not speak the vgpud protocol");
}

TEST(ClientPeers, TimeoutComesFromTheEnvironment) {
  auto peer = FakePeer::start(FakePeer::Kind::silent);
  ASSERT_TRUE(peer);
  setenv(TIMEOUT_ENV, "0.2", 1);
  auto c = Client::attach(peer->socket(), AttachOptions{});
  setenv(TIMEOUT_ENV, "soon", 1);
  auto bad = Client::attach(peer->socket(), AttachOptions{});
  unsetenv(TIMEOUT_ENV);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, "vgpud at " + peer->socket() + " did not answer in 0.2 s");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "VGPUD_TIMEOUT: 'soon' is not a number of seconds in (0, 3600]");
}

const char* const EVERY_COMMAND[] = {"list",
                                     "stats",
                                     "stats --json",
                                     "set-weight web1 5",
                                     "watch --interval 1",
                                     "plot --seconds 1 --png /tmp/vgpud-peer-test.png"};

TEST(VgpuctlPeers, EveryCommandGivesUpOnASilentPeer) {
  auto peer = FakePeer::start(FakePeer::Kind::silent);
  ASSERT_TRUE(peer);
  for (const char* cmd : EVERY_COMMAND) {
    const auto t0 = Clock::now();
    auto [rc, out] = run(vgpuctl("--socket " + peer->socket() + " --timeout 0.3 " + cmd));
    EXPECT_LT(Clock::now() - t0, GIVE_UP_WITHIN) << cmd;
    EXPECT_EQ(rc, 1) << cmd;
    EXPECT_EQ(out, "vgpuctl: vgpud at " + peer->socket() + ".ctl did not answer in 0.3 s\n") << cmd;
  }
  auto [rc, out] = run("VGPUD_TIMEOUT=0.2 " + vgpuctl("--socket " + peer->socket() + " list"));
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("did not answer in 0.2 s"), std::string::npos) << out;
}

TEST(VgpuctlPeers, EveryCommandRefusesAForeignPeer) {
  auto peer = FakePeer::start(FakePeer::Kind::foreign);
  ASSERT_TRUE(peer);
  for (const char* cmd : EVERY_COMMAND) {
    auto [rc, out] = run(vgpuctl("--socket " + peer->socket() + " --timeout 2 " + cmd));
    EXPECT_EQ(rc, 1) << cmd;
    EXPECT_EQ(out, "vgpuctl: " + peer->socket() + ".ctl does not speak the vgpud protocol\n") << cmd;
  }
}

// Usage errors: exit 2, the option or argument named. No daemon needed:
// they are refused before any connection.
TEST(VgpuctlArguments, UsageErrorsNameTheProblemAndExit2) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "a command is missing"},
      {"--bogus list", "--bogus"},
      {"list --bogus", "--bogus"},
      {"frobnicate", "frobnicate"},
      {"set-weight", "set-weight: VM is required"},
      {"set-weight web1", "set-weight: WEIGHT is required"},
      {"set-weight web1 2.5", "WEIGHT: '2.5' is not a whole number in [1, 100]"},
      {"set-weight web1 7abc", "WEIGHT: '7abc' is not a whole number in [1, 100]"},
      {"set-weight web1 0", "WEIGHT: '0' is not a whole number in [1, 100]"},
      {"watch --interval 0", "--interval: '0' is not a number of seconds above 0"},
      {"watch --interval", "--interval"},
      {"plot --seconds 1", "--png is required"},
      {"--timeout 0 list", "--timeout: '0'"},
      {"--socket", "--socket"},
  };
  for (const auto& [args, want] : cases) {
    auto [rc, out] = run(vgpuctl(args));
    EXPECT_EQ(rc, 2) << args << ": " << out;
    EXPECT_NE(out.find(want), std::string::npos) << args << ": " << out;
  }
  auto [rc, out] = run("VGPUD_TIMEOUT=x " + vgpuctl("list"));
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("VGPUD_TIMEOUT: 'x'"), std::string::npos) << out;
}

TEST(VgpuctlArguments, OptValueAndOptEqualsValueAreTheSame) {
  auto peer = FakePeer::start(FakePeer::Kind::foreign);
  ASSERT_TRUE(peer);
  auto [rc, out] = run(vgpuctl("--socket=" + peer->socket() + " --timeout=2 list"));
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find(peer->socket() + ".ctl does not speak"), std::string::npos) << out;
  auto [vrc, version] = run(vgpuctl("--version"));
  EXPECT_EQ(vrc, 0);
  EXPECT_EQ(version.rfind("vgpuctl (vgpu) ", 0), 0u) << version;
}

TEST(VgpuctlArguments, DefaultSocketComesFromVgpudSocket) {
  auto [rc, out] = run("VGPUD_SOCKET=/tmp/vgpud-no-such.sock " + vgpuctl("list"));
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("/tmp/vgpud-no-such.sock.ctl"), std::string::npos) << out;
}

TEST(VgpudArguments, UsageErrorsExit2AndHelpVersionManExit0) {
  const std::pair<const char*, const char*> cases[] = {
      {"--bogus", "--bogus"},
      {"--vram", "--vram"},
      {"--max-vms 7abc", "--max-vms: '7abc' is not a whole number in [1, 64]"},
      {"--max-vms=2.5", "--max-vms: '2.5'"},
      {"--turn-ms", "--turn-ms"},
      {"stray", "stray"},
  };
  for (const auto& [args, want] : cases) {
    auto [rc, out] = run(std::string(VGPUD_PATH) + " " + args);
    EXPECT_EQ(rc, 2) << args << ": " << out;
    EXPECT_NE(out.find(want), std::string::npos) << args << ": " << out;
  }
  auto [hrc, help] = run(std::string(VGPUD_PATH) + " --help");
  EXPECT_EQ(hrc, 0);
  EXPECT_NE(help.find("--max-gpu-ms MS"), std::string::npos) << help;
  EXPECT_NE(help.find("Default: $VGPUD_SOCKET,"), std::string::npos) << help;
  auto [vrc, version] = run(std::string(VGPUD_PATH) + " --version");
  EXPECT_EQ(vrc, 0);
  EXPECT_EQ(version.rfind("vgpud (vgpu) ", 0), 0u) << version;
  auto [mrc, man] = run(std::string(VGPUD_PATH) + " --man");
  EXPECT_EQ(mrc, 0);
  EXPECT_EQ(man.rfind(".TH VGPUD 8", 0), 0u) << man;
  EXPECT_NE(man.find("\\-\\-slice\\-blocks"), std::string::npos) << "every option in the man page";
}

}  // namespace
}  // namespace vgpu::vgpud
