// SPDX-License-Identifier: GPL-2.0-or-later
// The full-virtualization backend: the mediator (mediator/host.h) with one
// vGPU, embedded in the QEMU process. Every trapped BAR access goes to the
// vGPU's trap handlers; the BAR layout for remapping is the vGPU's direct
// ranges, everything between them trapped; the layout generation is the
// vGPU's, so QEMU rebuilds its memory map exactly when the mediator's
// layout changes (guest BAR TLB invalidates, table pages found, USERD base).
#include <atomic>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "capi/backend.h"
#include "common/text.h"
#include "gpu/device/backend.h"
#include "capi/dma_memory.h"
#include "mediator/host.h"

namespace vgpu::capi {
namespace {

gpu::Bar to_gpu(VgpuBar bar) { return bar == VGPU_BAR1 ? gpu::Bar::bar1 : gpu::Bar::bar3; }

VgpuTurnEnd to_c(mediator::TurnEnd end) {
  switch (end) {
    case mediator::TurnEnd::drained: return VGPU_TURN_DRAINED;
    case mediator::TurnEnd::out_of_time: return VGPU_TURN_OUT_OF_TIME;
    case mediator::TurnEnd::stopped: return VGPU_TURN_STOPPED;
    case mediator::TurnEnd::error: return VGPU_TURN_ERROR;
    case mediator::TurnEnd::empty: return VGPU_TURN_EMPTY;
  }
  return VGPU_TURN_STOPPED;
}

static_assert(VGPU_DIRTY_PAGE_BYTES == gpu::DirtyLog::PAGE, "vgpu_capi.h's dirty page is the dirty log's");

class MediatorBackend final : public Backend {
 public:
  MediatorBackend(std::unique_ptr<mediator::Host> host, mediator::Vgpu& vgpu, std::shared_ptr<WorkerSlot> workers)
      : host_(std::move(host)), vgpu_(vgpu), workers_(std::move(workers)) {
    vgpu_.set_interrupt_handler([this](bool asserted) { interrupts_.line(asserted); });
    vgpu_.set_message_handler([this](regs::pci::MsiVector v) { interrupts_.message(static_cast<unsigned>(v)); });
  }
  ~MediatorBackend() override {
    (void)dirty_log(false);
    vgpu_.set_interrupt_handler(nullptr);
    vgpu_.set_message_handler(nullptr);
    host_->destroy_vgpu(&vgpu_);
  }

  const char* kind() const override { return "mediator"; }

  uint32_t bar0_read32(uint32_t offset) override { return vgpu_.read32(offset); }
  void bar0_write32(uint32_t offset, uint32_t value) override { vgpu_.write32(offset, value); }
  uint32_t bar_read32(VgpuBar bar, uint64_t offset) override { return vgpu_.bar_read32(to_gpu(bar), offset); }
  void bar_write32(VgpuBar bar, uint64_t offset, uint32_t value) override {
    vgpu_.bar_write32(to_gpu(bar), offset, value);
  }
  uint64_t bar_size(VgpuBar bar) const override { return vgpu_.bar_size(to_gpu(bar)); }
  uint64_t bar_generation() const override { return vgpu_.layout_generation(); }
  void reset() override { vgpu_.write32(regs::pmc::ENABLE.offset, 0); }

  std::vector<VgpuBarRange> bar_layout(VgpuBar bar) override {
    const uint64_t size = bar_size(bar);
    const shadow::Partition& part = vgpu_.partition();
    std::vector<VgpuBarRange> out;
    uint64_t at = 0;
    for (const mediator::DirectRange& r : vgpu_.direct_ranges(to_gpu(bar))) {
      // Read-only pages stay trapped (writes must fault); so does anything
      // outside the partition, which the VM's VRAM fd does not hold.
      if (r.read_only || r.vram_addr < part.base || !part.contains(r.vram_addr - part.base, r.bytes)) continue;
      if (r.bar_offset > at) out.push_back(VgpuBarRange{at, 0, r.bar_offset - at, true});
      out.push_back(VgpuBarRange{r.bar_offset, r.vram_addr - part.base, r.bytes, false});
      at = r.bar_offset + r.bytes;
    }
    if (at < size) out.push_back(VgpuBarRange{at, 0, size - at, true});
    return out;
  }

  // The partition's own memfd (VgpuConfig::own_vram_fd): the front end maps
  // the guest's VRAM and nothing of the host's reserved VRAM, and migrates
  // exactly that (docs/migration.md §5).
  int vram_fd() const override { return vgpu_.vram_fd(); }
  uint64_t vram_size() const override { return vgpu_.partition().size; }

  nlohmann::ordered_json counters_json() const override {
    nlohmann::ordered_json j = vgpu_.counters().json();
    if (workers_) j["worker"] = worker_json(workers_.get(), vgpu_.id());
    return j;
  }

