// SPDX-License-Identifier: GPL-2.0-or-later
// The migration commands through a real daemon (docs/migration.md §7):
// a vGPU with a bound channel moves between two sessions of one vgpud
// (its VRAM copied between the two memfds, as QEMU's RAM migration does),
// the dirty log, the refusals that keep the connection, and malformed
// migration messages that close only their own connection.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "driver/runtime.h"
#include "vgpud/client/client_port.h"
#include "vgpud/tests/daemon_process.h"
#include "vgpud/wire.h"

namespace vgpu::vgpud {
namespace {

using testing::attach_or_null;
using testing::checked_workload;
using testing::DaemonProcess;
using testing::start_two_vms;

constexpr uint32_t FREEZE_MS = 2000;
constexpr uint32_t N = 4096;  // floats of the test's buffer

// The VM's migration state as `vgpuctl stats` shows it ("" when not listed).
std::string state_of(const DaemonProcess& d, const std::string& name) {
  const auto j = nlohmann::json::parse(d.control("stats"), nullptr, false);
  if (j.is_discarded()) return {};
  for (const auto& vm : j["vms"])
    if (vm["name"] == name) return vm["state"].get<std::string>();
  return {};
}

// What QEMU's RAM migration does for VRAM: the source's memfd into the destination's.
void copy_vram(const Client& from, const Client& to) {
  const off_t size = lseek(from.vram_fd(), 0, SEEK_END);
  ASSERT_EQ(size, lseek(to.vram_fd(), 0, SEEK_END));
  void* src = mmap(nullptr, size, PROT_READ, MAP_SHARED, from.vram_fd(), 0);
  void* dst = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, to.vram_fd(), 0);
  ASSERT_NE(src, MAP_FAILED);
  ASSERT_NE(dst, MAP_FAILED);
  std::memcpy(dst, src, size);
  munmap(src, size);
  munmap(dst, size);
}

// A VM with an open device, a context (a bound channel) and a filled buffer.
struct Guest {
  std::unique_ptr<ClientPort> port;
  std::unique_ptr<driver::Device> dev;
  std::unique_ptr<driver::Context> ctx;
  driver::Buffer buf{};

  static Result<Guest> start(Client& c, float value) {
    Guest g;
    auto vm = testing::open_context(c);
    if (!vm) return std::unexpected(vm.error());
    g.port = std::move(vm->port);
    g.dev = std::move(vm->dev);
    g.ctx = std::move(vm->ctx);
    auto b = g.ctx->alloc(N * sizeof(float));
    if (!b) return std::unexpected(b.error());
    g.buf = *b;
    if (Status s = g.fill(value); !s) return std::unexpected(s.error());
    return g;
  }
  Status fill(float value) {
    auto f = ctx->fill({buf, N, value});
    if (!f) return std::unexpected(f.error());
    return ctx->wait(*f);
  }
  void close() {
    ctx.reset();
    dev.reset();
    port.reset();
  }
  bool holds(float value) {
    std::vector<float> got(N);
    if (!ctx->download(buf, std::span<float>(got))) return false;
    for (float v : got)
      if (v != value) return false;
    return true;
  }
};

TEST(VgpudMigration, AVgpuWithABoundChannelMovesBetweenTwoSessionsOfOneDaemon) {
  auto t = start_two_vms({"--vram", "1G"}, "src", "dst");
  ASSERT_TRUE(t.d && t.a && t.b);
  auto& [d, a, b] = t;
  EXPECT_EQ(state_of(*d, "src"), "running");
  ASSERT_TRUE(a->dirty_log(true));
  EXPECT_EQ(state_of(*d, "src"), "outgoing");
  auto g = Guest::start(*a, 3.0f);
  ASSERT_TRUE(g) << g.error().what();
  const uint64_t words = lseek(a->vram_fd(), 0, SEEK_END) / 4096 / 64;
  std::vector<uint64_t> bitmap(words);
  auto marked = a->dirty_take(bitmap);
  ASSERT_TRUE(marked) << marked.error().what();
  EXPECT_GT(*marked, 0u) << "the fill's pages were not logged";

  // Not frozen: a vGPU with a bound channel is not exported, and says why.
  auto early = a->state_export();
  ASSERT_FALSE(early);
  EXPECT_NE(early.error().message.find("bad state"), std::string::npos) << early.error().message;
  EXPECT_NE(early.error().message.find("frozen"), std::string::npos) << early.error().message;

  EXPECT_EQ(d->control("set-weight src 20"), "ok\n");  // travels in the image
  ASSERT_TRUE(a->freeze(FREEZE_MS));
  EXPECT_EQ(state_of(*d, "src"), "frozen");
  auto image = a->state_export();
  ASSERT_TRUE(image) << image.error().what();
  EXPECT_EQ(state_of(*d, "src"), "exported");
  std::ranges::fill(bitmap, 0);
  ASSERT_TRUE(a->dirty_take(bitmap));
  auto none = a->dirty_take(bitmap);
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, 0u) << "a frozen vGPU wrote VRAM";
  copy_vram(*a, *b);
  ASSERT_TRUE(b->freeze(FREEZE_MS));
  Status imported = b->state_import(*image);
  ASSERT_TRUE(imported) << imported.error().what();
  EXPECT_EQ(state_of(*d, "dst"), "imported");
  auto again = b->state_export();
  ASSERT_TRUE(again) << again.error().what();
  EXPECT_EQ(*again, *image) << "the destination's image differs from the source's";
  EXPECT_TRUE(d->log_has("vm dst: state imported (" + std::to_string(image->size()) + " bytes), weight 20"));
  const auto stats = nlohmann::json::parse(d->control("stats"));
  for (const auto& vm : stats["vms"]) {
    if (vm["name"] == "dst") {
      EXPECT_EQ(vm["weight"], 20) << "the source's set-weight did not travel";
    }
  }

