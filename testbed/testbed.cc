// SPDX-License-Identifier: GPL-2.0-or-later
#include "testbed/testbed.h"

#include <barrier>
#include <thread>

#include "common/text.h"
#include "driver/native_port.h"
#include "testbed/mediated_port.h"
#include "testbed/worker_env.h"
#include "pv-driver/pv_page_tables.h"

namespace vgpu::testbed {

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::native: return "native";
    case Mode::fv_naive: return "fv-naive";
    case Mode::fv_opt: return "fv-opt";
    case Mode::pv: return "pv";
  }
  return "?";
}

std::string mode_identifier(Mode m) {
  std::string n = mode_name(m);
  std::erase(n, '-');
  return n;
}

Result<Mode> parse_mode(std::string_view name) {
  for (Mode m : {Mode::native, Mode::fv_naive, Mode::fv_opt, Mode::pv})
    if (name == mode_name(m)) return m;
  return fail(Errc::invalid_argument, "unknown mode '" + std::string(name) + "' (native, fv-naive, fv-opt, pv)");
}

Result<std::unique_ptr<Testbed>> Testbed::create(const TestbedConfig& config) {
  if (config.vms == 0) return fail(Errc::invalid_argument, "testbed: at least one VM");
  if (config.mode == Mode::native && config.vms != 1)
    return fail(Errc::invalid_argument, "testbed: native mode runs exactly one VM (it owns the GPU)");
  if (!config.weights.empty() && config.weights.size() != config.vms)
    return fail(Errc::invalid_argument, strfmt("testbed: %zu weights for %u VMs", config.weights.size(), config.vms));
  if (config.slice_blocks.size() > 1 && config.slice_blocks.size() != config.vms)
    return fail(Errc::invalid_argument,
                strfmt("testbed: %zu slice sizes for %u VMs", config.slice_blocks.size(), config.vms));
  std::unique_ptr<Testbed> tb(new Testbed(config));
  if (config.mode == Mode::pv) tb->config_.device.paravirtual = pvdriver::open_pv_tables;
  for (uint32_t i = 0; i < config.vms; ++i) {
    auto ram = gpu::MemfdRam::create(config.ram_per_vm, "vgpu-guest-ram-vm" + std::to_string(i));
    if (!ram) return std::unexpected(ram.error().context("testbed"));
    tb->rams_.push_back(std::move(*ram));
  }
  const auto ram_span = [&tb](uint32_t i) { return std::span(tb->rams_[i]->data(), tb->rams_[i]->size()); };
  if (config.mode == Mode::native) {
    auto gpu = gpu::Gpu::create(
        gpu::GpuConfig{.vram_bytes = config.vram_per_vm, .clock = config.clock, .sysmem = tb->rams_[0]});
    if (!gpu) return std::unexpected(gpu.error().context("testbed"));
    tb->gpu_ = std::move(*gpu);
    auto port = driver::NativePort::create(*tb->gpu_);
    if (!port) return std::unexpected(port.error().context("testbed"));
    (*port)->set_pinned_ram(ram_span(0), 0);
    tb->ports_.push_back(std::move(*port));
    return tb;
  }
  mediator::HostConfig hc;
  hc.vram_bytes = config.vram_per_vm * config.vms + hc.reserved_bytes;
  hc.clock = config.clock;
  hc.scheduler = config.scheduler;
  hc.turn_ns = config.turn_ns;
  hc.turn_hold_ns = config.turn_hold_ns;
  hc.turn_hold_max_ns = config.turn_hold_max_ns;
  hc.ring_ahead = config.ring_ahead;
  hc.slice_on_demand = config.slice_on_demand;
  hc.max_gpu_ms = config.max_gpu_ms;
  hc.log = config.log;
  hc.on_turn = config.on_turn;
  hc.device_factory = config.device_factory;
  if (!hc.device_factory) {
    auto workers = worker_factory_from_env(config.max_gpu_ms);
    if (!workers) return std::unexpected(workers.error().context("testbed"));
    hc.device_factory = std::move(*workers);
  }
  auto host = mediator::Host::create(hc);
  if (!host) return std::unexpected(host.error().context("testbed"));
  tb->host_ = std::move(*host);
  const bool opt = config.mode == Mode::fv_opt || config.mode == Mode::pv;
  for (uint32_t i = 0; i < config.vms; ++i) {
    mediator::VgpuConfig vc;
    vc.name = "vm" + std::to_string(i);
    vc.vram_bytes = config.vram_per_vm;
    vc.channels = config.channels_per_vm;
    vc.bar_remap = opt;
    vc.lazy_shadow = opt;
    vc.pv = config.mode == Mode::pv;
    vc.weight = config.weights.empty() ? 1 : config.weights[i];
    vc.watchdog_ms = config.watchdog_ms;
    if (!config.slice_blocks.empty()) vc.slice_blocks = config.slice_blocks[config.slice_blocks.size() > 1 ? i : 0];
    auto v = tb->host_->create_vgpu(vc);
    if (!v) return std::unexpected(v.error().context("testbed"));
    tb->vgpus_.push_back(*v);
    // The hypervisor's view of the VM's RAM: one range at guest-physical 0.
    if (Status s = tb->host_->set_guest_ram(**v, {{0, config.ram_per_vm, tb->rams_[i], 0}}); !s)
      return std::unexpected(s.error().context("testbed"));
    auto port = MediatedPort::create(**v, tb->host_->gpu().vram());
    if (!port) return std::unexpected(port.error().context("testbed"));
    (*port)->set_pinned_ram(ram_span(i), 0);
    tb->ports_.push_back(std::move(*port));
  }
  return tb;
}

Testbed::~Testbed() {
  ports_.clear();
  if (host_)
    for (auto* v : vgpus_) host_->destroy_vgpu(v);
}

gpu::Gpu& Testbed::gpu() { return host_ ? host_->gpu() : *gpu_; }

std::vector<Status> Testbed::run(const std::function<Status(Vm&)>& fn) {
  const uint32_t n = vms();
  std::vector<Status> results(n);
  std::barrier start(static_cast<std::ptrdiff_t>(n));
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      auto dev = driver::Device::open(*ports_[i], config_.device);
      start.arrive_and_wait();
      if (!dev) {
        results[i] = std::unexpected(dev.error().context("vm" + std::to_string(i) + ": open"));
        return;
      }
      Vm vm{i, *ports_[i], **dev};
      Status s = fn(vm);
      results[i] = s ? s : std::unexpected(s.error().context("vm" + std::to_string(i)));
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

std::optional<mediator::CounterSnapshot> Testbed::counters(uint32_t vm) const {
  if (vm >= vgpus_.size()) return std::nullopt;
  return vgpus_[vm]->counters();
}

}  // namespace vgpu::testbed
