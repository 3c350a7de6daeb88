// SPDX-License-Identifier: GPL-2.0-or-later
// The C boundary: validates the configuration, counts trapped accesses, and
// catches every exception (a C caller cannot unwind C++ frames). A failure
// inside a register access behaves as guest misbehaviour does: reads give
// all ones, writes are dropped, and the failure is counted.
#include "capi/vgpu_capi.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "capi/backend.h"
#include "common/log.h"
#include "common/text.h"
#include "gpu/device/backend.h"
#include "mediator/vgpu_config.h"
#include "vgpu/regs.h"

using vgpu::capi::Backend;
using vgpu::capi::BackendConfig;

struct VgpuBackend {
  std::unique_ptr<Backend> impl;
  vgpu::Log log;
  // vgpu_backend_setting's answers (empty: NULL).
  std::string scheduler, engine, vm_name;
  std::atomic<uint64_t> bar0_reads{0};
  std::atomic<uint64_t> bar0_writes{0};
  std::atomic<uint64_t> bar_reads{0};
  std::atomic<uint64_t> bar_writes{0};
  std::atomic<uint64_t> layout_queries{0};
  std::atomic<uint64_t> internal_errors{0};
};

namespace vgpu::capi {

std::vector<VgpuBarRange> all_trapped(uint64_t bar_size) { return {VgpuBarRange{0, 0, bar_size, true}}; }

namespace {

constexpr uint64_t VRAM_GRANULE = MiB;  // PFB FBPA_MIB reports whole MiB
constexpr uint32_t ALL_ONES = std::numeric_limits<uint32_t>::max();

void put_error(char* err, size_t err_len, const std::string& message) {
  if (err == nullptr || err_len == 0) return;
  std::snprintf(err, err_len, "%s", message.c_str());
}

// VRAM in the units QEMU's size property is given in: the range first,
// in MiB, then the granule (mediator::check_vgpu_config checks it again).
[[nodiscard]] Status check_vram(uint64_t bytes) {
  const auto amount = [](uint64_t b) {
    return b % MiB == 0 ? strfmt("%llu MiB", static_cast<unsigned long long>(b / MiB))
                        : strfmt("%llu bytes", static_cast<unsigned long long>(b));
  };
  if (bytes < mediator::VRAM_MIN)
    return fail(Errc::invalid_argument, strfmt("%s: %s is below the minimum %u MiB", VGPU_OPT_VRAM,
                                               amount(bytes).c_str(), VGPU_OPT_VRAM_MIN_MIB));
  if (bytes > mediator::VRAM_MAX)
    return fail(Errc::invalid_argument, strfmt("%s: %s is above the maximum %u MiB", VGPU_OPT_VRAM,
                                               amount(bytes).c_str(), VGPU_OPT_VRAM_MAX_MIB));
  if (bytes % VRAM_GRANULE != 0)
    return fail(Errc::invalid_argument, strfmt("%s: %s is not a whole number of MiB (the GPU reports its VRAM in MiB)",
                                               VGPU_OPT_VRAM, amount(bytes).c_str()));
  return {};
}

// The VM's name at the daemon: refused, never cut, when the daemon could
// not take it whole.
[[nodiscard]] Status check_vm_name(const std::string& name) {
  if (name.size() > VGPU_OPT_VM_NAME_MAX)
    return fail(Errc::invalid_argument, strfmt("%s: '%s' is %zu characters; the limit is %u", VGPU_OPT_VM_NAME,
                                               name.c_str(), name.size(), VGPU_OPT_VM_NAME_MAX));
  for (const char ch : name) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                    ch == '_' || ch == '-';
    if (!ok)
      return fail(Errc::invalid_argument, strfmt("%s: '%s' has the character %#x; names are made of [A-Za-z0-9._-]",
                                                 VGPU_OPT_VM_NAME, name.c_str(), ch & 0xff));
  }
  return {};
}

// The turn callback, and the wait for the daemon's first answer (its
// default: VGPUD_TIMEOUT decides when set).
void set_turn_and_timeout(const VgpuBackendConfig& c, BackendConfig& config) {
  if (c.turn != nullptr)
    config.turn = [fn = c.turn, opaque = c.turn_opaque](bool start, VgpuTurnEnd end, uint64_t gpu_ns) {
      fn(opaque, start, end, gpu_ns);
    };
  config.daemon_timeout_ms = c.daemon_timeout_ms == VGPU_OPT_DAEMON_TIMEOUT_MS_DEFAULT ? 0 : c.daemon_timeout_ms;
}

// Every number against its row of the option table, with the table's
// message (the same as vgpud's and the benches' for the same value).
[[nodiscard]] Status check_numbers(const VgpuBackendConfig& c) {
  return mediator::check_options({{VGPU_OPT_CHANNELS, c.channels},
                                  {VGPU_OPT_WEIGHT, c.weight},
                                  {VGPU_OPT_TURN_MS, c.turn_ms},
                                  {VGPU_OPT_MAX_GPU_MS, c.max_gpu_ms},
                                  {VGPU_OPT_SLICE_BLOCKS, c.slice_blocks},
                                  {VGPU_OPT_WATCHDOG_MS, c.watchdog_ms},
                                  {VGPU_OPT_DAEMON_TIMEOUT_MS, c.daemon_timeout_ms}});
}

// Settings of the embedded mediator's, given (not at their defaults):
// refused with passthrough (the VM owns the GPU) and with a socket (the
// daemon's, for all its VMs).
[[nodiscard]] Status check_mediators(const VgpuBackendConfig& c, bool socket) {
  const struct {
    const char* name;
    bool given;
    const char* what;
    bool passthrough_too;
  } settings[] = {
      {VGPU_OPT_SLICE_BLOCKS, c.slice_blocks != VGPU_OPT_SLICE_BLOCKS_DEFAULT, "kernel slicing", true},
      {VGPU_OPT_RING_AHEAD, c.ring_ahead != (VGPU_OPT_RING_AHEAD_DEFAULT != 0), "ringing ahead", true},
      {VGPU_OPT_WATCHDOG_MS, c.watchdog_ms != VGPU_OPT_WATCHDOG_MS_DEFAULT, "the operation watchdog", true},
      {VGPU_OPT_TURN_MS, c.turn_ms != VGPU_OPT_TURN_MS_DEFAULT, "time isolation", false},
      {VGPU_OPT_MAX_GPU_MS, c.max_gpu_ms != VGPU_OPT_MAX_GPU_MS_DEFAULT, "time isolation", false},
  };
  for (const auto& s : settings) {
    if (!s.given) continue;
    if (s.passthrough_too && c.mode != VGPU_MODE_FV)
      return fail(Errc::invalid_argument, strfmt("%s: %s is the mediator's (mode=fv); with mode=passthrough the VM "
                                                 "owns the GPU",
                                                 s.name, s.what));
    if (socket)
      return fail(Errc::invalid_argument,
                  strfmt("%s: with a socket, %s is the daemon's (vgpud --%s)", s.name, s.what, s.name));
  }
  return {};
}

[[nodiscard]] Result<gpu::EngineBackend> engine_backend(const VgpuBackendConfig& c, bool socket) {
  if (c.engine_backend == nullptr || *c.engine_backend == '\0') return gpu::EngineBackend::model;
  const std::string name = c.engine_backend;
  auto b = gpu::parse_engine_backend(name);
  // fake_device is for tests; worker is the name cuda had in vgpud. cuda
  // is a worker process per vGPU (set_cuda_workers): mode fv only.
  if (!b || *b == gpu::EngineBackend::fake_device || *b == gpu::EngineBackend::worker)
    return fail(Errc::invalid_argument, strfmt("%s: '%s' is not one of model, cuda", VGPU_OPT_BACKEND, name.c_str()));
  if (*b == gpu::EngineBackend::cuda && c.mode != VGPU_MODE_FV)
    return fail(Errc::invalid_argument, strfmt("%s: cuda runs each vGPU's work in a worker process (mode=fv); with "
                                               "mode=passthrough the model runs it",
                                               VGPU_OPT_BACKEND));
  if (*b != gpu::EngineBackend::model && socket)
    return fail(Errc::invalid_argument, strfmt("%s: with a socket, the engines are the daemon's (vgpud --%s)",
                                               VGPU_OPT_BACKEND, VGPU_OPT_BACKEND));
  return *b;
}

// The one check of the options (the option table's bounds and
// mediator/vgpu_config.h), whatever the mode.
[[nodiscard]] Result<BackendConfig> validate(const VgpuBackendConfig& c) {
  if (c.mode != VGPU_MODE_PASSTHROUGH && c.mode != VGPU_MODE_FV)
    return fail(Errc::invalid_argument, "mode: must be passthrough or fv");
  if (c.scheduler == nullptr) return fail(Errc::invalid_argument, "scheduler: none named");
  std::string scheduler = c.scheduler;
  if (Status s = mediator::check_scheduler(scheduler); !s) return std::unexpected(s.error());
  if (Status s = check_vram(c.vram_bytes); !s) return std::unexpected(s.error());
  if (Status s = check_numbers(c); !s) return std::unexpected(s.error());
  LogFn log;
  if (c.log != nullptr)
    log = [fn = c.log, opaque = c.log_opaque](LogKind kind, const std::string& line) {
      fn(opaque, kind == LogKind::guest_error ? VGPU_LOG_GUEST_ERROR : VGPU_LOG_INTERNAL_ERROR, line.c_str());
    };
  std::string socket = c.socket ? c.socket : "";
  if (!socket.empty() && c.mode != VGPU_MODE_FV)
    return fail(Errc::invalid_argument,
                "socket: a vGPU from the daemon needs mode=fv (passthrough gives one VM the "
                "whole GPU, in its own process)");
  if (c.pv && c.mode != VGPU_MODE_FV)
    return fail(Errc::invalid_argument,
                "pv: the paravirtual interface is a vGPU's (mode=fv); with mode=passthrough the VM drives "
                "the GPU's own page tables");
  std::string vm_name = c.vm_name ? c.vm_name : "";
  if (Status s = check_vm_name(vm_name); !s) return std::unexpected(s.error());
  if (Status s = check_mediators(c, !socket.empty()); !s) return std::unexpected(s.error());
  auto engines = engine_backend(c, !socket.empty());
  if (!engines) return std::unexpected(engines.error());
  BackendConfig config;
  config.mode = c.mode;
  config.socket = std::move(socket);
  config.vm_name = std::move(vm_name);
  config.incoming = c.incoming;
  config.vgpu.name = "qemu";
  config.vgpu.vram_bytes = c.vram_bytes;
  config.vgpu.channels = c.channels;
  config.vgpu.weight = c.weight;
  config.vgpu.bar_remap = c.bar_remap;
  config.vgpu.lazy_shadow = c.lazy_shadow;
  config.vgpu.pv = c.pv;
  config.vgpu.slice_blocks = c.slice_blocks;
  config.vgpu.watchdog_ms = c.watchdog_ms;
  config.host.scheduler = std::move(scheduler);
  config.host.log = std::move(log);
  config.host.turn_ns = uint64_t{c.turn_ms} * 1'000'000;
  config.host.max_gpu_ms = c.max_gpu_ms;
  config.host.ring_ahead = c.ring_ahead;
  config.host.engine_backend = *engines;
  set_turn_and_timeout(c, config);
  if (Status s = set_cuda_workers(c, config); !s) return std::unexpected(s.error());
  return config;
}

// A failure inside the backend: counted and logged as an internal error.
void internal_error(VgpuBackend* b, const char* what) noexcept {
  b->internal_errors.fetch_add(1, std::memory_order_relaxed);
  try {
    b->log(LogKind::internal_error, std::string("C API: ") + what);
  } catch (...) {
  }
}

// Runs f; on an exception reports it and returns fallback.
template <typename F, typename T>
T guarded(VgpuBackend* b, T fallback, F&& f) noexcept {
  try {
    return f();
  } catch (const std::exception& e) {
    internal_error(b, e.what());
  } catch (...) {
    internal_error(b, "unknown exception");
  }
  return fallback;
}

template <typename F>
void guarded_void(VgpuBackend* b, F&& f) noexcept {
  guarded(b, 0, [&] {
    f();
    return 0;
  });
}

// status() gives a Status: 0, or -1 with its message in err.
template <typename F>
int status_call(VgpuBackend* b, char* err, size_t err_len, F&& status) noexcept {
  return guarded(b, -1, [&] {
    if (vgpu::Status s = status(); !s) {
      put_error(err, err_len, s.error().message);
      return -1;
    }
    return 0;
  });
}

}  // namespace
}  // namespace vgpu::capi