  // A second import into a vGPU with a bound channel is refused by name;
  // the connection stays.
  Status twice = b->state_import(*image);
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("bad image"), std::string::npos) << twice.error().message;
  EXPECT_FALSE(b->lost());
  b->thaw();
  EXPECT_EQ(state_of(*d, "dst"), "running");

  // A cancelled move: the source thaws and runs on with its data.
  a->thaw();
  EXPECT_EQ(state_of(*d, "src"), "outgoing") << "its dirty log is still on";
  EXPECT_TRUE(g->holds(3.0f));
  EXPECT_TRUE(g->fill(5.0f));
  EXPECT_TRUE(g->holds(5.0f));
  ASSERT_TRUE(a->dirty_log(false));
  g->close();
  EXPECT_EQ(t.stop(), 0);
}

TEST(VgpudMigration, RefusedImagesKeepTheConnection) {
  auto t = start_two_vms({"--vram", "1G"}, "src", "dst");
  ASSERT_TRUE(t.d && t.a && t.b);
  auto& [d, a, b] = t;
  ASSERT_TRUE(a->freeze(FREEZE_MS));
  auto image = a->state_export();
  ASSERT_TRUE(image) << image.error().what();
  ASSERT_TRUE(b->freeze(FREEZE_MS));
  for (size_t cut : {size_t{1}, image->size() / 2, image->size() - 1}) {
    Status s = b->state_import(std::span(*image).first(cut));
    ASSERT_FALSE(s) << "a cut at " << cut;
    EXPECT_NE(s.error().message.find("bad image"), std::string::npos) << s.error().message;
    EXPECT_FALSE(b->lost());
  }
  EXPECT_TRUE(d->log_has("vm dst: state import refused"));
  EXPECT_TRUE(b->state_import(*image));
  b->thaw();
  a->thaw();
  EXPECT_TRUE(checked_workload(*b, 1));
  EXPECT_TRUE(checked_workload(*a, 2));
  EXPECT_EQ(t.stop(), 0);
}

// How many VMs `vgpuctl stats` lists under `name`, and the VRAM assigned to all.
std::pair<int, uint64_t> held(const DaemonProcess& d, const std::string& name) {
  const auto j = nlohmann::json::parse(d.control("stats"), nullptr, false);
  if (j.is_discarded()) return {-1, 0};
  int n = 0;
  for (const auto& vm : j["vms"]) n += vm["name"] == name ? 1 : 0;
  return {n, j["vram_assigned_bytes"].get<uint64_t>()};
}

// attach_or_null's options (the image's settings must match), incoming.
std::unique_ptr<Client> attach_incoming(const std::string& socket, const std::string& name, std::string* error) {
  AttachOptions o = testing::test_options(name);
  o.incoming = true;
  return attach_or_null(socket, o, error);
}

// A test on a daemon of its own (1 GiB) that stops cleanly (exit 0) once
// the test's clients are gone.
class VgpudMigrationOnADaemon : public ::testing::Test {
 protected:
  void SetUp() override {
    d = DaemonProcess::start({"--vram", "1G"});
    ASSERT_TRUE(d);
  }
  void TearDown() override {
    if (d) {
      EXPECT_EQ(d->stop(), 0);
    }
  }
  std::unique_ptr<DaemonProcess> d;
};

