// SPDX-License-Identifier: GPL-2.0-or-later
#include "mediator/host.h"

#include <algorithm>
#include <chrono>

#include "common/text.h"
#include "gpu/device/device.h"
#include "gpu/model.h"
#include "mediator/reg_names.h"
#include "vgpu/classes.h"
#include "vgpu/formats.h"

namespace vgpu::mediator {
namespace {


// The host's own BAR1 address space maps the USERD pages of all physical
// channels at BAR1 offset 0, so a physical doorbell is a BAR1 write.
constexpr uint64_t USERD_ARRAY_BYTES = uint64_t{regs::NUM_CHANNELS} * regs::userd::SIZE;
constexpr uint64_t RUNLIST_BYTES = uint64_t{regs::NUM_CHANNELS} * regs::runlist::ENTRY_BYTES;
constexpr uint64_t RUNLIST_WAIT_NS = 2'000'000'000;
// A slice of the GPU's channel work lasts microseconds; this bounds a wait
// for one that never ends (a model bug), so that unbinding still finishes.
constexpr uint64_t PREEMPT_WAIT_NS = 1'000'000'000;
// Engine work is not preemptive: the longest a launch may run (the spin
// kernel's bound), and a margin.
constexpr uint64_t ENGINE_WAIT_NS = cls::MAX_SPIN_NS + 1'000'000'000;
// How often the watchdog looks at the in-flight submission's channel.
constexpr auto WATCHDOG_PERIOD = std::chrono::milliseconds(1);

}  // namespace

Result<std::unique_ptr<Host>> Host::create(const HostConfig& config) {
  if (config.reserved_bytes == 0 || config.reserved_bytes % MiB || config.reserved_bytes >= config.vram_bytes)
    return fail(Errc::invalid_argument,
                strfmt("host: reserved VRAM %s must be a non-zero MiB multiple below the VRAM size %s",
                       hex(config.reserved_bytes).c_str(), hex(config.vram_bytes).c_str()));
  constexpr uint64_t NS_PER_MS = 1'000'000;
  if (Status s = check_options(
          {{VGPU_OPT_TURN_MS, (config.turn_ns + NS_PER_MS - 1) / NS_PER_MS}, {VGPU_OPT_MAX_GPU_MS, config.max_gpu_ms}});
      !s)
    return std::unexpected(s.error().context("host"));
  sched::PolicyParams params = config.sched_params;
  params.turn_ns = config.turn_ns;  // BAND sizes each VM's turn within it
  auto policy = sched::make_policy(config.scheduler, params);
  if (!policy) return std::unexpected(policy.error().context("host"));
  std::unique_ptr<Host> host(new Host(config));
  auto gpu = gpu::Gpu::create(gpu::GpuConfig{.vram_bytes = config.vram_bytes,
                                             .clock = config.clock,
                                             .log = config.log,
                                             .backend = config.engine_backend,
                                             .sysmem = host->bus_,
                                             .device_factory = config.device_factory});
  if (!gpu) return std::unexpected(gpu.error().context("host"));
  host->gpu_ = std::move(*gpu);
  gpu::Vram& vram = host->gpu_->vram();
  host->reserved_ = std::make_unique<shadow::ReservedVram>(vram, 0, config.reserved_bytes,
                                                           [h = host.get()] { h->invalidate_all_physical(); });
  host->partitions_ = std::make_unique<shadow::ReservedVram>(vram, config.reserved_bytes,
                                                             config.vram_bytes - config.reserved_bytes);
  Host* h = host.get();
  host->turn_ = std::make_unique<Turn>(
      Turn::Config{.turn_ns = config.turn_ns,
                   .hold_ns = config.turn_hold_ns,
                   .hold_max_ns = config.turn_hold_max_ns,
                   .ring_ahead = config.ring_ahead,
                   .real_clock = config.clock == ClockKind::real,
                   .on_turn = config.on_turn},
      Turn::Deps{.find = [h](uint32_t vm) -> std::shared_ptr<TurnChannels> { return h->find(vm); },
                 .now_ns = [h] { return h->now_ns(); },
                 .wake_watchdog = [h] { h->wake_watchdog(); },
                 .internal_failure = [h](const char* doing, const char* what) { h->internal_failure(doing, what); }});
  host->dispatcher_ = std::make_unique<sched::Dispatcher>(std::move(*policy), host->gpu_->clock(), *host->turn_);
  host->turn_->attach(*host->dispatcher_);
  // Another VM waiting for the GPU cuts the running VM's on-demand pieces.
  if (config.slice_on_demand)
    host->dispatcher_->set_queue_observer([h](bool queued) {
      h->others_waiting_.store(queued);
      h->write_slice_yield();
    });
  if (Status s = host->bring_up(); !s) return std::unexpected(s.error().context("host"));
  host->gpu_->set_channel_event_handler([h = host.get()](const gpu::ChannelEvent& e) { h->post(e); });
  host->dispatcher_->start_thread();
  host->watchdog_ = std::thread([h = host.get()] { h->watchdog_main(); });
  return host;
}

Host::Host(const HostConfig& config) : config_(config), log_(config.log) {}

Host::~Host() {
  {
    std::lock_guard lock(watchdog_mutex_);
    watchdog_stop_ = true;
  }
  watchdog_cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  if (dispatcher_) dispatcher_->stop_thread();
  {
    std::unique_lock gate(events_gate_);
    std::lock_guard lock(events_mutex_);
    events_closed_ = true;
    events_.clear();
  }
  // A vGPU's teardown unbinds its channels through the host, so it runs
  // with the host's mutex free.
  std::vector<std::shared_ptr<Vgpu>> remaining;
  {
    MediatorLock lock(mutex_);
    remaining.swap(vgpus_);
    by_pchid_ = {};
  }
  remaining.clear();
  if (gpu_) gpu_->set_channel_event_handler(nullptr);
}

Status Host::bring_up() {
  gpu::Gpu& g = *gpu_;
  g.write32(pmc::ENABLE.offset, pmc::enable::ALL);
  g.write32(pmc::PBDMA_ENABLE.offset, regs::ALL_PBDMA);
  g.write32(pf::CTRL.offset, pf::CtrlEnable::mask);
  g.write32(pf::INTR_EN.offset, ~uint32_t{0});
  g.write32(pf::ENGINE_TIMEOUT.offset, config_.max_gpu_ms);

  // USERD pages and the BAR1 address space that maps them.
  auto userd = reserved_->alloc(USERD_ARRAY_BYTES);
  auto inst = reserved_->alloc(regs::inst::SIZE);
  auto pd = reserved_->alloc(fmt::PD.table_bytes());
  auto spt = reserved_->alloc(fmt::SPT.table_bytes());
  auto rl0 = reserved_->alloc(RUNLIST_BYTES);
  auto rl1 = reserved_->alloc(RUNLIST_BYTES);
  if (!userd || !inst || !pd || !spt || !rl0 || !rl1)
    return fail(Errc::out_of_memory, "reserved VRAM too small for the host's own structures");
  userd_base_ = *userd;
  runlist_buf_ = {*rl0, *rl1};
  gpu::Vram& vram = g.vram();
  vram.write64(*pd, fmt::pde::make(*spt, 0));
  for (uint64_t off = 0; off < USERD_ARRAY_BYTES; off += fmt::SMALL_PAGE)
    vram.write64(*spt + fmt::SPT.index(off) * fmt::SPT.entry_bytes, fmt::pte::make(userd_base_ + off));
  fmt::encode_address_space(fmt::AddressSpace{.pdb = *pd, .limit = USERD_ARRAY_BYTES - 1}, vram.writer(*inst));
  g.write32(pbus::BAR1_INST.offset,
            pbus::BarInstMode::mask | pbus::BarInstAddr::make(static_cast<uint32_t>(*inst >> pbus::BAR_INST_SHIFT)));
  g.write32(pf::USERD_BASE.offset, pf::UserdBaseEnable::mask | pf::UserdBaseAddr::make(0));
  return {};
}

Result<Vgpu*> Host::create_vgpu(const VgpuConfig& config) {
  if (Status s = check_vgpu_config(config); !s) return std::unexpected(s.error().context("vgpu " + config.name));
  // A vGPU refused after it was made goes after the lock is released: its
  // destructor takes the lock (a device that could not start the VM's
  // worker deadlocked here).
  std::shared_ptr<Vgpu> refused;
  MediatorLock lock(mutex_);
  uint32_t base = 0, run = 0;
  for (uint32_t c = 0; c < regs::NUM_CHANNELS && run < config.channels; ++c) {
    if (by_pchid_[c]) {
      run = 0;
      base = c + 1;
    } else {
      ++run;
    }
  }
  if (run < config.channels)
    return fail(Errc::out_of_memory,
                strfmt("vgpu %s: no run of %u free physical channels", config.name.c_str(), config.channels));
  gpu::VmDevices* devices = vm_devices();
  auto part = partitions_->alloc(config.vram_bytes,
                                 devices ? std::max(fmt::BIG_PAGE, devices->partition_align()) : fmt::BIG_PAGE);
  auto mib = [](uint64_t bytes) { return static_cast<unsigned long long>(bytes / MiB); };
  if (!part) {
    const uint64_t free = partitions_->size() - partitions_->used();
    return fail(Errc::out_of_memory,
                strfmt("vgpu %s: %llu MiB of VRAM asked, %llu MiB free%s", config.name.c_str(), mib(config.vram_bytes),
                       mib(free), free >= config.vram_bytes ? " but not in one piece" : ""));
  }
  auto shadows = reserved_->alloc(config.shadow_bytes);
  if (!shadows) {
    partitions_->free(*part);
    return fail(Errc::out_of_memory,
                strfmt("vgpu %s: its shadows need %llu MiB of reserved VRAM, %llu MiB free", config.name.c_str(),
                       mib(config.shadow_bytes), mib(reserved_->size() - reserved_->used())));
  }
  const uint32_t id = next_id_++;
  auto v = std::make_shared<Vgpu>(*this, id, config, shadow::Partition{*part, config.vram_bytes}, base, *shadows);
  if (Status s = dispatcher_->add_vm(id, config.weight); !s) {
    refused = std::move(v);
    partitions_->free(*part);
    reserved_->free(*shadows);
    return std::unexpected(s.error().context("vgpu " + config.name));
  }
  if (devices) {
    if (Status s = devices->add_vm(id, *part, config.vram_bytes, base, config.channels); !s) {
      refused = std::move(v);
      (void)dispatcher_->remove_vm(id);
      partitions_->free(*part);
      reserved_->free(*shadows);
      return std::unexpected(s.error().context("vgpu " + config.name));
    }
  }
  if (config.own_vram_fd) {
    auto fd = gpu_->vram().detach(*part, config.vram_bytes);
    if (!fd) {
      (void)dispatcher_->remove_vm(id);
      if (devices) devices->remove_vm(id);
      refused = std::move(v);
      partitions_->free(*part);
      reserved_->free(*shadows);
      return std::unexpected(fd.error().context("vgpu " + config.name));
    }
    v->adopt_vram_fd(*fd);
  }
  for (uint32_t c = 0; c < config.channels; ++c) by_pchid_[base + c] = v;
  vgpus_.push_back(v);
  return v.get();
}

gpu::VmDevices* Host::vm_devices() {
  auto* model = dynamic_cast<gpu::GpuModel*>(gpu_.get());
  return model ? dynamic_cast<gpu::VmDevices*>(model->device()) : nullptr;
}

Status Host::set_guest_ram(Vgpu& vgpu, std::vector<GuestRamRange> ranges) {
  const std::string who = "vgpu " + vgpu.config().name + ": guest RAM";
  uint64_t total = 0;
  for (const auto& r : ranges) {
    if (r.size == 0 || r.size % fmt::SMALL_PAGE || r.gpa % fmt::SMALL_PAGE || !r.memory)
      return fail(Errc::invalid_argument, strfmt("%s: range %s+%s is not whole 4 KiB pages", who.c_str(),
                                                 hex(r.gpa).c_str(), hex(r.size).c_str()));
    total += r.size;
  }
  if (total > BUS_SLOT)
    return fail(Errc::invalid_argument, strfmt("%s: %s bytes, more than a bus slot's %s", who.c_str(),
                                               hex(total).c_str(), hex(BUS_SLOT).c_str()));
  std::vector<shadow::RamRegion> regions;
  {
    MediatorLock lock(mutex_);
    vgpu.guest_ram().set({});
    release_bus_slot(vgpu.id());
    uint32_t slot = 1;
    while (slot < BUS_SLOTS && bus_slots_[slot].vgpu_id) ++slot;
    if (slot == BUS_SLOTS) return fail(Errc::out_of_memory, who + ": no free bus slot");
    uint64_t at = uint64_t{slot} * BUS_SLOT;
    for (const auto& r : ranges) {
      if (Status s = bus_->add(at, r.size, r.memory, r.offset); !s) {
        release_bus_slot(vgpu.id());
        return std::unexpected(s.error().context(who));
      }
      bus_slots_[slot].vgpu_id = vgpu.id();
      bus_slots_[slot].windows.push_back(at);
      regions.push_back({r.gpa, r.size, at});
      at += r.size;
    }
    vgpu.guest_ram().set(std::move(regions));
  }
  invalidate_all_physical();  // translations of ranges that went away
  return {};
}

void Host::release_bus_slot(uint32_t vgpu_id) {
  for (BusSlot& s : bus_slots_) {
    if (s.vgpu_id != vgpu_id) continue;
    for (uint64_t w : s.windows) bus_->remove(w);  // waits for DMA through it
    s = BusSlot{};
  }
}

void Host::destroy_vgpu(Vgpu* vgpu) {
  std::shared_ptr<Vgpu> keep;
  {
    MediatorLock lock(mutex_);
    auto it = std::find_if(vgpus_.begin(), vgpus_.end(), [&](auto& p) { return p.get() == vgpu; });
    if (it == vgpus_.end()) return;
    keep = *it;
    vgpus_.erase(it);
    // Its RAM leaves the GPU's bus first: DMA still in flight for it
    // faults from here on instead of reaching memory the VM gives back.
    keep->guest_ram().set({});
    release_bus_slot(keep->id());
  }
  // Reclaim its channels (this also completes anything it had in flight),
  // then its partition and its scheduler state.
  keep->write32(pmc::ENABLE.offset, 0);
  (void)dispatcher_->remove_vm(keep->id());
  turn_->forget(keep->id());
  // Engine work the VM started still walks its shadow tables and writes
  // its partition: both go back to the pool only once it has ended.
  const bool quiet = wait_engines_idle(*keep);
  if (gpu::VmDevices* devices = vm_devices()) devices->remove_vm(keep->id());
  MediatorLock lock(mutex_);
  for (auto& p : by_pchid_)
    if (p == keep) p.reset();
  std::erase_if(runlists_, [&](auto& r) { return r.first == keep->id(); });
  commit_runlist_locked();
  if (!quiet) {
    log_internal_error(
        strfmt("host: vgpu %s destroyed with engine work still running after %llu ms; its VRAM "
               "partition and shadow pool are not reused",
               keep->config().name.c_str(), static_cast<unsigned long long>(ENGINE_WAIT_NS / 1'000'000)));
    return;
  }
  // A detached partition goes back onto the VRAM's memfd first: the VM's
  // process may still hold the old fd, and must reach nothing through it.
  if (keep->vram_fd() >= 0) {
    if (Status s = gpu_->vram().reattach(keep->partition().base, keep->partition().size); !s) {
      log_internal_error("host: vgpu " + keep->config().name + ": " + s.error().message +
                         "; its VRAM partition is not reused");
      reserved_->free(keep->shadow_pool().base());
      return;
    }
  }
  partitions_->free(keep->partition().base);
  reserved_->free(keep->shadow_pool().base());
}

Status Host::set_weight(uint32_t vgpu_id, uint32_t weight) {
  if (weight == 0 || weight > VGPU_OPT_WEIGHT_MAX)
    return fail(Errc::invalid_argument, strfmt("weight: %u is not in [1, %u]", weight, VGPU_OPT_WEIGHT_MAX));
  return dispatcher_->set_weight(vgpu_id, weight);
}

bool Host::wait_engines_idle(const Vgpu& v) {
  RealClock wait;
  for (uint32_t p = 0; p < regs::NUM_CHANNELS; ++p) {
    if (!v.owns_pchid(p)) continue;
    while (pf::ChanStateEngineOutstanding::get(physical_state(p))) {
      if (wait.now_ns() >= ENGINE_WAIT_NS) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  return true;
}

std::shared_ptr<Vgpu> Host::owner(uint32_t pchid) {
  MediatorLock lock(mutex_);
  return pchid < by_pchid_.size() ? by_pchid_[pchid] : nullptr;
}

// ---- scheduling

void Host::submit(uint32_t vgpu_id, uint32_t gchid) {
  turn_->came_back(vgpu_id);
  Status s = dispatcher_->submit(vgpu_id, gchid);
  if (!s) log_internal_error("scheduler: " + s.error().message);
}

// The watchdog evaluates the hold's deadline under its own mutex, so a
// notify under that mutex is never lost.
void Host::wake_watchdog() {
  { std::lock_guard w(watchdog_mutex_); }
  watchdog_cv_.notify_all();
}

void Host::channel_stopped(uint32_t vgpu_id, uint32_t gchid, uint64_t seq) {
  turn_->stop({vgpu_id, gchid, seq}, std::nullopt, now_ns());
}

std::shared_ptr<Vgpu> Host::find(uint32_t vgpu_id) {
  MediatorLock lock(mutex_);
  for (auto& p : vgpus_)
    if (p->id() == vgpu_id) return p;
  return nullptr;
}

void Host::internal_failure(const char* doing, const char* what) noexcept {
  try {
    log_internal_error(strfmt("host: %s failed: %s", doing, what));
  } catch (...) {
  }
}

// Every WATCHDOG_PERIOD, and when a held turn's time is up.
void Host::watchdog_main() {
  std::unique_lock lock(watchdog_mutex_);
  while (!watchdog_stop_) {
    auto wake = std::chrono::steady_clock::now() + WATCHDOG_PERIOD;
    if (const auto until = turn_->hold_deadline_ns()) {
      const uint64_t now = now_ns();
      const uint64_t left = *until > now ? *until - now : 0;
      wake = std::min(wake, std::chrono::steady_clock::now() + std::chrono::nanoseconds(left));
    }
    watchdog_cv_.wait_until(lock, wake);
    if (watchdog_stop_) break;
    lock.unlock();
    try {
      turn_->check_held();
      check_parked_channel();
    } catch (const std::exception& e) {
      internal_failure("the watchdog's check", e.what());
    }
    lock.lock();
  }
}

// The channel of the submission on the GPU parked in a semaphore acquire:
// its turn is over (it stays runnable and resumes on the GPU once released).
void Host::check_parked_channel() {
  const auto flight = dispatcher_->in_flight();
  if (!flight) return;
  std::shared_ptr<Vgpu> v = find(flight->submission.vm);
  if (!v || flight->submission.channel >= v->config().channels) return;
  if (!pf::ChanStateAcquirePending::get(physical_state(v->pchid_of(flight->submission.channel)))) return;
  turn_->stop({v->id(), flight->submission.channel, flight->submission.seq}, std::nullopt, now_ns());
}

// ---- the physical GPU

void Host::bind_physical(uint32_t pchid, uint64_t shadow_inst, uint32_t slice_blocks, uint32_t watchdog_ms) {
  constexpr uint64_t NS_PER_US = 1000;
  MediatorLock lock(mutex_);
  gpu_->write32(pf::CHAN_STATE[pchid].offset, 0);
  // Sliced work stops at each slice boundary so that a turn can end there:
  // timed pieces (auto) or slices of N blocks.
  uint32_t slice = 0;
  if (slice_blocks == VGPU_OPT_SLICE_BLOCKS_AUTO)
    slice = pf::ChanSliceBlocks::make(
                static_cast<uint32_t>(std::min<uint64_t>(slice_ns() / NS_PER_US, pf::ChanSliceBlocks::mask))) |
            pf::ChanSliceTimed::mask | pf::ChanSliceHold::mask |
            (config_.slice_on_demand ? pf::ChanSliceOnDemand::mask : 0u);
  else if (slice_blocks != 0)
    slice = pf::ChanSliceBlocks::make(slice_blocks) | pf::ChanSliceHold::mask;
  gpu_->write32(pf::CHAN_SLICE[pchid].offset, slice);
  gpu_->write32(pf::CHAN_WATCHDOG[pchid].offset, watchdog_ms);
  gpu_->write32(pf::CHAN_INST[pchid].offset, fmt::encode_chan_inst({.valid = true, .inst = shadow_inst}));
  gpu_->write32(pf::CHAN_ERROR[pchid].offset, 0);
}

void Host::unbind_physical(uint32_t pchid) {
  MediatorLock lock(mutex_);
  // Stop the channel, then let the slice the GPU may be running for it end
  // before its shadow instance block and tables are freed: a slice still
  // running would write GP_GET into an instance block that the next
  // binding may already have been given.
  gpu_->write32(pf::CHAN_STATE[pchid].offset, 0);
  gpu_->write32(pf::PREEMPT.offset, pf::PreemptChid::make(pchid));
  RealClock wait;
  while (pf::PreemptPending::get(gpu_->read32(pf::PREEMPT.offset))) {
    if (wait.now_ns() >= PREEMPT_WAIT_NS) {
      log_internal_error(strfmt("host: channel %u still in a slice %llu ms after a preempt; unbinding it anyway", pchid,
                                static_cast<unsigned long long>(PREEMPT_WAIT_NS / 1'000'000)));
      break;
    }
    std::this_thread::yield();
  }
  gpu_->write32(pf::CHAN_INST[pchid].offset, 0);
  gpu_->write32(pf::CHAN_ERROR[pchid].offset, 0);
}

void Host::set_runnable(uint32_t pchid, bool runnable) {
  MediatorLock lock(mutex_);
  gpu_->write32(pf::CHAN_STATE[pchid].offset,
                pf::ChanStateEngine::make(pf::ENGINE_NONE) | pf::ChanStateRunnable::make(runnable));
}

// Without read32's clock poll and delivery: the host arms no PTIMER alarm,
// and PFIFO's loop polls the clock and delivers what it and the engines
// raise on its own, so the shadow channels' checks on each dispatch, the
// watchdog's parked-channel check and the engine-idle wait at a VM's
// destruction (its flag is cleared by the engine thread that ends the
// work) see the same values either way.
uint32_t Host::physical_state(uint32_t pchid) { return gpu_->channel_state(pchid); }

// A commit writes the GPU's runlist registers and waits for them, under
// the host's mutex: every VM's doorbells wait meanwhile. So a VM whose
// list did not change (a guest reset loop, a resubmitted runlist) costs
// the others nothing.
void Host::set_runlist(uint32_t vgpu_id, std::vector<uint32_t> pchids) {
  MediatorLock lock(mutex_);
  auto it = std::find_if(runlists_.begin(), runlists_.end(), [&](auto& r) { return r.first == vgpu_id; });
  if (it == runlists_.end()) {
    if (pchids.empty()) return;
    runlists_.emplace_back(vgpu_id, std::move(pchids));
  } else {
    if (it->second == pchids) return;
    it->second = std::move(pchids);
  }
  commit_runlist_locked();
}

void Host::commit_runlist_locked() {
  std::vector<uint32_t> all;
  for (auto& [id, list] : runlists_) all.insert(all.end(), list.begin(), list.end());
  const uint64_t buf = runlist_buf_[runlist_next_];
  runlist_next_ ^= 1;
  gpu::Vram& vram = gpu_->vram();
  for (size_t i = 0; i < all.size(); ++i) {
    const auto entry = fmt::encode_runlist_entry(all[i]);
    vram.write32(buf + i * regs::runlist::ENTRY_BYTES + regs::runlist::ENTRY_CHID, entry[0]);
    vram.write32(buf + i * regs::runlist::ENTRY_BYTES + regs::runlist::ENTRY_FLAGS, entry[1]);
  }
  gpu_->write32(pf::RUNLIST_BASE.offset, pf::RunlistAddr::make(static_cast<uint32_t>(buf >> pf::RUNLIST_SHIFT)));
  gpu_->write32(pf::RUNLIST_SUBMIT.offset, pf::RunlistCount::make(static_cast<uint32_t>(all.size())));
  RealClock wait;
  while (pf::RunlistPending::get(gpu_->read32(pf::RUNLIST_STATUS.offset))) {
    if (wait.now_ns() >= RUNLIST_WAIT_NS) {
      log_internal_error(strfmt("host: the physical runlist of %zu channels still pending after %llu ms", all.size(),
                                static_cast<unsigned long long>(RUNLIST_WAIT_NS / 1'000'000)));
      return;
    }
  }
}

void Host::invalidate_physical(uint64_t shadow_pd) {
  MediatorLock lock(mmu_mutex_);
  gpu_->write32(mmu::INVALIDATE_PDB.offset,
                mmu::InvalidatePdbAddr::make(static_cast<uint32_t>(shadow_pd >> fmt::TABLE_ALIGN_SHIFT)));
  gpu_->write32(mmu::INVALIDATE.offset, mmu::InvalidateTrigger::mask | mmu::InvalidatePageAll::mask);
}

void Host::invalidate_all_physical() {
  MediatorLock lock(mmu_mutex_);
  gpu_->write32(mmu::INVALIDATE.offset,
                mmu::InvalidateTrigger::mask | mmu::InvalidatePageAll::mask | mmu::InvalidateAllPdb::mask);
}

void Host::ring_physical(uint32_t pchid, uint32_t put) {
  gpu_->bar_write32(gpu::Bar::bar1, uint64_t{pchid} * regs::userd::SIZE + regs::userd::GP_PUT, put);
}

// ---- what the GPU reports

void Host::post(const gpu::ChannelEvent& e) {
  {
    std::lock_guard lock(events_mutex_);
    if (events_closed_) return;
    events_.push_back(e);
  }
  if (MediatorLock::held())
    MediatorLock::defer(*this);  // handled when this thread lets go of its last mediator lock
  else
    run_deferred_events();
}

// One thread at a time handles events, in the order the GPU raised them;
// one that finds another at work leaves its events to that one.
void Host::run_deferred_events() {
  std::shared_lock gate(events_gate_);
  std::unique_lock lock(events_mutex_);
  if (handling_events_) return;
  handling_events_ = true;
  while (!events_closed_ && !events_.empty()) {
    const gpu::ChannelEvent e = events_.front();
    events_.pop_front();
    lock.unlock();
    try {
      handle(e);
    } catch (const std::exception& ex) {
      internal_failure("handling a GPU event", ex.what());
    }
    lock.lock();
  }
  handling_events_ = false;
}

void Host::handle(const gpu::ChannelEvent& e) {
  std::shared_ptr<Vgpu> v = owner(e.chid);
  const uint32_t bit = regs::channel_bit(e.chid);
  switch (e.kind) {
    case gpu::ChannelEvent::Kind::idle:
      if (v) turn_->piece_ran(*v, v->id(), v->gchid_of(e.chid), e.start_ns, e.end_ns, false);
      break;
    case gpu::ChannelEvent::Kind::slice:
      if (v) turn_->piece_ran(*v, v->id(), v->gchid_of(e.chid), e.start_ns, e.end_ns, true);
      break;
    case gpu::ChannelEvent::Kind::nonstall:
      gpu_->write32(pf::NONSTALL_PENDING[regs::channel_word(e.chid)].offset, bit);
      if (v) v->on_nonstall(v->gchid_of(e.chid));
      break;
    case gpu::ChannelEvent::Kind::error: {
      const uint32_t code = pf::ChanErrorCode::get(gpu_->read32(pf::CHAN_ERROR[e.chid].offset));
      const uint32_t method = gpu_->read32(pf::CHAN_ERROR_METHOD[e.chid].offset);
      const uint64_t addr = join64(gpu_->read32(pf::CHAN_ERROR_ADDR_HI[e.chid].offset),
                                   gpu_->read32(pf::CHAN_ERROR_ADDR_LO[e.chid].offset));
      if (code == uint32_t(regs::ChannelError::mmu_fault)) {
        const uint32_t pending = gpu_->read32(pf::FAULT_UNIT_PENDING.offset);
        for (uint32_t u = 0; u < pf::NUM_FAULT_UNITS; ++u) {
          if (!(pending & (1u << u))) continue;
          const uint32_t type = gpu_->read32(pf::FAULT_TYPE[u].offset);
          if (!pf::FaultChidValid::get(type) || pf::FaultChid::get(type) != e.chid) continue;
          const uint64_t va = join64(gpu_->read32(pf::FAULT_VA_HI[u].offset), gpu_->read32(pf::FAULT_VA_LO[u].offset));
          if (v)
            v->on_fault(v->gchid_of(e.chid), static_cast<regs::FaultUnit>(u),
                        static_cast<regs::FaultReason>(pf::FaultReason::get(type)), va, pf::FaultWrite::get(type));
          gpu_->write32(pf::FAULT_UNIT_PENDING.offset, 1u << u);
        }
      }
      gpu_->write32(pf::CHAN_ERROR_PENDING[regs::channel_word(e.chid)].offset, bit);
      if (v) {
        v->on_channel_error(v->gchid_of(e.chid), static_cast<regs::ChannelError>(code), method, addr);
        turn_->stop({v->id(), v->gchid_of(e.chid), std::nullopt}, std::nullopt, now_ns(), TurnEnd::error);
      }
      break;
    }
  }
  gpu_->write32(pf::INTR.offset,
                pf::IntrChannelError::mask | pf::IntrNonStall::mask | pf::IntrMmuFault::mask | pf::IntrRunlist::mask);
}

}  // namespace vgpu::mediator