using namespace vgpu::capi;

extern "C" {

void vgpu_pci_identity(VgpuPciIdentity* id) {
  namespace pci = vgpu::regs::pci;
  *id = VgpuPciIdentity{
      .vendor_id = pci::VENDOR_ID,
      .device_id = pci::DEVICE_ID,
      .revision = pci::REVISION,
      .class_id = static_cast<uint16_t>((pci::CLASS_DISPLAY << 8) | pci::SUBCLASS_3D),
      .bar0_index = pci::BAR0_INDEX,
      .bar1_index = pci::BAR1_INDEX,
      .bar3_index = pci::BAR3_INDEX,
      .bar0_size = pci::BAR0_SIZE,
      .bar1_size = pci::BAR1_SIZE,
      .bar3_size = pci::BAR3_SIZE,
  };
}

void vgpu_limits(VgpuLimits* limits) {
  *limits = VgpuLimits{
      .vram_min = vgpu::mediator::VRAM_MIN,
      .vram_max = vgpu::mediator::VRAM_MAX,
      .vram_granule = VRAM_GRANULE,
      .channels_max = VGPU_OPT_CHANNELS_MAX,
      .weight_max = VGPU_OPT_WEIGHT_MAX,
  };
}

void vgpu_backend_config_init(VgpuBackendConfig* c) {
  *c = VgpuBackendConfig{};
  c->vram_bytes = uint64_t{VGPU_OPT_VRAM_DEFAULT_MIB} * vgpu::MiB;
  c->channels = VGPU_OPT_CHANNELS_DEFAULT;
  c->mode = VGPU_MODE_PASSTHROUGH;
  c->bar_remap = VGPU_OPT_BAR_REMAP_DEFAULT != 0;
  c->lazy_shadow = VGPU_OPT_LAZY_SHADOW_DEFAULT != 0;
  c->scheduler = VGPU_OPT_SCHEDULER_DEFAULT;
  c->weight = VGPU_OPT_WEIGHT_DEFAULT;
  c->turn_ms = VGPU_OPT_TURN_MS_DEFAULT;
  c->max_gpu_ms = VGPU_OPT_MAX_GPU_MS_DEFAULT;
  c->pv = VGPU_OPT_PV_DEFAULT != 0;
  c->slice_blocks = VGPU_OPT_SLICE_BLOCKS_DEFAULT;
  c->ring_ahead = VGPU_OPT_RING_AHEAD_DEFAULT != 0;
  c->watchdog_ms = VGPU_OPT_WATCHDOG_MS_DEFAULT;
  c->engine_backend = VGPU_OPT_BACKEND_DEFAULT;
  c->daemon_timeout_ms = VGPU_OPT_DAEMON_TIMEOUT_MS_DEFAULT;
  c->worker_device = VGPU_OPT_WORKER_DEVICE_DEFAULT;
}

VgpuBackend* vgpu_backend_create(const VgpuBackendConfig* config, char* err, size_t err_len) {
  try {
    if (config == nullptr) {
      put_error(err, err_len, "no configuration");
      return nullptr;
    }
    auto valid = validate(*config);
    if (!valid) {
      put_error(err, err_len, valid.error().message);
      return nullptr;
    }
    auto impl = make_backend(*valid);
    if (!impl) {
      put_error(err, err_len, impl.error().message);  // the user's words, no internal code
      return nullptr;
    }
    auto* b = new VgpuBackend{.impl = std::move(*impl), .log = vgpu::Log(valid->host.log)};
    if (valid->socket.empty()) {
      b->scheduler = valid->host.scheduler;
      b->engine = valid->workers ? "cuda" : vgpu::gpu::engine_backend_name(valid->host.engine_backend);
    } else {
      b->scheduler = b->impl->daemon_scheduler();
      b->vm_name = b->impl->daemon_vm_name();
    }
    return b;
  } catch (const std::exception& e) {
    put_error(err, err_len, std::string("backend creation failed: ") + e.what());
  } catch (...) {
    put_error(err, err_len, "backend creation failed");
  }
  return nullptr;
}

void vgpu_backend_destroy(VgpuBackend* b) {
  try {
    delete b;
  } catch (...) {
    // A destructor that throws has nowhere to report; the memory is gone.
  }
}

const char* vgpu_backend_kind(const VgpuBackend* b) { return b->impl->kind(); }

const char* vgpu_turn_end_name(VgpuTurnEnd end) {
  switch (end) {
    case VGPU_TURN_DRAINED: return "drained";
    case VGPU_TURN_OUT_OF_TIME: return "out-of-time";
    case VGPU_TURN_STOPPED: return "stopped";
    case VGPU_TURN_ERROR: return "error";
    case VGPU_TURN_EMPTY: return "empty";
  }
  return "?";
}

void vgpu_backend_reset(VgpuBackend* b) {
  guarded_void(b, [&] { b->impl->reset(); });
}

uint32_t vgpu_backend_bar0_read32(VgpuBackend* b, uint32_t offset) {
  b->bar0_reads.fetch_add(1, std::memory_order_relaxed);
  return guarded(b, ALL_ONES, [&] { return b->impl->bar0_read32(offset); });
}

void vgpu_backend_bar0_write32(VgpuBackend* b, uint32_t offset, uint32_t value) {
  b->bar0_writes.fetch_add(1, std::memory_order_relaxed);
  guarded_void(b, [&] { b->impl->bar0_write32(offset, value); });
}

uint32_t vgpu_backend_bar_read32(VgpuBackend* b, VgpuBar bar, uint64_t offset) {
  b->bar_reads.fetch_add(1, std::memory_order_relaxed);
  return guarded(b, ALL_ONES, [&] { return b->impl->bar_read32(bar, offset); });
}

void vgpu_backend_bar_write32(VgpuBackend* b, VgpuBar bar, uint64_t offset, uint32_t value) {
  b->bar_writes.fetch_add(1, std::memory_order_relaxed);
  guarded_void(b, [&] { b->impl->bar_write32(bar, offset, value); });
}

uint64_t vgpu_backend_bar_size(const VgpuBackend* b, VgpuBar bar) { return b->impl->bar_size(bar); }

uint64_t vgpu_backend_bar_generation(VgpuBackend* b) {
  return guarded(b, uint64_t{0}, [&] { return b->impl->bar_generation(); });
}

size_t vgpu_backend_bar_layout(VgpuBackend* b, VgpuBar bar, VgpuBarRange* ranges, size_t max_ranges,
                               uint64_t* generation) {
  b->layout_queries.fetch_add(1, std::memory_order_relaxed);
  return guarded(b, size_t{0}, [&] {
    // Read the generation first: a change during the walk is seen next poll.
    uint64_t gen = b->impl->bar_generation();
    std::vector<VgpuBarRange> layout = b->impl->bar_layout(bar);
    std::copy_n(layout.begin(), std::min(layout.size(), max_ranges), ranges);
    if (generation != nullptr) *generation = gen;
    return layout.size();
  });
}

int vgpu_backend_vram_fd(const VgpuBackend* b) { return b->impl->vram_fd(); }
uint64_t vgpu_backend_vram_size(const VgpuBackend* b) { return b->impl->vram_size(); }

static_assert(VGPU_MSI_VECTORS == vgpu::regs::pci::MSI_VECTORS, "the C API names the register header's vectors");

void vgpu_backend_set_irq_handler(VgpuBackend* b, VgpuIrqFn fn, void* opaque) {
  guarded_void(b, [&] { b->impl->interrupts().set_line(fn, opaque); });
}

void vgpu_backend_set_msg_handler(VgpuBackend* b, VgpuMsgFn fn, void* opaque) {
  guarded_void(b, [&] { b->impl->interrupts().set_message(fn, opaque); });
}

void vgpu_backend_set_dma(VgpuBackend* b, VgpuDmaFn fn, void* opaque) {
  guarded_void(b, [&] {
    if (vgpu::Status s = b->impl->set_dma(fn, opaque); !s) internal_error(b, ("set_dma: " + s.error().message).c_str());
  });
}

int vgpu_backend_set_guest_ram(VgpuBackend* b, const VgpuRamRange* ranges, size_t count, char* err, size_t err_len) {
  return guarded(b, -1, [&] {
    if (count > 0 && ranges == nullptr) {
      put_error(err, err_len, "guest RAM: no ranges given");
      return -1;
    }
    std::vector<VgpuRamRange> v(ranges, ranges + count);
    if (vgpu::Status s = b->impl->set_guest_ram(v); !s) {
      put_error(err, err_len, s.error().message);
      return -1;
    }
    return 0;
  });
}

const char* vgpu_backend_setting(const VgpuBackend* b, const char* option) {
  if (option == nullptr) return nullptr;
  const std::string_view name = option;
  const std::string* value = name == VGPU_OPT_SCHEDULER ? &b->scheduler
                             : name == VGPU_OPT_BACKEND ? &b->engine
                             : name == VGPU_OPT_VM_NAME ? &b->vm_name
                                                        : nullptr;
  return value == nullptr || value->empty() ? nullptr : value->c_str();
}

void vgpu_backend_event_counts(VgpuBackend* b, VgpuEventCounts* counts) {
  *counts = guarded(b, VgpuEventCounts{}, [&] { return b->impl->event_counts(); });
}

char* vgpu_backend_counters_json(VgpuBackend* b) {
  try {
    nlohmann::ordered_json j = {{"backend", b->impl->kind()},
                                {"bar0_reads", b->bar0_reads.load()},
                                {"bar0_writes", b->bar0_writes.load()},
                                {"bar_reads", b->bar_reads.load()},
                                {"bar_writes", b->bar_writes.load()},
                                {"layout_queries", b->layout_queries.load()},
                                {"internal_errors", b->internal_errors.load()}};
    j.update(b->impl->counters_json());
    // One line; a path that is not UTF-8 (the daemon's socket) is kept readable, not refused.
    return strdup(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
  } catch (...) {
    return nullptr;
  }
}

void vgpu_backend_free_string(char* s) { std::free(s); }

// ---- migration


int vgpu_backend_migratable(const VgpuBackend* b, char* err, size_t err_len) {
  const std::string why = b->impl->migration_refusal();
  if (why.empty()) return 0;
  put_error(err, err_len, why);
  return -1;
}

int vgpu_backend_freeze(VgpuBackend* b, uint32_t timeout_ms, char* err, size_t err_len) {
  return status_call(b, err, err_len, [&] { return b->impl->freeze(timeout_ms); });
}

void vgpu_backend_thaw(VgpuBackend* b) {
  guarded_void(b, [&] { b->impl->thaw(); });
}

int vgpu_backend_dirty_log_start(VgpuBackend* b, char* err, size_t err_len) {
  return status_call(b, err, err_len, [&] { return b->impl->dirty_log(true); });
}

void vgpu_backend_migrated(VgpuBackend* b) {
  guarded_void(b, [&] { b->impl->migrated(); });
}

void vgpu_backend_dirty_log_stop(VgpuBackend* b) {
  guarded_void(b, [&] { (void)b->impl->dirty_log(false); });
}

int64_t vgpu_backend_dirty_log_take(VgpuBackend* b, uint64_t* bitmap, size_t words) {
  return guarded(b, int64_t{-1}, [&]() -> int64_t {
    if (bitmap == nullptr) return -1;
    vgpu::Result<uint64_t> n = b->impl->dirty_log_take({bitmap, words});
    return n ? static_cast<int64_t>(*n) : -1;
  });
}

int vgpu_backend_device_only_bytes(VgpuBackend* b, uint64_t* bytes, char* err, size_t err_len) {
  return guarded(b, -1, [&] {
    vgpu::Result<uint64_t> n = b->impl->device_only_bytes();
    if (!n) {
      put_error(err, err_len, n.error().message);
      return -1;
    }
    if (bytes) *bytes = *n;
    return 0;
  });
}

int vgpu_backend_write_back(VgpuBackend* b, uint64_t budget, uint64_t* written, uint64_t* left, char* err,
                            size_t err_len) {
  return guarded(b, -1, [&] {
    vgpu::Result<vgpu::capi::Backend::WriteBack> w = b->impl->write_back(budget);
    if (!w) {
      put_error(err, err_len, w.error().message);
      return -1;
    }
    if (written) *written = w->bytes;
    if (left) *left = w->left;
    return 0;
  });
}

int vgpu_backend_save_state(VgpuBackend* b, uint8_t** data, size_t* len, char* err, size_t err_len) {
  return guarded(b, -1, [&] {
    vgpu::Result<std::vector<uint8_t>> image = b->impl->save_state();
    if (!image) {
      put_error(err, err_len, image.error().message);
      return -1;
    }
    auto* out = static_cast<uint8_t*>(std::malloc(std::max<size_t>(image->size(), 1)));
    if (out == nullptr) {
      put_error(err, err_len, "vgpu: no memory for the migration image");
      return -1;
    }
    std::memcpy(out, image->data(), image->size());
    *data = out;
    *len = image->size();
    return 0;
  });
}

void vgpu_backend_free_state(uint8_t* data) { std::free(data); }

int vgpu_backend_load_state(VgpuBackend* b, const uint8_t* data, size_t len, char* err, size_t err_len) {
  return status_call(b, err, err_len, [&] { return b->impl->load_state({data, len}); });
}

}  // extern "C"
