// SPDX-License-Identifier: GPL-2.0-or-later
#include "capi/vgpu_capi.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/device/backend.h"
#include "gpu/mem/vram.h"
#include "vgpu/regs.h"

namespace {

using namespace vgpu;

VgpuBackendConfig default_config() {
  VgpuBackendConfig c;
  vgpu_backend_config_init(&c);
  c.vram_bytes = 64 * MiB;
  c.channels = 8;
  c.scheduler = "fifo";
  c.weight = 1;
  return c;
}

struct Destroy {
  void operator()(VgpuBackend* b) const { vgpu_backend_destroy(b); }
};
using BackendPtr = std::unique_ptr<VgpuBackend, Destroy>;

// A backend that must be created.
BackendPtr created(const VgpuBackendConfig& c) {
  char err[256] = {};
  BackendPtr b(vgpu_backend_create(&c, err, sizeof(err)));
  EXPECT_NE(b, nullptr) << err;
  return b;
}

// vgpu_backend_counters_json parsed: it must be one JSON object (null, and
// so a failed check, when the call fails).
nlohmann::json counters_of(VgpuBackend* b) {
  char* text = vgpu_backend_counters_json(b);
  if (text == nullptr) return nullptr;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  vgpu_backend_free_string(text);
  EXPECT_TRUE(j.is_object()) << j;
  return j;
}

// A backend in `mode` with the default settings, which must be created.
BackendPtr created_in(VgpuMode mode) {
  VgpuBackendConfig c = default_config();
  c.mode = mode;
  return created(c);
}

// Creation must fail and the message must start with the property's name.
void expect_rejected(const VgpuBackendConfig& config, const std::string& property) {
  char err[256] = {};
  BackendPtr b(vgpu_backend_create(&config, err, sizeof(err)));
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(std::string(err).rfind(property + ":", 0), 0u) << err;
}

TEST(Capi, RejectsVramBelowMinimumNamingVram) {
  VgpuBackendConfig c = default_config();
  c.vram_bytes = 1;
  expect_rejected(c, "vram");
}

TEST(Capi, RejectsVramThatIsNotWholeMiB) {
  VgpuBackendConfig c = default_config();
  c.vram_bytes = 64 * MiB + 4 * KiB;
  expect_rejected(c, "vram");
}

TEST(Capi, RejectsVramAboveMaximum) {
  VgpuBackendConfig c = default_config();
  c.vram_bytes = 8 * GiB;
  expect_rejected(c, "vram");
}

// The message says the problem in the unit QEMU's size is given in.
std::string rejection(const VgpuBackendConfig& c) {
  char err[256] = {};
  BackendPtr b(vgpu_backend_create(&c, err, sizeof(err)));
  EXPECT_EQ(b, nullptr);
  return err;
}

TEST(Capi, VramRefusalsSayTheProblemInMiB) {
  VgpuBackendConfig c = default_config();
  c.vram_bytes = 100000 * MiB;
  EXPECT_EQ(rejection(c), "vram: 100000 MiB is above the maximum 4096 MiB");
  c.vram_bytes = 3 * MiB;
  EXPECT_EQ(rejection(c), "vram: 3 MiB is below the minimum 64 MiB");
  c.vram_bytes = 64 * MiB + 4 * KiB;
  EXPECT_EQ(rejection(c), "vram: 67112960 bytes is not a whole number of MiB (the GPU reports its VRAM in MiB)");
}

TEST(Capi, VmNameOverTheLimitIsRefusedNotCut) {
  VgpuBackendConfig c = default_config();
  c.mode = VGPU_MODE_FV;
  const std::string name(VGPU_OPT_VM_NAME_MAX + 13, 'a');
  c.vm_name = name.c_str();
  EXPECT_EQ(rejection(c), "vm-name: '" + name + "' is 44 characters; the limit is 31");
  c.vm_name = "web 1";
  EXPECT_EQ(rejection(c), "vm-name: 'web 1' has the character 0x20; names are made of [A-Za-z0-9._-]");
  const std::string longest(VGPU_OPT_VM_NAME_MAX, 'b');
  c.vm_name = longest.c_str();
  created(c);  // embedded: accepted (QEMU warns that it does nothing)
}

TEST(Capi, EffectiveSettingsOfAnEmbeddedDevice) {
  VgpuBackendConfig c = default_config();
  c.mode = VGPU_MODE_FV;
  c.scheduler = "credit";
  BackendPtr b = created(c);
  ASSERT_NE(b, nullptr);
  EXPECT_STREQ(vgpu_backend_setting(b.get(), VGPU_OPT_SCHEDULER), "credit");
  EXPECT_STREQ(vgpu_backend_setting(b.get(), VGPU_OPT_BACKEND), VGPU_OPT_BACKEND_DEFAULT);
  EXPECT_EQ(vgpu_backend_setting(b.get(), VGPU_OPT_VM_NAME), nullptr);
  EXPECT_EQ(vgpu_backend_setting(b.get(), VGPU_OPT_VRAM), nullptr);
  EXPECT_EQ(vgpu_backend_setting(b.get(), nullptr), nullptr);
}

TEST(Capi, EventCountsOfAFreshEmbeddedVgpuAreZero) {
  BackendPtr b = created_in(VGPU_MODE_FV);
  ASSERT_NE(b, nullptr);
  VgpuEventCounts n{1, 1, 1};
  vgpu_backend_event_counts(b.get(), &n);
  EXPECT_EQ(n.doorbells, 0u);
  EXPECT_EQ(n.faults, 0u);
  EXPECT_EQ(n.round_trips, 0u);  // embedded: no daemon
}

TEST(Capi, RejectsZeroAndTooManyChannels) {
  VgpuBackendConfig c = default_config();
  c.channels = 0;
  expect_rejected(c, "channels");
  c.channels = regs::NUM_CHANNELS + 1;
  expect_rejected(c, "channels");
}

TEST(Capi, RejectsUnknownScheduler) {
  VgpuBackendConfig c = default_config();
  c.scheduler = "lottery";
  expect_rejected(c, "scheduler");
  c.scheduler = nullptr;
  expect_rejected(c, "scheduler");
}

TEST(Capi, RejectsWeightOutsideOneToHundred) {
  VgpuBackendConfig c = default_config();
  c.weight = 0;
  expect_rejected(c, "weight");
  c.weight = 101;
  expect_rejected(c, "weight");
}

// 0 is the option table's 0 (no bound), as on QEMU's and vgpud's command
// lines; the defaults come from vgpu_backend_config_init.
TEST(Capi, TimeOptionsAreCheckedAndZeroIsOff) {
  VgpuBackendConfig c = default_config();
  EXPECT_EQ(c.turn_ms, VGPU_OPT_TURN_MS_DEFAULT);
  EXPECT_EQ(c.max_gpu_ms, VGPU_OPT_MAX_GPU_MS_DEFAULT);
  c.mode = VGPU_MODE_FV;
  c.turn_ms = VGPU_OPT_TURN_MS_MAX + 1;
  expect_rejected(c, VGPU_OPT_TURN_MS);
  c.turn_ms = 0;
  c.max_gpu_ms = VGPU_OPT_MAX_GPU_MS_MAX + 1;
  expect_rejected(c, VGPU_OPT_MAX_GPU_MS);
  c.max_gpu_ms = 0;  // no bound: accepted
  EXPECT_NE(created(c), nullptr);
  c.turn_ms = 5;
  c.max_gpu_ms = 100;
  EXPECT_NE(created(c), nullptr);
}

// The mediator's settings away from their defaults (ring-ahead=off,
// slice-blocks, watchdog-ms, pv=on): refused with passthrough (no
// mediator, the VM owns the GPU), accepted in fv; with a socket, below.
TEST(Capi, MediatorSettingsAreRefusedInPassthroughAndTakenInFv) {
  const std::pair<const char*, void (*)(VgpuBackendConfig&)> settings[] = {
      {VGPU_OPT_RING_AHEAD, [](VgpuBackendConfig& c) { c.ring_ahead = false; }},
      {VGPU_OPT_SLICE_BLOCKS, [](VgpuBackendConfig& c) { c.slice_blocks = 16; }},
      {VGPU_OPT_WATCHDOG_MS, [](VgpuBackendConfig& c) { c.watchdog_ms = 500; }},
      {VGPU_OPT_PV, [](VgpuBackendConfig& c) { c.pv = true; }},
  };
  for (const auto& [name, set] : settings) {
    VgpuBackendConfig c = default_config();
    set(c);
    expect_rejected(c, name);
    c.mode = VGPU_MODE_FV;
    EXPECT_NE(created(c), nullptr) << name;
  }
}

// pv=on: offered by an fv vGPU (PV.CAPS); off by default.
TEST(Capi, PvIsOfferedInFv) {
  VgpuBackendConfig c = default_config();
  c.pv = true;
  c.mode = VGPU_MODE_FV;
  BackendPtr b = created(c);
  ASSERT_NE(b, nullptr);
  const uint32_t caps = vgpu_backend_bar0_read32(b.get(), regs::pv::CAPS.offset);
  EXPECT_EQ(regs::pv::CapsSignature::get(caps), regs::pv::SIGNATURE);
  EXPECT_TRUE(regs::pv::CapsHypercalls::get(caps));
  c.pv = false;
  BackendPtr off = created(c);
  ASSERT_NE(off, nullptr);
  EXPECT_EQ(vgpu_backend_bar0_read32(off.get(), regs::pv::CAPS.offset), regs::BAD_REGISTER) << "off by default";
}

// slice-blocks: the embedded mediator's, in fv; bounded; refused in
// passthrough and with a socket (there it is the daemon's).
constexpr const char* NO_DAEMON = "/tmp/nonexistent-vgpud.sock";

TEST(Capi, SliceBlocksIsCheckedAndOnlyTheEmbeddedMediatorsInFv) {
  VgpuBackendConfig c = default_config();
  c.mode = VGPU_MODE_FV;
  c.slice_blocks = VGPU_OPT_SLICE_BLOCKS_MAX + 1;
  expect_rejected(c, VGPU_OPT_SLICE_BLOCKS);
  c.slice_blocks = 16;
  c.socket = NO_DAEMON;
  expect_rejected(c, VGPU_OPT_SLICE_BLOCKS);
}

// backend: model or cuda; a name it does not know, or cuda with a socket,
// is refused naming the property. backend=cuda creates a device exactly
// where a CUDA device can be made (built, and a GPU present: the device
// machine), and elsewhere fails with a message naming backend=cuda.
// cuda is a worker process per vGPU (capi/cuda_workers.cc, its own tests
// in workers_capi_test.cc): mode fv only; without a GPU the worker does
// not start and the error says so.
TEST(Capi, EngineBackendIsModelOrCudaAndCudaNeedsAGpu) {
  for (VgpuMode mode : {VGPU_MODE_PASSTHROUGH, VGPU_MODE_FV}) {
    VgpuBackendConfig c = default_config();
    c.mode = mode;
    c.engine_backend = "nvidia";
    expect_rejected(c, VGPU_OPT_BACKEND);
    c.engine_backend = "worker";  // vgpud's old name
    expect_rejected(c, VGPU_OPT_BACKEND);
    c.engine_backend = "model";
    EXPECT_NE(created(c), nullptr);
  }
  VgpuBackendConfig c = default_config();
  c.mode = VGPU_MODE_PASSTHROUGH;
  c.engine_backend = "cuda";
  expect_rejected(c, VGPU_OPT_BACKEND);
  c.mode = VGPU_MODE_FV;
  c.socket = NO_DAEMON;
  expect_rejected(c, VGPU_OPT_BACKEND);
  c.socket = nullptr;
  char err[512] = {};
  BackendPtr b(vgpu_backend_create(&c, err, sizeof(err)));
  if (b) GTEST_SKIP() << "a GPU is present: the cuda worker started";
  EXPECT_NE(std::string(err).find(std::string(VGPU_OPT_BACKEND) + "=cuda"), std::string::npos) << err;
  EXPECT_NE(std::string(err).find("did not start"), std::string::npos) << err;
}

TEST(Capi, ErrorMessageIsTruncatedToTheBuffer) {
  VgpuBackendConfig c = default_config();
  c.weight = 0;
  char err[8];
  std::memset(err, 'x', sizeof(err));
  BackendPtr b(vgpu_backend_create(&c, err, sizeof(err)));
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(std::strlen(err), sizeof(err) - 1);
}

TEST(Capi, Boot0ReportsGf100Chipset) {
  VgpuBackendConfig c = default_config();
  BackendPtr b = created(c);
  ASSERT_NE(b, nullptr);
  uint32_t boot0 = vgpu_backend_bar0_read32(b.get(), regs::pmc::BOOT_0.offset);
  EXPECT_EQ(regs::pmc::Boot0Chipset::get(boot0), regs::CHIPSET_GF100);
}

TEST(Capi, LayoutWithRemapOffIsOneTrappedRangeOverTheBar) {
  VgpuBackendConfig c = default_config();
  c.bar_remap = false;
  BackendPtr b = created(c);
  ASSERT_NE(b, nullptr);
  for (VgpuBar bar : {VGPU_BAR1, VGPU_BAR3}) {
    std::vector<VgpuBarRange> ranges(4);
    uint64_t gen = ~uint64_t{0};
    size_t n = vgpu_backend_bar_layout(b.get(), bar, ranges.data(), ranges.size(), &gen);
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(ranges[0].bar_offset, 0u);
    EXPECT_EQ(ranges[0].size, vgpu_backend_bar_size(b.get(), bar));
    EXPECT_TRUE(ranges[0].trapped);
    EXPECT_EQ(gen, vgpu_backend_bar_generation(b.get()));
  }
}

TEST(Capi, LayoutReportsCountWhenArrayIsTooSmall) {
  VgpuBackendConfig c = default_config();
  BackendPtr b = created(c);
  ASSERT_NE(b, nullptr);
  size_t n = vgpu_backend_bar_layout(b.get(), VGPU_BAR1, nullptr, 0, nullptr);
  EXPECT_GE(n, 1u);
}

TEST(Capi, CountersJsonCountsBar0Accesses) {
  VgpuBackendConfig c = default_config();
  BackendPtr b = created(c);
  ASSERT_NE(b, nullptr);
  (void)vgpu_backend_bar0_read32(b.get(), regs::pmc::BOOT_0.offset);
  (void)vgpu_backend_bar0_read32(b.get(), regs::pmc::BOOT_0.offset);
  vgpu_backend_bar0_write32(b.get(), regs::pmc::INTR_EN_0.offset, 0);
  const nlohmann::json j = counters_of(b.get());
  EXPECT_EQ(j.value("bar0_reads", -1), 2) << j;
  EXPECT_EQ(j.value("bar0_writes", -1), 1) << j;
  EXPECT_EQ(j.value("backend", ""), vgpu_backend_kind(b.get())) << j;
}

TEST(Capi, PciIdentityMatchesRegisterHeader) {
  VgpuPciIdentity id;
  vgpu_pci_identity(&id);
  EXPECT_EQ(id.vendor_id, regs::pci::VENDOR_ID);
  EXPECT_EQ(id.device_id, regs::pci::DEVICE_ID);
  EXPECT_EQ(id.class_id >> 8, regs::pci::CLASS_DISPLAY);
  EXPECT_EQ(id.bar1_size, regs::pci::BAR1_SIZE);
  EXPECT_EQ(id.bar3_index, regs::pci::BAR3_INDEX);
}

TEST(Capi, FvModeIsServedByTheMediator) {
  BackendPtr b = created_in(VGPU_MODE_FV);
  ASSERT_NE(b, nullptr);
  EXPECT_STREQ(vgpu_backend_kind(b.get()), "mediator");
  EXPECT_EQ(regs::pmc::Boot0Chipset::get(vgpu_backend_bar0_read32(b.get(), regs::pmc::BOOT_0.offset)),
            regs::CHIPSET_GF100);
}

TEST(Capi, FvModeReportsThePartitionNotTheGpu) {
  VgpuBackendConfig c = default_config();
  c.mode = VGPU_MODE_FV;
  BackendPtr b = created(c);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(vgpu_backend_bar0_read32(b.get(), regs::pfb::FBPA_MIB[0].offset), c.vram_bytes / MiB);
  // The memfd is the partition's own: none of the hypervisor's reserved
  // VRAM (shadow tables) is mapped into the VM's process or migrated.
  EXPECT_EQ(vgpu_backend_vram_size(b.get()), c.vram_bytes);
  EXPECT_GE(vgpu_backend_vram_fd(b.get()), 0);
}

TEST(Capi, FvModeCountersIncludeTrappedAccesses) {
  BackendPtr b = created_in(VGPU_MODE_FV);
  ASSERT_NE(b, nullptr);
  (void)vgpu_backend_bar0_read32(b.get(), regs::pmc::BOOT_0.offset);
  const nlohmann::json j = counters_of(b.get());
  EXPECT_EQ(j.value("trapped_reads", -1), 1) << j;
}

// ---- the log hook and the device reset

struct Logged {
  std::vector<std::pair<VgpuLogKind, std::string>> lines;
  static void fn(void* opaque, VgpuLogKind kind, const char* line) {
    static_cast<Logged*>(opaque)->lines.emplace_back(kind, line);
  }
};

TEST(Capi, GuestErrorsReachTheLogHookInBothModes) {
  for (VgpuMode mode : {VGPU_MODE_PASSTHROUGH, VGPU_MODE_FV}) {
    Logged logged;
    VgpuBackendConfig c = default_config();
    c.mode = mode;
    c.log = &Logged::fn;
    c.log_opaque = &logged;
    BackendPtr b(vgpu_backend_create(&c, nullptr, 0));
    ASSERT_NE(b, nullptr);
    constexpr uint32_t UNIMPLEMENTED = regs::pmc::BOOT_1.offset + sizeof(uint32_t);
    EXPECT_EQ(vgpu_backend_bar0_read32(b.get(), UNIMPLEMENTED), regs::BAD_REGISTER);
    ASSERT_EQ(logged.lines.size(), 1u) << "mode " << mode;
    EXPECT_EQ(logged.lines[0].first, VGPU_LOG_GUEST_ERROR);
    EXPECT_NE(logged.lines[0].second.find("unimplemented register"), std::string::npos) << logged.lines[0].second;
  }
}

TEST(Capi, AResetClearsTheDeviceAsAPmcResetDoes) {
  for (VgpuMode mode : {VGPU_MODE_PASSTHROUGH, VGPU_MODE_FV}) {
    BackendPtr b = created_in(mode);
    ASSERT_NE(b, nullptr);
    namespace pf = regs::pfifo;
    vgpu_backend_bar0_write32(b.get(), regs::pmc::ENABLE.offset, regs::pmc::enable::ALL);
    vgpu_backend_bar0_write32(b.get(), pf::USERD_BASE.offset, pf::UserdBaseEnable::mask | pf::UserdBaseAddr::make(1));
    ASSERT_NE(vgpu_backend_bar0_read32(b.get(), pf::USERD_BASE.offset), 0u);
    vgpu_backend_reset(b.get());
    vgpu_backend_bar0_write32(b.get(), regs::pmc::ENABLE.offset, regs::pmc::enable::ALL);
    EXPECT_EQ(vgpu_backend_bar0_read32(b.get(), pf::USERD_BASE.offset), 0u) << "mode " << mode;
  }
}

TEST(Capi, ARisingLineIsAMessageOnTheErrorVectorInBothModes) {
  for (VgpuMode mode : {VGPU_MODE_PASSTHROUGH, VGPU_MODE_FV}) {
    BackendPtr b = created_in(mode);
    ASSERT_NE(b, nullptr);
    std::vector<unsigned> got;
    vgpu_backend_set_msg_handler(
        b.get(), [](void* o, unsigned v) { static_cast<std::vector<unsigned>*>(o)->push_back(v); }, &got);
    namespace pf = regs::pfifo;
    vgpu_backend_bar0_write32(b.get(), regs::pmc::ENABLE.offset, regs::pmc::enable::ALL);
    vgpu_backend_bar0_write32(b.get(), pf::INTR_EN.offset, pf::IntrRunlist::mask);
    vgpu_backend_bar0_write32(b.get(), regs::pmc::INTR_EN_0.offset, regs::pmc::IntrEnHardware::mask);
    vgpu_backend_bar0_write32(b.get(), pf::RUNLIST_SUBMIT.offset, 0);  // an empty runlist: done at once
    vgpu_backend_set_msg_handler(b.get(), nullptr, nullptr);
    ASSERT_EQ(got.size(), 1u) << "mode " << mode;
    EXPECT_EQ(got[0], static_cast<unsigned>(regs::pci::MsiVector::error));
  }
}

}  // namespace