// libvirt's move on one daemon (the data's move is the first test's): the
// destination attaches under the domain's name, which its source holds
// (OPT_INCOMING); MIGRATED frees the
// source's vGPU while its QEMU is still connected; the destination's thaw
// is its resume. The name is counted right through.
TEST_F(VgpudMigrationOnADaemon, AnIncomingDestinationSharesTheNameAndMigratedFreesTheSource) {
  std::string why;
  auto a = attach_or_null(d->socket(), "dom");
  ASSERT_TRUE(a);
  EXPECT_FALSE(attach_or_null(d->socket(), "dom", &why)) << "a plain attach took a held name";
  EXPECT_NE(why.find("a VM named 'dom' is attached"), std::string::npos) << why;
  auto b = attach_incoming(d->socket(), "dom", &why);
  ASSERT_TRUE(b) << why;
  EXPECT_TRUE(d->log_has("vm dom connected: pid"));
  EXPECT_TRUE(d->log_has("incoming (a migration's destination)"));
  const auto [both, both_bytes] = held(*d, "dom");
  EXPECT_EQ(both, 2) << "source and destination side by side";
  EXPECT_EQ(d->control("set-weight dom 20"), "ok\n");  // both of them
  const auto weights = nlohmann::json::parse(d->control("stats"))["vms"];
  ASSERT_EQ(weights.size(), 2u);
  for (const auto& vm : weights) EXPECT_EQ(vm["weight"], 20) << "set-weight missed one VM of the name";
  EXPECT_FALSE(attach_incoming(d->socket(), "dom", &why)) << "a second destination";
  EXPECT_NE(why.find("already has an incoming migration's destination"), std::string::npos) << why;

  // MIGRATED frees only a source whose state went out.
  Status early = a->migrated();
  ASSERT_FALSE(early);
  EXPECT_NE(early.error().message.find("not exported"), std::string::npos) << early.error().message;
  EXPECT_FALSE(a->lost());

  ASSERT_TRUE(a->dirty_log(true));
  ASSERT_TRUE(a->freeze(FREEZE_MS));
  auto image = a->state_export();
  ASSERT_TRUE(image) << image.error().what();
  copy_vram(*a, *b);
  ASSERT_TRUE(b->freeze(FREEZE_MS));
  ASSERT_TRUE(b->state_import(*image));
  ASSERT_TRUE(a->dirty_log(false));  // QEMU's cleanup comes before its completion notifier
  Status done = a->migrated();
  ASSERT_TRUE(done) << done.error().what();
  EXPECT_TRUE(d->log_has("vm dom: migrated: its vGPU is freed (VRAM 64 MiB)"));
  const auto [one, one_bytes] = held(*d, "dom");
  EXPECT_EQ(one, 1) << "the source is listed after MIGRATED";
  EXPECT_EQ(one_bytes * 2, both_bytes) << "the source's VRAM is still assigned";
  EXPECT_EQ(state_of(*d, "dom"), "imported");
  EXPECT_TRUE(a->migrated()) << "MIGRATED twice is answered";
  b->thaw();
  EXPECT_TRUE(d->log_has("vm dom: resumed after its migration"));
  EXPECT_EQ(state_of(*d, "dom"), "running");

  // The source's QEMU resumed after all: its thaw is refused by name and
  // the device is lost; the destination runs on.
  a->thaw();
  EXPECT_TRUE(a->lost());
  EXPECT_NE(a->lost_reason().find("migrated away"), std::string::npos) << a->lost_reason();
  EXPECT_TRUE(checked_workload(*b, 1));
  a.reset();
  EXPECT_TRUE(d->log_has("vm dom disconnected"));
  EXPECT_FALSE(attach_or_null(d->socket(), "dom", &why)) << "the source's disconnect gave the name away twice";
  b.reset();
  std::unique_ptr<Client> again;  // the name is free once the destination's session is torn down
  for (int i = 0; i < 200 && !again; ++i) {
    again = attach_or_null(d->socket(), "dom", &why);
    if (!again) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(again) << why;
}

// After MIGRATED anything but THAW and MIGRATED ends the connection (the
// vGPU is gone): a read is answered by the client itself, all ones.
TEST_F(VgpudMigrationOnADaemon, AnAccessAfterMigratedClosesThatConnection) {
  auto a = attach_or_null(d->socket(), "gone");
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->freeze(FREEZE_MS));
  ASSERT_TRUE(a->state_export());
  ASSERT_TRUE(a->migrated());
  EXPECT_EQ(a->read32(proto::REGION_BAR0, 0), ~uint32_t{0});
  EXPECT_TRUE(a->lost());
  EXPECT_TRUE(d->log_has("command 9 after the VM migrated away"));
}

