// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/gpu_device.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include "common/text.h"
#include "worker/block_map.h"
#include "worker/builtin.h"

namespace vgpu::worker {
namespace {


uint64_t va_of(const void* p) { return reinterpret_cast<uint64_t>(p); }

std::string describe(const WorkerFailure& f) {
  std::string s = "worker: " + f.reason;
  if (f.error == regs::ChannelError::mmu_fault) s += " (mmu fault at VA " + hex(f.addr) + ")";
  if (f.error == regs::ChannelError::timeout) s += " (past its deadline)";
  return s;
}

}  // namespace

Result<std::unique_ptr<WorkerGpuDevice>> WorkerGpuDevice::create(gpu::Vram& vram, const WorkerOptions& options,
                                                                 const std::vector<VmPart>& parts,
                                                                 std::chrono::nanoseconds deadline) {
  auto d = std::make_unique<WorkerGpuDevice>(
      vram, [options](uint32_t) { return options; }, deadline);
  for (uint32_t i = 0; i < parts.size(); ++i)
    if (Status s = d->add_vm(i, parts[i].base, parts[i].bytes, 0, 0); !s) return std::unexpected(s.error());
  return d;
}

WorkerGpuDevice::~WorkerGpuDevice() = default;

Status WorkerGpuDevice::add_vm(uint32_t id, uint64_t base, uint64_t bytes, uint32_t first_stream, uint32_t streams) {
  if (base % BLOCK_BYTES != 0 || bytes == 0 || !vram_.contains(base, bytes) || base + bytes > SCRATCH_OFFSET ||
      first_stream > NUM_STREAMS || streams > NUM_STREAMS - first_stream)
    return fail(Errc::invalid_argument, "worker device: VM part [" + hex(base) + ", +" + hex(bytes) +
                                            ") does not start a 2 MiB block of VRAM, or its channels are out of range");
  auto host = WorkerHost::spawn(options_(id));
  if (!host) return std::unexpected(host.error());
  auto vm = std::make_unique<Vm>();
  vm->id = id;
  vm->host = std::move(*host);
  vm->part = {base, bytes};
  {
    std::lock_guard lock(vm->mu);
    if (!ready(*vm)) {
      const std::string why = vm->host->info().last_failure;
      return fail(Errc::device_error,
                  "worker device: the worker could not map its VRAM" + (why.empty() ? "" : ": " + why));
    }
  }
  std::unique_lock table(table_mu_);
  for (auto& v : vms_)
    if (v->id == id && v->host)
      return fail(Errc::invalid_argument, "worker device: VM " + std::to_string(id) + " twice");
  for (uint32_t s = first_stream; s < first_stream + streams; ++s) stream_vm_[s] = vm.get();
  vms_.push_back(std::move(vm));
  return {};
}

void WorkerGpuDevice::remove_vm(uint32_t id) {
  Vm* gone = nullptr;
  {
    std::unique_lock table(table_mu_);
    for (auto& v : vms_)
      if (v->id == id && v->host) gone = v.get();
    if (gone == nullptr) return;
    for (Vm*& s : stream_vm_)
      if (s == gone) s = nullptr;
  }
  std::lock_guard lock(gone->mu);
  gone->host.reset();  // ends the worker
}

std::string WorkerGpuDevice::name() const { return "CUDA worker per VM (" + options_(0).device + ")"; }

void WorkerGpuDevice::assign(Stream s, uint32_t id) {
  std::unique_lock table(table_mu_);
  for (auto& v : vms_)
    if (v->id == id && v->host && s < NUM_STREAMS) stream_vm_[s] = v.get();
}

std::optional<WorkerInfo> WorkerGpuDevice::info(uint32_t id) const {
  Vm* vm = nullptr;
  {
    std::shared_lock table(table_mu_);
    for (auto& v : vms_)
      if (v->id == id && v->host) vm = v.get();
  }
  if (vm == nullptr) return std::nullopt;
  std::lock_guard lock(vm->mu);
  if (!vm->host) return std::nullopt;
  return vm->host->info();
}

std::vector<uint32_t> WorkerGpuDevice::vm_ids() const {
  std::shared_lock table(table_mu_);
  std::vector<uint32_t> ids;
  for (auto& v : vms_)
    if (v->host) ids.push_back(v->id);
  return ids;
}

std::vector<WorkerGpuDevice::Ended> WorkerGpuDevice::respawn_ended() {
  std::vector<Vm*> vms;
  {
    std::shared_lock table(table_mu_);
    for (auto& v : vms_)
      if (v->host) vms.push_back(v.get());
  }
  std::vector<Ended> out;
  for (Vm* vm : vms) {
    std::unique_lock lock(vm->mu, std::try_to_lock);
    if (!lock.owns_lock() || !vm->host) continue;
    const int pid = vm->host->pid();
    auto f = vm->host->reap_if_exited();
    if (!f) continue;
    fail_vm(*vm, *f);
    const bool started = ready(*vm);
    out.push_back({vm->id, pid, started ? vm->host->pid() : -1, *f});
  }
  return out;
}

std::optional<WorkerFailure> WorkerGpuDevice::last_failure(Stream s) const {
  std::lock_guard lock(streams_mu_);
  return reported_[s % NUM_STREAMS];
}

std::optional<gpu::Device::Failure> WorkerGpuDevice::failure(Stream s) const {
  auto f = last_failure(s);
  if (!f) return std::nullopt;
  // A fault in the worker has no FAULT_INFO for the guest (its VA is the
  // aperture's, not the guest's): kernel_error, as a user kernel's fault
  // without one is, with the VA in the reason.
  const regs::ChannelError code = f->error == regs::ChannelError::mmu_fault ? regs::ChannelError::kernel_error
                                                                            : f->error;
  // A VA in the compute aperture is the guest's own (a user kernel's);
  // one in the physical window means nothing to the guest.
  const uint64_t addr = f->addr >= APERTURE_BASE && f->addr < APERTURE_END ? f->addr : 0;
  return Failure{code, addr, describe(*f), f->error == regs::ChannelError::mmu_fault};
}

WorkerGpuDevice::Vm* WorkerGpuDevice::vm_of_stream(Stream s) {
  std::shared_lock table(table_mu_);
  return stream_vm_[s % NUM_STREAMS];
}

std::unique_lock<std::mutex> WorkerGpuDevice::usable(Stream s, Vm*& vm) {
  vm = vm_of_stream(s);
  if (vm == nullptr) {
    std::lock_guard sl(streams_mu_);
    if (!pending_[s % NUM_STREAMS])
      pending_[s % NUM_STREAMS] = WorkerFailure{regs::ChannelError::internal, 0,
                                                "the channel belongs to no VM's worker"};
    return {};
  }
  std::unique_lock lock(vm->mu);
  std::lock_guard sl(streams_mu_);
  if (!vm->host && !pending_[s % NUM_STREAMS])
    pending_[s % NUM_STREAMS] = WorkerFailure{regs::ChannelError::internal, 0, "the VM's worker was ended"};
  if (pending_[s % NUM_STREAMS]) vm = nullptr;
  return lock;
}

void WorkerGpuDevice::fail_vm(Vm& vm, const WorkerFailure& f) {
  std::shared_lock table(table_mu_);
  std::lock_guard lock(streams_mu_);
  for (uint32_t s = 0; s < NUM_STREAMS; ++s)
    if (stream_vm_[s] == &vm && !pending_[s]) pending_[s] = f;
}

bool WorkerGpuDevice::ready(Vm& vm) {
  if (auto s = vm.host->ensure_running(); !s) {
    fail_vm(vm, {regs::ChannelError::kernel_error, 0, s.error().what()});
    return false;
  }
  const int pid = vm.host->pid();
  if (pid == vm.mapped_pid) return true;
  Command map = make_command(Op::map, 0, device_va(vm.part.base), vm.part.base / BLOCK_BYTES,
                             (vm.part.bytes + BLOCK_BYTES - 1) / BLOCK_BYTES);
  if (!fenced(vm, 0, map)) return false;
  const bool respawned = vm.mapped_pid != -1;
  vm.mapped_pid = pid;
  // VRAM after a device error (docs/cuda-worker.md): the new worker's
  // blocks start zeroed while the residency tracker still holds pages
  // valid on both sides; the host's bytes go up again, so those keep
  // their bytes on the device too. (Pages valid on the device alone come
  // back as their last host copy, not as the design's zeros: that part
  // needs the tracker.)
  if (respawned)
    rows(0, vm, {device_va(vm.part.base), vm.part.bytes, vram_.data() + vm.part.base, vm.part.bytes, vm.part.bytes, 1},
         true);
  return vm.host->pid() == pid;
}

bool WorkerGpuDevice::fenced(Vm& vm, Stream s, Command c) {
  c.stream = s;
  auto t = vm.host->submit(c, true);
  if (!t) {
    fail_vm(vm, {regs::ChannelError::kernel_error, 0, t.error().what()});
    return false;
  }
  if (auto w = vm.host->wait(*t, deadline_); !w) {
    fail_vm(vm, w.error());
    return false;
  }
  return true;
}

// The stream's work done: its last command's fence when that command
// carried one (a user launch does), else a fenced nop's.
bool WorkerGpuDevice::fence_and_wait(Vm& vm, Stream s) {
  const std::optional<Ticket> last = vm.host->last_fenced(s);
  if (!last) return fenced(vm, s, make_command(Op::nop, s, 0));
  if (auto w = vm.host->wait(*last, deadline_); !w) {
    fail_vm(vm, w.error());
    return false;
  }
  return true;
}

void WorkerGpuDevice::queue(Stream s, Command c) {
  Vm* vm = nullptr;
  auto lock = usable(s, vm);
  if (vm == nullptr || !ready(*vm)) return;  // the stream failed: nothing more runs until it hears so
  c.stream = s % NUM_STREAMS;
  if (auto t = vm->host->submit(c, false); !t) fail_vm(*vm, {regs::ChannelError::kernel_error, 0, t.error().what()});
}

Status WorkerGpuDevice::synchronize(Stream s) {
  s %= NUM_STREAMS;
  Vm* vm = nullptr;
  auto lock = usable(s, vm);
  auto take = [&]() -> std::optional<WorkerFailure> {
    std::lock_guard sl(streams_mu_);
    auto f = std::exchange(pending_[s], std::nullopt);
    if (f) reported_[s] = f;
    return f;
  };
  if (auto f = take()) return fail(Errc::device_error, describe(*f));
  if (vm != nullptr && ready(*vm) && fence_and_wait(*vm, s)) return {};
  auto f = take();
  return fail(Errc::device_error, f ? describe(*f) : "worker: failed");
}

void WorkerGpuDevice::copy(Stream s, std::byte* dst, const std::byte* src, uint64_t bytes) {
  if (bytes != 0) queue(s, make_command(Op::copy, s, va_of(dst), va_of(src), bytes));
}

void WorkerGpuDevice::copy_2d(Stream s, std::byte* dst, uint64_t dst_pitch, const std::byte* src, uint64_t src_pitch,
                              uint64_t width, uint64_t height) {
  for (uint64_t r = 0; r < height; ++r) copy(s, dst + r * dst_pitch, src + r * src_pitch, width);
}

void WorkerGpuDevice::fill(Stream s, float* dst, uint64_t n, float value) {
  if (n != 0) queue(s, make_command(Op::fill32, s, va_of(dst), std::bit_cast<uint32_t>(value), n));
}

void WorkerGpuDevice::spin(Stream s, uint64_t ns) { queue(s, make_command(Op::spin, s, ns)); }

std::byte* WorkerGpuDevice::alloc(Stream s, uint64_t bytes) {
  constexpr uint64_t ALIGN = 256;  // as cudaMalloc's
  s %= NUM_STREAMS;
  Vm* vm = nullptr;
  auto lock = usable(s, vm);
  if (vm == nullptr || !ready(*vm)) return nullptr;
  Scratch& sc = scratch_[s];
  if (sc.pid != vm->host->pid()) sc = Scratch{sc.used, sc.live, 0, vm->host->pid()};  // a new worker: none mapped
  const uint64_t at = (sc.used + ALIGN - 1) / ALIGN * ALIGN;
  if (bytes == 0 || at > SCRATCH_STREAM_BYTES || bytes > SCRATCH_STREAM_BYTES - at) return nullptr;
  const auto blocks = static_cast<uint32_t>((at + bytes + BLOCK_BYTES - 1) / BLOCK_BYTES);
  if (blocks > sc.blocks) {
    // Waited for: the worker zeroes new blocks on its stream 0, which
    // must be done before this stream writes them.
    const uint64_t first = (SCRATCH_OFFSET + uint64_t{s} * SCRATCH_STREAM_BYTES) / BLOCK_BYTES + sc.blocks;
    if (!fenced(*vm, 0,
                make_command(Op::map, 0, scratch_va(s) + uint64_t{sc.blocks} * BLOCK_BYTES, first, blocks - sc.blocks)))
      return nullptr;
    sc.blocks = blocks;
  }
  sc.used = at + bytes;
  ++sc.live;
  return reinterpret_cast<std::byte*>(scratch_va(s) + at);
}

void WorkerGpuDevice::free(Stream s, std::byte* p) {
  s %= NUM_STREAMS;
  if (p == nullptr) return;
  Vm* vm = vm_of_stream(s);
  if (vm == nullptr) return;
  std::lock_guard lock(vm->mu);
  Scratch& sc = scratch_[s];
  if (sc.live > 0 && --sc.live == 0) sc.used = 0;  // the stream's later work is ordered after this
}

// saxpy and madd in commands of at most UINT32_MAX elements (the argument
// blocks' counts are 32-bit; the engines' n can be rows x cols).
void WorkerGpuDevice::saxpy(Stream s, float a, const float* x, float* y, uint64_t n) {
  for (uint64_t at = 0; at < n; at += UINT32_MAX) {
    const auto part = static_cast<uint32_t>(std::min<uint64_t>(n - at, UINT32_MAX));
    queue(s, kernel_command(cls::Kernel::saxpy, s, cls::SaxpyArgs{va_of(x + at), va_of(y + at), part, a}));
  }
}

void WorkerGpuDevice::madd(Stream s, const float* a, const float* b, float* c, uint64_t n) {
  for (uint64_t at = 0; at < n; at += UINT32_MAX) {
    const auto part = static_cast<uint32_t>(std::min<uint64_t>(n - at, UINT32_MAX));
    queue(s, kernel_command(cls::Kernel::madd, s, cls::MaddArgs{va_of(a + at), va_of(b + at), va_of(c + at), 1, part}));
  }
}

void WorkerGpuDevice::sgemm(Stream s, const cls::SgemmArgs& args, const float* a, const float* b, float* c) {
  cls::SgemmArgs g = args;
  g.a = va_of(a);
  g.b = va_of(b);
  g.c = va_of(c);
  queue(s, kernel_command(cls::Kernel::sgemm, s, g));
}

void WorkerGpuDevice::conv2d(Stream s, const cls::Conv2dArgs& args, const float* input, const float* filter,
                             float* output) {
  cls::Conv2dArgs g = args;
  g.input = va_of(input);
  g.filter = va_of(filter);
  g.output = va_of(output);
  queue(s, kernel_command(cls::Kernel::conv2d, s, g));
}

void WorkerGpuDevice::mriq(Stream s, uint32_t num_k, uint32_t num_x, const float* kx, const float* ky, const float* kz,
                           const float* phi_mag, const float* x, const float* y, const float* z, float* qr, float* qi) {
  queue(s, kernel_command(cls::Kernel::mriq, s,
                          cls::MriqArgs{va_of(kx), va_of(ky), va_of(kz), va_of(phi_mag), va_of(x), va_of(y), va_of(z),
                                        va_of(qr), va_of(qi), num_k, num_x}));
}

// Each window-full is written (or read) and waited for before the window
// is used again.
void WorkerGpuDevice::rows(Stream s, Vm& vm, const Rows& r, bool to_device) {
  std::byte* bulk = vm.host->bulk();
  uint64_t used = 0;
  struct Pending {
    std::byte* host;
    uint64_t off, bytes;
  };
  std::vector<Pending> reads;
  auto flush = [&]() -> bool {
    if (used == 0) return true;
    if (!fenced(vm, s, make_command(Op::nop, s, 0))) return false;
    for (const Pending& p : reads) std::memcpy(p.host, bulk + p.off, p.bytes);
    reads.clear();
    used = 0;
    return true;
  };
  for (uint64_t row = 0; row < r.height; ++row) {
    for (uint64_t done = 0; done < r.width;) {
      if (used == PARAM_AREA && !flush()) return;
      const uint64_t n = std::min(r.width - done, PARAM_AREA - used);
      const uint64_t dev = r.dev + row * r.dev_pitch + done;
      std::byte* host = r.host + row * r.host_pitch + done;
      if (to_device) std::memcpy(bulk + used, host, n);
      auto t = vm.host->submit(make_command(to_device ? Op::write : Op::read, s, dev, used, n), false);
      if (!t) return fail_vm(vm, {regs::ChannelError::kernel_error, 0, t.error().what()});
      if (!to_device) reads.push_back({host, used, n});
      used += n;
      done += n;
    }
  }
  flush();
}

void WorkerGpuDevice::stream_rows(Stream s, const Rows& r, bool to_device) {
  s %= NUM_STREAMS;
  Vm* vm = nullptr;
  auto lock = usable(s, vm);
  if (vm == nullptr || !ready(*vm)) return;
  rows(s, *vm, r, to_device);
}

void WorkerGpuDevice::copy_2d_from_host(Stream s, std::byte* dst, uint64_t dst_pitch, const std::byte* host_src,
                                        uint64_t src_pitch, uint64_t width, uint64_t height) {
  stream_rows(s, {va_of(dst), dst_pitch, const_cast<std::byte*>(host_src), src_pitch, width, height}, true);
}

void WorkerGpuDevice::copy_2d_to_host(Stream s, std::byte* host_dst, uint64_t dst_pitch, const std::byte* src,
                                      uint64_t src_pitch, uint64_t width, uint64_t height) {
  stream_rows(s, {va_of(src), src_pitch, host_dst, dst_pitch, width, height}, false);
}

void WorkerGpuDevice::copy_from_host(Stream s, std::byte* dst, const std::byte* host_src, uint64_t bytes) {
  copy_2d_from_host(s, dst, bytes, host_src, bytes, bytes, 1);
}

void WorkerGpuDevice::copy_to_host(Stream s, std::byte* host_dst, const std::byte* src, uint64_t bytes) {
  copy_2d_to_host(s, host_dst, bytes, src, bytes, bytes, 1);
}

// The residency tracker's transfers: each VM's share of the range through
// its worker, on `stream` (0 for upload/download: a transfer between the
// host's VRAM and the VM's blocks in no channel's order; the work's own
// for upload_on/download_on). Bytes of no VM's part stay.
void WorkerGpuDevice::transfer(uint64_t addr, uint64_t len, bool to_device, Stream stream) {
  std::vector<Vm*> vms;
  {
    std::shared_lock table(table_mu_);
    for (auto& v : vms_) vms.push_back(v.get());
  }
  for (Vm* vm : vms) {
    const uint64_t lo = std::max(addr, vm->part.base), hi = std::min(addr + len, vm->part.base + vm->part.bytes);
    if (lo >= hi) continue;
    std::lock_guard lock(vm->mu);
    if (vm->host && ready(*vm))
      rows(stream % NUM_STREAMS, *vm, {device_va(lo), hi - lo, vram_.data() + lo, hi - lo, hi - lo, 1}, to_device);
  }
}

void WorkerGpuDevice::upload(uint64_t addr, uint64_t len) { transfer(addr, len, true, 0); }
void WorkerGpuDevice::download(uint64_t addr, uint64_t len) { transfer(addr, len, false, 0); }
// On the work's own stream: behind its queued work (a download of what a
// kernel or fill wrote must wait for it; on the GPU the worker's streams
// run concurrently, so stream 0 would read the bytes before they change).
void WorkerGpuDevice::upload_on(uint32_t s, uint64_t addr, uint64_t len) { transfer(addr, len, true, s); }
void WorkerGpuDevice::download_on(uint32_t s, uint64_t addr, uint64_t len) { transfer(addr, len, false, s); }

}  // namespace vgpu::worker