namespace {

TEST(CapiDaemon, SocketWithPassthroughIsRefusedNamingSocket) {
  VgpuBackendConfig c = default_config();
  c.mode = VGPU_MODE_PASSTHROUGH;
  c.socket = "/tmp/nonexistent-vgpud.sock";
  expect_rejected(c, "socket");
}

// With a socket the mediator's settings are the daemon's: any value but
// the default is refused, naming the option, before any connection.
TEST(CapiDaemon, MediatorSettingsWithASocketAreRefused) {
  const std::pair<const char*, void (*)(VgpuBackendConfig&)> settings[] = {
      {VGPU_OPT_TURN_MS, [](VgpuBackendConfig& c) { c.turn_ms = 5; }},
      {VGPU_OPT_MAX_GPU_MS, [](VgpuBackendConfig& c) { c.max_gpu_ms = 0; }},
      {VGPU_OPT_RING_AHEAD, [](VgpuBackendConfig& c) { c.ring_ahead = false; }},
      {VGPU_OPT_SLICE_BLOCKS, [](VgpuBackendConfig& c) { c.slice_blocks = 16; }},
      {VGPU_OPT_WATCHDOG_MS, [](VgpuBackendConfig& c) { c.watchdog_ms = 500; }},
  };
  for (const auto& [name, set] : settings) {
    VgpuBackendConfig c = default_config();
    c.mode = VGPU_MODE_FV;
    c.socket = NO_DAEMON;
    set(c);
    expect_rejected(c, name);
  }
}

TEST(CapiDaemon, AbsentDaemonFailsNamingTheSocket) {
  VgpuBackendConfig c = default_config();
  c.mode = VGPU_MODE_FV;
  c.socket = "/tmp/nonexistent-vgpud.sock";
  char err[256] = "";
  VgpuBackend* b = vgpu_backend_create(&c, err, sizeof err);
  EXPECT_EQ(b, nullptr);
  EXPECT_NE(std::string(err).find("/tmp/nonexistent-vgpud.sock"), std::string::npos) << err;
  vgpu_backend_destroy(b);
}

// A socket that is not vgpud: silent (its backlog holds the connection,
// nothing answers) or foreign (text, then closed). QEMU's realize gets
// the client's message, without internal codes.
class NotVgpud {
 public:
  explicit NotVgpud(bool foreign) {
    path_ = "/tmp/vgpu-capi-peer-" + std::to_string(getpid()) + (foreign ? "-f" : "-s") + ".sock";
    unlink(path_.c_str());
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(fd_, 4), 0);
    if (foreign)
      thread_ = std::thread([this] {
        const int c = accept(fd_, nullptr, nullptr);
        const char text[] = "220 smtp.example.org ESMTP ready\r\n";
        (void)!write(c, text, sizeof text - 1);
        close(c);
      });
  }
  ~NotVgpud() {
    if (thread_.joinable()) thread_.join();
    close(fd_);
    unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::thread thread_;
};

std::string create_error(const std::string& socket, uint32_t daemon_timeout_ms = VGPU_OPT_DAEMON_TIMEOUT_MS_DEFAULT) {
  VgpuBackendConfig c = default_config();
  c.mode = VGPU_MODE_FV;
  c.socket = socket.c_str();
  c.daemon_timeout_ms = daemon_timeout_ms;
  char err[256] = "";
  VgpuBackend* b = vgpu_backend_create(&c, err, sizeof err);
  EXPECT_EQ(b, nullptr);
  vgpu_backend_destroy(b);
  return err;
}

TEST(CapiDaemon, SilentPeerFailsInTheTimeAsked) {
  NotVgpud peer(false);
  setenv("VGPUD_TIMEOUT", "0.2", 1);
  const std::string err = create_error(peer.path());
  unsetenv("VGPUD_TIMEOUT");
  EXPECT_EQ(err, "vgpud at " + peer.path() + " did not answer in 0.2 s");
}

// The device's daemon-timeout-ms wins over VGPUD_TIMEOUT; off and over
// the maximum are refused naming it, before any connection.
TEST(CapiDaemon, DaemonTimeoutMsIsTheWaitAndItsBoundsAreChecked) {
  NotVgpud peer(false);
  setenv("VGPUD_TIMEOUT", "30", 1);
  EXPECT_EQ(create_error(peer.path(), 150), "vgpud at " + peer.path() + " did not answer in 0.15 s");
  unsetenv("VGPUD_TIMEOUT");
  EXPECT_EQ(create_error(peer.path(), 0), "daemon-timeout-ms: 0 ms is below the minimum 1 ms");
  EXPECT_EQ(create_error(peer.path(), VGPU_OPT_DAEMON_TIMEOUT_MS_MAX + 1),
            "daemon-timeout-ms: 3600001 ms is above the maximum 3600000 ms");
}

TEST(CapiDaemon, ForeignPeerIsNamedAsNotVgpud) {
  NotVgpud peer(true);
  EXPECT_EQ(create_error(peer.path()), peer.path() + " does not speak the vgpud protocol");
}

}  // namespace
