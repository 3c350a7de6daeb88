// SPDX-License-Identifier: GPL-2.0-or-later
// At least 100,000 malformed messages against a running daemon while a
// victim VM runs checked workloads: random bytes on fresh connections, and
// valid messages mutated (a field changed, bytes flipped, cut short or
// padded) on attached ones. The daemon must neither crash nor hurt the
// victim; each bad connection is closed alone.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

#include "vgpud/tests/daemon_process.h"
#include "vgpu/regs.h"

namespace vgpu::vgpud {
namespace {

using testing::attach_or_null;
using testing::checked_workload;
using testing::DaemonProcess;

constexpr uint64_t RANDOM_MESSAGES = 20'000;
constexpr uint64_t MUTATED_MESSAGES = 90'000;

// Reads whatever the daemon sent, without waiting; false once it closed.
bool drain(int fd) {
  char buf[65536];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

// A valid message of an attached client, then maybe mutated.
std::vector<std::byte> mutated(std::mt19937_64& rng, uint16_t id, bool& fatal) {
  // Any offset of its own BAR0, BAR1 or BAR3 (the first 16 MiB).
  const uint32_t regions[] = {proto::REGION_BAR0, proto::REGION_BAR1, proto::REGION_BAR3};
  const uint32_t region = regions[rng() % 3];
  const uint64_t limit = region == proto::REGION_BAR0 ? regs::pci::BAR0_SIZE : 16 * MiB;
  const uint64_t offset = (rng() % limit) & ~uint64_t{3};
  std::vector<std::byte> m = rng() % 2 ? proto::read_request(id, region, offset)
                                       : proto::write_request(id, region, offset, static_cast<uint32_t>(rng()));
  fatal = false;
  switch (rng() % 100) {
    case 0:
      m[rng() % m.size()] ^= std::byte{static_cast<uint8_t>(1u << (rng() % 8))};
      fatal = true;
      break;
    case 1:
      m.resize(rng() % m.size());
      fatal = true;
      break;
    case 2:
      m.push_back(std::byte{0});
      fatal = true;
      break;
    case 3:
      m[2] = std::byte{static_cast<uint8_t>(rng())};
      fatal = true;
      break;  // command
    case 4:
      m[0] = std::byte{static_cast<uint8_t>(id + 2)};
      fatal = true;
      break;  // out of order
    default: break;
  }
  return m;
}

TEST(VgpudFuzz, MalformedStreamsNeverHurtTheDaemonOrAVictim) {
  auto d = DaemonProcess::start({"--vram", "1G"});
  ASSERT_TRUE(d);
  auto victim = attach_or_null(d->socket(), "victim");
  ASSERT_TRUE(victim);
  std::atomic<bool> stop{false};
  Status victim_status;
  int runs = 0;
  std::thread t([&] {
    while (!stop && victim_status) victim_status = checked_workload(*victim, static_cast<uint32_t>(runs++));
    if (!victim_status) std::printf("at failure: %s\n", d->control("stats").c_str());
  });

  std::mt19937_64 rng(12);
  uint64_t sent = 0, connections = 0;
  // Random bytes on fresh connections: one message's worth each (a header
  // and up to 200 bytes).
  for (uint64_t i = 0; i < RANDOM_MESSAGES; ++i) {
    auto fd = connect_unix(d->socket());
    ASSERT_TRUE(fd) << "the daemon stopped accepting after " << sent << " messages";
    ++connections;
    std::vector<std::byte> junk(16 + rng() % 200);
    for (auto& b : junk) b = std::byte{static_cast<uint8_t>(rng())};
    if (i % 3 == 0) {  // a plausible size, so that the payload is read too
      const uint32_t size = static_cast<uint32_t>(junk.size());
      std::memcpy(junk.data() + 4, &size, 4);
    }
    (void)send_all(fd->get(), junk);
    ++sent;
  }
  // Mutated valid messages on attached connections.
  uint64_t mutated_sent = 0;
  while (mutated_sent < MUTATED_MESSAGES) {
    auto c = attach_or_null(d->socket(), "fuzz");
    if (!c) {  // the previous fuzz VM is still being torn down
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    ++connections;
    const int fd = c->socket_fd();
    uint16_t id = 1;
    bool alive = true;
    while (alive && mutated_sent < MUTATED_MESSAGES) {
      bool fatal = false;
      auto m = mutated(rng, id++, fatal);
      if (!send_all(fd, m)) break;
      ++mutated_sent;
      ++sent;
      alive = drain(fd);
      if (fatal) break;  // the daemon closes it; start a new one
    }
  }
  stop = true;
  t.join();
  EXPECT_TRUE(d->running()) << "the daemon died";
  EXPECT_TRUE(victim_status) << victim_status.error().what();
  if (!victim_status) {
    const std::string log = d->log();
    std::string lines;
    size_t at = 0;
    for (size_t nl; (nl = log.find('\n', at)) != std::string::npos; at = nl + 1) {
      const std::string line = log.substr(at, nl - at);
      if (line.find("victim") != std::string::npos) lines += line + "\n";
    }
    std::printf("the daemon's lines about the victim:\n%s",
                lines.substr(lines.size() > 6000 ? lines.size() - 6000 : 0).c_str());
  }
  EXPECT_GE(sent, 100'000u);
  EXPECT_GE(runs, 1);
  EXPECT_TRUE(checked_workload(*victim, 7)) << "the victim after the fuzzing";
  // Connections the daemon turned away at its bound never saw a message:
  // they are not counted as fuzzed.
  const std::string log = d->log();
  uint64_t refused = 0;
  for (size_t at = 0; (at = log.find("connections open (at most", at)) != std::string::npos; ++at) ++refused;
  sent -= std::min(sent, refused);
  EXPECT_GE(sent, 100'000u) << refused << " connections were refused";
  RecordProperty("messages", static_cast<int>(sent));
  RecordProperty("connections", static_cast<int>(connections));
  RecordProperty("victim_runs", runs);
  std::printf(
      "fuzz: %llu messages on %llu connections (%llu refused at the connection bound); the victim ran %d "
      "checked workloads\n",
      static_cast<unsigned long long>(sent), static_cast<unsigned long long>(connections),
      static_cast<unsigned long long>(refused), runs);
  EXPECT_EQ(d->stop(), 0);
}

}  // namespace
}  // namespace vgpu::vgpud
