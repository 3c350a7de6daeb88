// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/model.h"

#include "common/spin_lock.h"
#include "gpu/device/backend.h"

namespace vgpu::gpu {

using namespace regs;

Result<std::unique_ptr<Gpu>> Gpu::create(const GpuConfig& config) {
  auto model = GpuModel::create(config);
  if (!model) return std::unexpected(model.error());
  return std::unique_ptr<Gpu>(std::move(*model));
}

Result<std::unique_ptr<GpuModel>> GpuModel::create(const GpuConfig& config) {
  if (config.vram_bytes == 0 || config.vram_bytes % MiB != 0)
    return fail(Errc::invalid_argument, "gpu model: VRAM size must be a non-zero multiple of 1 MiB");
  auto backend = config.device_factory ? Result<EngineBackend>(EngineBackend::worker)
                                       : effective_engine_backend(config.backend);
  if (!backend) return std::unexpected(backend.error().context("gpu model"));
  auto vram = Vram::create(config.vram_bytes);
  if (!vram) return std::unexpected(vram.error().context("gpu model"));
  auto fences = device_fences_enabled();
  if (!fences) return std::unexpected(fences.error().context("gpu model"));
  auto device = config.device_factory ? config.device_factory(**vram) : make_device(*backend, **vram);
  if (!device) return std::unexpected(device.error().context("gpu model"));
  std::unique_ptr<GpuModel> model(new GpuModel(config, std::move(*vram), *backend, std::move(*device), *fences));
  if (Status s = model->build_register_table(); !s) return std::unexpected(s.error().context("gpu model"));
  return model;
}

GpuModel::GpuModel(const GpuConfig& config, std::unique_ptr<Vram> vram, EngineBackend backend,
                   std::unique_ptr<Device> device, bool device_fences)
    : config_(config),
      log_(config.log),
      vram_(std::move(vram)),
      backend_(backend),
      device_(std::move(device)),
      residency_(device_ ? std::make_unique<ResidencyTracker>(vram_->size(), *device_, &vram_->dirty_log()) : nullptr),
      device_engines_(device_ ? std::make_unique<DeviceEngines>(*device_, *residency_, device_fences) : nullptr),
      clock_(make_clock(config.clock)),
      mmu_(std::make_unique<Mmu>(*vram_)),
      regs_([this](const std::string& line) { log_.guest_error(line); }),
      pmc_(Pmc::Hooks{[this] { return unit_interrupts(); },
                      [this](uint32_t before, uint32_t after) { enable_changed(before, after); }}),
      pbus_(*vram_, [this](Bar bar, uint32_t value) { bars_.bind(bar, value); }),
      ptimer_(*clock_),
      fb_(config.vram_bytes, [this](std::optional<uint64_t> pdb) { invalidate(pdb); }),
      bars_(*vram_, *mmu_),
      irq_([this] {
        std::lock_guard l(mutex_);
        return line_state();
      }),
      pfifo_(Pfifo::Deps{*vram_, *mmu_, *clock_, cost_, mutex_, faults_, events_, log_,
                         [this] { return pmc_.enabled(pmc::enable::Pfifo::mask); }, [this] { return ptimer_.poll(); },
                         [this] { notify(); },
                         [this](uint64_t pdb) {
                           std::lock_guard l(mutex_);
                           invalidate(pdb);
                         },
                         device_engines_.get(), &modules_}) {
  if (residency_) vram_->set_observer(residency_.get());
  set_system_memory(config.sysmem);
  pfifo_.start();
}

GpuModel::~GpuModel() {
  pfifo_.stop();
  if (device_) mmu_->system_memory()->detach(*device_);
  vram_->set_observer(nullptr);
}

void GpuModel::set_system_memory(std::shared_ptr<SystemMemory> sysmem) {
  std::lock_guard l(sysmem_mutex_);
  std::shared_ptr<SystemMemory> old = mmu_->system_memory();
  if (device_ && sysmem) sysmem->attach(*device_);
  mmu_->set_system_memory(std::move(sysmem));
  if (device_) old->detach(*device_);  // waits for DMA holding it
}

Status GpuModel::build_register_table() {
  regs_.set_gate([this](Gate g) { return gate_open(g); });
  for (std::vector<RegRow> unit : {pmc_.registers(), pbus_.registers(), ptimer_.registers(), fb_.registers(),
                                   faults_.registers(), pfifo_.registers()})
    for (RegRow& row : unit)
      if (Status s = regs_.add(std::move(row)); !s) return s;
  return {};
}

bool GpuModel::gate_open(Gate g) const {
  switch (g) {
    case Gate::none: return true;
    case Gate::pfifo: return pmc_.enabled(pmc::enable::Pfifo::mask);
    case Gate::ptimer: return pmc_.enabled(pmc::enable::Ptimer::mask);
  }
  return false;
}

uint32_t GpuModel::unit_interrupts() const {
  uint32_t bits = 0;
  if (gate_open(Gate::pfifo) && pfifo_.pending()) bits |= pmc::intr::Pfifo::mask;
  if (gate_open(Gate::ptimer) && ptimer_.pending()) bits |= pmc::intr::Ptimer::mask;
  if (pbus_.pending()) bits |= pmc::intr::Pbus::mask;
  return bits;
}

LineState GpuModel::line_state() const {
  return LineState{pmc_.line(), pfifo_.raised(), pmc_.delivers(pmc::intr::Pfifo::mask)};
}

void GpuModel::enable_changed(uint32_t before, uint32_t after) {
  // Clearing a unit's bit holds it in reset: the guest reclaims everything.
  const auto cleared = [&](uint32_t mask) { return (before & mask) && !(after & mask); };
  if (cleared(pmc::enable::Pfifo::mask)) pfifo_.reset();
  if (cleared(pmc::enable::Ptimer::mask)) ptimer_.reset();
}

void GpuModel::invalidate(std::optional<uint64_t> pdb) {
  if (pdb)
    mmu_->invalidate(*pdb);
  else
    mmu_->invalidate_all();
  // The BARs reload their bindings (and so bump the generation).
  bars_.bind(Bar::bar1, pbus_.bar_inst(Bar::bar1));
  bars_.bind(Bar::bar3, pbus_.bar_inst(Bar::bar3));
}

void GpuModel::notify() {
  irq_.update();
  events_.flush();
}

uint32_t GpuModel::read32(uint32_t offset) {
  uint32_t value;
  {
    std::unique_lock l(mutex_, std::defer_lock);
    lock_spinning(l);  // PFIFO's loop holds it for a moment at a time
    (void)ptimer_.poll();
    value = regs_.read(offset);
  }
  notify();
  return value;
}

uint32_t Gpu::channel_state(uint32_t chid) {
  return chid < NUM_CHANNELS ? read32(pfifo::CHAN_STATE[chid].offset) : BAD_REGISTER;
}

// The value read32 gives; the clock poll and the delivery it would make
// are left to the next register access or PFIFO's own (one lock instead of
// four, on the path of every dispatch).
uint32_t GpuModel::channel_state(uint32_t chid) {
  if (chid >= NUM_CHANNELS) return BAD_REGISTER;
  std::unique_lock l(mutex_, std::defer_lock);
  lock_spinning(l);
  return regs_.read(pfifo::CHAN_STATE[chid].offset);
}

// A write that leaves the line's inputs as they were (most acknowledgements
// of nothing pending) skips the line's update: a change another thread made
// meanwhile is delivered by that thread's own notify. Events are delivered
// as always.
void GpuModel::write32(uint32_t offset, uint32_t value) {
  bool line_changed;
  {
    std::unique_lock l(mutex_, std::defer_lock);
    lock_spinning(l);
    const LineState before = line_state();
    regs_.write(offset, value);
    line_changed = line_state() != before;
  }
  if (line_changed) irq_.update();
  events_.flush();
}

void GpuModel::record_bar_fault(const Fault& f) {
  {
    std::lock_guard l(mutex_);
    faults_.record(f);
    pbus_.raise(pbus::IntrMmioFault::mask);
  }
  notify();
}

uint32_t GpuModel::bar_read32(Bar bar, uint64_t offset) {
  auto v = bars_.read32(bar, offset);
  if (v) return *v;
  record_bar_fault(v.error());
  return ~0u;
}

void GpuModel::bar_write32(Bar bar, uint64_t offset, uint32_t value) {
  if (auto r = bars_.write32(bar, offset, value); !r) return record_bar_fault(r.error());
  if (bar == Bar::bar1) pfifo_.doorbell(offset);
}

void GpuModel::map_directly(uint64_t vram_addr, uint64_t bytes) {
  if (residency_) residency_->mark_direct(vram_addr, bytes);
}

std::optional<BarPage> GpuModel::bar_translate(Bar bar, uint64_t offset) {
  auto page = bars_.translate(bar, offset);
  // The caller maps it for direct CPU access: never device-only from now.
  if (page && residency_) residency_->mark_direct(page->vram_addr, page->bytes);
  return page;
}

void GpuModel::set_interrupt_handler(std::function<void(bool)> handler) {
  irq_.set_handler(std::move(handler));
  irq_.update();
}

void GpuModel::set_message_handler(std::function<void(pci::MsiVector)> handler) {
  irq_.set_message_handler(std::move(handler));
}

void GpuModel::set_channel_event_handler(std::function<void(const ChannelEvent&)> handler) {
  events_.set_handler(std::move(handler));
}

bool GpuModel::wait_idle(uint64_t timeout_ns) { return pfifo_.wait_idle(timeout_ns); }

RegStats GpuModel::register_stats() {
  std::lock_guard l(mutex_);
  return regs_.stats();
}

std::optional<uint64_t> GpuModel::device_releases() const {
  if (!device_engines_) return std::nullopt;
  return pfifo_.device_releases();
}

std::optional<uint64_t> GpuModel::placement_hits() const {
  if (!device_engines_) return std::nullopt;
  return device_engines_->placements.hits();
}

}  // namespace vgpu::gpu