// Each of these ends its own connection with a log line naming it; the
// victim's work is untouched.
TEST_F(VgpudMigrationOnADaemon, MalformedMigrationMessagesCloseThatConnectionOnly) {
  auto victim = attach_or_null(d->socket(), "victim");
  ASSERT_TRUE(victim);
  const int memfd = memfd_create("test", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  const int fds[1] = {memfd};
  const proto::FreezeRequest zero{0, 0};
  const proto::FreezeRequest too_long{proto::MAX_FREEZE_MS + 1, 0};
  const proto::DirtyLogRequest two{2, 0};
  const proto::StateImage huge{proto::MAX_IMAGE_BYTES + 1};
  const proto::StateImage some{64};
  struct Case {
    std::vector<std::byte> message;
    bool with_fd;
    std::string logged;
  };
  const Case cases[] = {
      {proto::command(1, proto::Command::freeze, proto::bytes_of(zero)), false, "freeze: timeout 0 ms outside"},
      {proto::command(1, proto::Command::freeze, proto::bytes_of(too_long)), false, "freeze: timeout 60001 ms"},
      {proto::command(1, proto::Command::dirty_log, proto::bytes_of(two)), false, "dirty log: on 2"},
      {proto::command(1, proto::Command::thaw, proto::bytes_of(two)), false, "where none belongs"},
      {proto::command(1, proto::Command::state_import, proto::bytes_of(huge)), true, "state image: 268435457 bytes"},
      {proto::command(1, proto::Command::state_import, proto::bytes_of(some)), false, "with 0 descriptors"},
      {proto::read_request(1, proto::REGION_BAR0, 0), true, "command 9 came with 1 descriptors"},
  };
  // One name per case: the daemon gives a name back after its disconnect
  // line, so a second "bad" could find the first one's still held.
  int k = 0;
  for (const Case& c : cases) {
    const std::string name = "bad" + std::to_string(k++);
    auto client = attach_or_null(d->socket(), name);
    ASSERT_TRUE(client);
    ASSERT_TRUE(
        send_all(client->socket_fd(), c.message, c.with_fd ? std::span<const int>(fds) : std::span<const int>{}));
    EXPECT_TRUE(d->log_has(c.logged)) << c.logged << "\n" << d->log();
    EXPECT_TRUE(d->log_has("vm " + name + " disconnected"));
    client.reset();
  }
  // An image descriptor shorter than it says: a refusal, not a hang or a close.
  {
    auto client = attach_or_null(d->socket(), "short");
    ASSERT_TRUE(client);
    ASSERT_TRUE(
        send_all(client->socket_fd(), proto::command(1, proto::Command::state_import, proto::bytes_of(some)), fds));
    auto r = recv_message(client->socket_fd(), proto::MAX_DAEMON_MESSAGE, false);
    while (r && r->header.command == static_cast<uint16_t>(proto::Command::layout))  // the daemon's own, unasked
      r = recv_message(client->socket_fd(), proto::MAX_DAEMON_MESSAGE, false);
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->header.flags & proto::FLAG_ERROR);
    EXPECT_EQ(r->header.error, static_cast<uint32_t>(proto::Refusal::bad_image));
    EXPECT_TRUE(d->log_has("the image descriptor holds 0 of 64 bytes"));
  }
  // A pipe for the image: refused, not read (a read could block the session).
  {
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    auto client = attach_or_null(d->socket(), "pipe");
    ASSERT_TRUE(client);
    const int pipe_fd[1] = {p[0]};
    ASSERT_TRUE(
        send_all(client->socket_fd(), proto::command(1, proto::Command::state_import, proto::bytes_of(some)), pipe_fd));
    EXPECT_TRUE(d->log_has("the image descriptor is not a memfd or file"));
    close(p[0]);
    close(p[1]);
  }
  close(memfd);
  EXPECT_TRUE(checked_workload(*victim, 4));
  EXPECT_FALSE(victim->lost());
}

}  // namespace
}  // namespace vgpu::vgpud