  VgpuEventCounts event_counts() const override {
    const mediator::CounterSnapshot c = vgpu_.counters();
    return VgpuEventCounts{.doorbells = c.doorbells, .faults = c.faults, .round_trips = 0};
  }

  // fv: the front end's DMA reaches guest-physical addresses; the host puts
  // each RAM range the hypervisor reports in this VM's bus slot, backed by
  // it at the same guest-physical address.
  Status set_dma(VgpuDmaFn fn, void* opaque) override {
    std::lock_guard lock(ram_mutex_);
    dma_ = fn ? std::make_shared<DmaMemory>(fn, opaque) : nullptr;
    return apply_ram();
  }
  Status set_guest_ram(const std::vector<VgpuRamRange>& ranges) override {
    std::lock_guard lock(ram_mutex_);
    ram_ = ranges;
    return apply_ram();
  }

  // Migration: the vGPU's own calls, and the VRAM's dirty log over its
  // partition (docs/migration.md §5).
  std::string migration_refusal() const override { return {}; }
  Status freeze(uint64_t timeout_ms) override { return vgpu_.freeze(timeout_ms * 1'000'000); }
  void thaw() override { vgpu_.thaw(); }
  Status dirty_log(bool on) override {
    gpu::DirtyLog& log = host_->gpu().vram().dirty_log();
    if (on && !logging_.exchange(true)) log.start();
    if (!on && logging_.exchange(false)) log.stop();
    return {};
  }
  Result<uint64_t> dirty_log_take(std::span<uint64_t> bitmap) override {
    const shadow::Partition& p = vgpu_.partition();
    const uint64_t words = (p.size / gpu::DirtyLog::PAGE + gpu::DirtyLog::PAGES_PER_WORD - 1) /
                           gpu::DirtyLog::PAGES_PER_WORD;
    if (bitmap.size() < words)
      return fail(Errc::invalid_argument, strfmt("vgpu: a dirty bitmap of %zu words is short of the %llu that "
                                                 "%llu MiB of VRAM need",
                                                 bitmap.size(), static_cast<unsigned long long>(words),
                                                 static_cast<unsigned long long>(p.size / MiB)));
    return host_->gpu().vram().dirty_log().take(p.base, p.size, bitmap);
  }
  Result<std::vector<uint8_t>> save_state() override { return vgpu_.export_image(); }
  Result<uint64_t> device_only_bytes() override { return vgpu_.device_only_bytes(); }
  Result<WriteBack> write_back(uint64_t budget) override {
    const gpu::WriteBack w = vgpu_.write_back(budget);
    return WriteBack{w.bytes, w.left};
  }
  Status load_state(std::span<const uint8_t> image) override { return vgpu_.import_image(image); }

 private:
  Status apply_ram() {  // ram_mutex_ held
    std::vector<mediator::Host::GuestRamRange> ranges;
    if (dma_)
      for (const VgpuRamRange& r : ram_) ranges.push_back({r.gpa, r.size, dma_, r.gpa});
    return host_->set_guest_ram(vgpu_, std::move(ranges));
  }

  std::unique_ptr<mediator::Host> host_;
  mediator::Vgpu& vgpu_;
  std::mutex ram_mutex_;
  std::shared_ptr<DmaMemory> dma_;
  std::vector<VgpuRamRange> ram_;
  std::atomic<bool> logging_{false};     // this backend's start of the VRAM's dirty log
  std::shared_ptr<WorkerSlot> workers_;  // backend=cuda: this vGPU's worker
};

}  // namespace

Result<std::unique_ptr<Backend>> make_mediator_backend(const BackendConfig& config) {
  mediator::HostConfig hc = config.host;
  hc.vram_bytes = config.vgpu.vram_bytes + hc.reserved_bytes;
  // This VM's turns only; its id is known once it exists (0 matches none).
  auto own_id = std::make_shared<std::atomic<uint32_t>>(0);
  if (config.turn)
    hc.on_turn = [fn = config.turn, own_id](const mediator::TurnEvent& e) {
      if (e.vm == own_id->load(std::memory_order_acquire)) fn(e.start, to_c(e.end), e.gpu_ns);
    };
  auto host = mediator::Host::create(hc);
  if (!host)
    return std::unexpected(
        host.error().context(strfmt("%s=%s", VGPU_OPT_BACKEND, gpu::engine_backend_name(hc.engine_backend))));
  mediator::VgpuConfig vc = config.vgpu;
  vc.own_vram_fd = true;  // the front end maps (and migrates) the partition only
  auto vgpu = (*host)->create_vgpu(vc);
  // backend=cuda: the vGPU's worker starts here.
  if (!vgpu)
    return std::unexpected(config.workers ? vgpu.error().context(strfmt("%s=cuda", VGPU_OPT_BACKEND)) : vgpu.error());
  own_id->store((*vgpu)->id(), std::memory_order_release);
  return std::make_unique<MediatorBackend>(std::move(*host), **vgpu, config.workers);
}

}  // namespace vgpu::capi
