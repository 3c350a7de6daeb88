// SPDX-License-Identifier: GPL-2.0-or-later
// The driver's runtime API (docs/runtime.md): open a device on a Port,
// create contexts (a channel and its address space), allocate buffers,
// move data, launch the built-in kernels and wait on fences. Errors are
// Result/Status values naming what failed; nothing aborts on a device
// error. A Device must outlive its Contexts; neither is thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.h"
#include "driver/address_space.h"
#include "driver/allocator.h"
#include "driver/bars.h"
#include "driver/channel.h"
#include "driver/compute.h"
#include "driver/compute_heap.h"
#include "driver/device_init.h"
#include "driver/fence.h"
#include "driver/fifo.h"
#include "driver/instmem.h"
#include "driver/port.h"
#include "driver/vmm.h"
#include "vgpu/bits.h"
#include "vgpu/classes.h"

namespace vgpu::driver {

// A thread hand-over to a sleeping thread costs 3 us on the same core and
// 20-30 us to an idle core of a KVM guest like this host; a fence of a
// short kernel is back well within this (docs/runtime.md, "Launch latency").
inline constexpr uint64_t DEFAULT_WAIT_SPIN_NS = 50'000;

struct DeviceOptions {
  // VRAM that BAR3 maps for instance blocks, page tables and runlists;
  // capped at BAR3's size and a quarter of VRAM.
  uint64_t inst_heap_bytes = 16 * MiB;
  // upload/download of at most this many bytes go through a BAR1 mapping
  // of the buffer itself; larger ones through the copy engine and the
  // context's staging buffer, staging_bytes at a time. The mapping stays,
  // and a page a CPU can reach through a BAR moves between host and GPU
  // on every launch that uses it where the GPU keeps a copy of VRAM
  // (docs/cuda.md, "Pages a BAR maps directly"): so only small buffers
  // take it (docs/runtime.md, "Transfers").
  uint64_t direct_transfer_max = 64 * KiB;
  uint64_t staging_bytes = 1 * MiB;
  uint64_t timeout_ns = 10'000'000'000;  // default for waits
  // On a port with interrupts, a fence wait polls at most this long before
  // it sleeps until the next interrupt message, and only while the
  // channel's previous wait ended within it: after a longer one (a long
  // kernel, a busy GPU) it sleeps at once (0: always sleep at once).
  uint64_t wait_spin_ns = DEFAULT_WAIT_SPIN_NS;
  ChannelConfig channel;
  // Hand page-table updates to the vGPU's paravirtual interface (spec §17)
  // through this back end (pvdriver::open_pv_tables, pv-driver/) instead of
  // writing tables in VRAM; open fails when the device does not offer it.
  // Null: tables in VRAM.
  OpenPvTables paravirtual = nullptr;
};

// A buffer of one context. id 0 is never valid; ids are not reused.
struct Buffer {
  uint32_t id = 0;
};

// Kernel parameters with buffers in place of GPU addresses (cls::*Args).
struct FillParams {
  Buffer dst;
  uint32_t count;
  float value;
};
struct SaxpyParams {
  Buffer x, y;
  uint32_t n;
  float a;
};
struct MaddParams {
  Buffer a, b, c;
  uint32_t rows, cols;
};
struct SgemmParams {
  Buffer a, b, c;
  uint32_t m, n, k;
  float alpha, beta;
};
struct Conv2dParams {
  Buffer input, filter, output;
  uint32_t n, c, h, w, k, r, s;
  uint32_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1;
};
struct MriqParams {
  Buffer kx, ky, kz, phi_mag, x, y, z, qr, qi;
  uint32_t num_k, num_x;
};
struct SpinParams {
  uint64_t duration_ns;
};

// A PTX module loaded into one context's channel (docs/spec/vgpu.md §10.6).
// The device parsed the text; its data segment (.global/.const variables)
// is a buffer of this context, initialised by the device.
struct LoadedModule {
  uint32_t slot = 0;  // the channel's module slot
  Buffer data;        // id 0 when the module has no variables
  uint64_t data_va = 0;
};

// The device's report of a module load or of a failed user launch
// (cls::PtxReport, decoded).
struct PtxReport {
  cls::PtxStatus status = cls::PtxStatus::ok;
  uint32_t line = 0;
  uint64_t addr = 0;
  uint64_t data_bytes = 0;
  uint32_t entries = 0;
  std::string message;
};

// One launch of a module's entry: the parameter buffer as cuLaunchKernel
// packs it (the entry's .param list in natural alignment), its dynamic
// shared memory, and the grid.
struct ModuleLaunch {
  uint32_t slot = 0;
  uint32_t entry = 0;  // index of the .entry in the module's text
  LaunchShape shape;
  uint32_t shared_bytes = 0;
  std::span<const std::byte> params;
  // The launch as LAUNCH of a program descriptor with the parameters in
  // constant-buffer slot 0 (about 14 methods and two uploads), instead of
  // one LAUNCH_USER run (§10.6): the same launch, kept for its tests.
  bool by_descriptor = false;
};

struct TransferStats {
  uint64_t direct_bytes = 0;  // through a BAR1 mapping of the buffer
  uint64_t staged_bytes = 0;  // through staging and the copy engine
  uint64_t pinned_bytes = 0;  // through the copy engine straight from/to pinned memory
};

class Context;

class Device {
 public:
  [[nodiscard]] static Result<std::unique_ptr<Device>> open(Port& port, const DeviceOptions& options = {});
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  [[nodiscard]] Result<std::unique_ptr<Context>> create_context();

  const DeviceInfo& info() const { return info_; }
  uint64_t vram_bytes() const { return info_.vram_bytes; }
  uint64_t vram_free() const { return vram_->free_bytes(); }
  uint64_t time_ns();  // PTIMER
  const DeviceOptions& options() const { return options_; }
  Port& port() { return port_; }
  const InstMemStats& inst_stats() const { return mem_.stats(); }
  // The paravirtual interface's counts; null when the device is not used through it.
  const HypercallStats* hypercall_stats() const { return pv_ ? &pv_->stats() : nullptr; }

 private:
  friend class Context;
  Device(Port& port, const DeviceOptions& o) : port_(port), options_(o), mem_(port) {}
  [[nodiscard]] Status bring_up();
  ChannelDeps deps() { return {port_, mem_, *heap_, *vram_, *bars_, *fifo_}; }
  [[nodiscard]] Result<std::unique_ptr<PageTables>> make_tables(std::string name, uint64_t size, SpaceKind kind);

  Port& port_;
  DeviceOptions options_;
  DeviceInfo info_;
  InstMem mem_;
  std::unique_ptr<RangeAllocator> vram_;
  std::unique_ptr<RangeAllocator> heap_;
  std::unique_ptr<PvTables> pv_;  // with options_.paravirtual
  std::unique_ptr<TableMemory> tables_;
  std::unique_ptr<Bars> bars_;
  std::unique_ptr<Fifo> fifo_;
  uint64_t fence_mem_ = 0;  // NUM_CHANNELS 16-byte slots
  uint64_t fence_bar1_ = 0;
};

class Context {
 public:
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  uint32_t channel_id() const { return channel_->chid(); }

  // VRAM (physically contiguous) mapped in this context's address space.
  [[nodiscard]] Result<Buffer> alloc(uint64_t bytes);
  [[nodiscard]] Status free(Buffer b);
  [[nodiscard]] Result<uint64_t> gpu_va(Buffer b) const;
  [[nodiscard]] Result<uint64_t> size(Buffer b) const;

  // VRAM for user kernels, in the compute aperture (spec §10.6; COMPUTE_*
  // in driver/compute_heap.h): 2 MiB blocks, shared in 4 KiB pages by
  // buffers below a block. A Buffer like any other (copies, kernels, free).
  [[nodiscard]] Result<Buffer> alloc_compute(uint64_t bytes);

  // Pinned host memory (docs/runtime.md): pages of the port's pinned memory
  // mapped in this context's address space through sysmem PTEs. A pinned
  // buffer is a Buffer like any other (copies, kernels), and host_data()
  // is the CPU's view of it. free() unpins it.
  [[nodiscard]] Result<Buffer> alloc_host(uint64_t bytes);
  [[nodiscard]] Result<std::span<std::byte>> host_data(Buffer pinned) const;
  bool is_pinned(Buffer b) const;

  // Host <-> buffer copies, ordered after all work submitted before them.
  // A transfer larger than direct_transfer_max whose host span lies inside
  // a pinned buffer goes through the copy engine straight from/to it (no
  // staging); others go through BAR1 or staging.
  [[nodiscard]] Status upload(Buffer dst, uint64_t offset, std::span<const std::byte> src);
  [[nodiscard]] Status download(Buffer src, uint64_t offset, std::span<std::byte> dst);
  // Pinned <-> device buffer on the copy engine, waited for: `pinned` must
  // be a pinned buffer (else invalid_argument naming it).
  [[nodiscard]] Status upload_pinned(Buffer dst, uint64_t offset, Buffer pinned, uint64_t pinned_off, uint64_t bytes);
  [[nodiscard]] Status download_pinned(Buffer pinned, uint64_t pinned_off, Buffer src, uint64_t offset, uint64_t bytes);
  template <typename T>
  [[nodiscard]] Status upload(Buffer dst, std::span<const T> src) {
    return upload(dst, 0, std::as_bytes(src));
  }
  template <typename T>
  [[nodiscard]] Status download(Buffer src, std::span<T> dst) {
    return download(src, 0, std::as_writable_bytes(dst));
  }

  // Buffer-to-buffer copy on the copy engine.
  [[nodiscard]] Result<Fence> copy(Buffer dst, uint64_t dst_off, Buffer src, uint64_t src_off, uint64_t bytes);
  // One pitched copy (LAUNCH_DMA with LINE_COUNT): `lines` lines of
  // line_bytes, line i from src + i * pitch_in to dst + i * pitch_out;
  // every line inside its buffer, else invalid_argument.
  [[nodiscard]] Result<Fence> copy_lines(Buffer dst, Buffer src, uint32_t line_bytes, uint32_t lines, uint32_t pitch_in,
                                         uint32_t pitch_out);

  // Built-in kernels; each checks its buffers against the sizes it touches.
  [[nodiscard]] Result<Fence> fill(const FillParams& p);
  [[nodiscard]] Result<Fence> saxpy(const SaxpyParams& p);
  [[nodiscard]] Result<Fence> madd(const MaddParams& p);
  [[nodiscard]] Result<Fence> sgemm(const SgemmParams& p);
  [[nodiscard]] Result<Fence> conv2d(const Conv2dParams& p);
  [[nodiscard]] Result<Fence> mriq(const MriqParams& p);
  [[nodiscard]] Result<Fence> spin(const SpinParams& p);
  // Any kernel with raw argument bytes (GPU addresses unchecked).
  [[nodiscard]] Result<Fence> launch(cls::Kernel kernel, std::span<const std::byte> args, LaunchShape shape);

  // PTX modules (§10.6). load_module uploads the text, has the device parse
  // it and initialise a data segment of data_bytes (the module's need, as
  // ptx::Module::data_bytes() computes it; 0: none), and waits. A module the
  // device refuses is Errc::invalid_argument with the report's reason
  // (module_report() has it whole); the channel goes on.
  [[nodiscard]] Result<LoadedModule> load_module(std::string_view ptx, uint64_t data_bytes);
  [[nodiscard]] Status unload_module(const LoadedModule& m);
  [[nodiscard]] Result<Fence> launch_module(const ModuleLaunch& l);
  // The last report the device wrote: the load's, or, after a user launch
  // failed with a channel error, that launch's reason.
  [[nodiscard]] Result<PtxReport> module_report();

  // Waits for a fence (timeout_ns 0: the device default).
  [[nodiscard]] Status wait(Fence f, uint64_t timeout_ns = 0);
  bool done(Fence f) { return fence_->signaled(f); }
  // Waits for everything submitted so far.
  [[nodiscard]] Status synchronize(uint64_t timeout_ns = 0);
  // device_error once the channel has reported an error.
  [[nodiscard]] Status status();

  const TransferStats& transfer_stats() const { return stats_; }
  Channel& channel() { return *channel_; }
  AddressSpace& address_space() { return *as_; }

 private:
  friend class Device;
  struct BufferRec {
    uint64_t vram;
    uint64_t bytes;
    uint64_t va;
    uint64_t bar1 = 0;            // 0: not mapped in BAR1 yet (BAR1 offset 0 is USERD)
    std::span<std::byte> host{};  // pinned: the CPU's view (vram unused)
    bool compute = false;         // alloc_compute: compute_ owns its VRAM and mapping
  };
  // The pinned buffer whose host view holds [p, p + bytes), if any.
  std::optional<std::pair<Buffer, uint64_t>> pinned_holding(const std::byte* p, uint64_t bytes) const;
  [[nodiscard]] Status pinned_copy(uint64_t dst_va, uint64_t src_va, uint64_t bytes);
  // upload_pinned (pinned to device) and download_pinned (device to
  // pinned): the checks, named for the call, then the copy.
  enum class PinnedWay { upload, download };
  [[nodiscard]] Status pinned_transfer(PinnedWay way, Buffer pinned, uint64_t pinned_off, Buffer device,
                                       uint64_t offset, uint64_t bytes);
  explicit Context(Device& dev) : dev_(dev) {}
  [[nodiscard]] Status setup();
  // One of setup's buffers: `bytes` of VRAM (`mem`, set once allocated)
  // mapped in this context's address space (`va`); `what` names it when the
  // VRAM runs out.
  [[nodiscard]] Status setup_buffer(uint64_t bytes, const char* what, uint64_t& mem, uint64_t& va);
  [[nodiscard]] Result<const BufferRec*> find(Buffer b, const char* role) const;
  [[nodiscard]] Result<uint64_t> va_checked(Buffer b, uint64_t bytes, const char* role) const;
  [[nodiscard]] Result<Fence> submit(PushBuffer& pb);
  [[nodiscard]] Status direct(BufferRec& rec, uint64_t offset, std::span<const std::byte> src,
                              std::span<std::byte> dst);
  [[nodiscard]] Status staged(const BufferRec& rec, uint64_t offset, std::span<const std::byte> src,
                              std::span<std::byte> dst);
  // upload (src, dst empty) and download (dst, src empty): checks, then the
  // CPU for a pinned buffer, BAR1 up to direct_transfer_max, the copy engine
  // from/to a pinned buffer holding the host span, else staging. `what`
  // names the call in errors.
  [[nodiscard]] Status transfer(const char* what, Buffer buf, uint64_t offset, std::span<const std::byte> src,
                                std::span<std::byte> dst);
  template <typename Args>
  [[nodiscard]] Result<Fence> launch_args(cls::Kernel k, const Args& args, LaunchShape shape) {
    return launch(k, std::as_bytes(std::span(&args, 1)), shape);
  }

  Device& dev_;
  std::unique_ptr<AddressSpace> as_;
  std::unique_ptr<ComputeHeap> compute_;  // after as_: it maps through it
  std::unique_ptr<Channel> channel_;
  std::unique_ptr<FenceSlot> fence_;
  uint64_t fence_va_ = 0;
  uint64_t consts_mem_ = 0, consts_va_ = 0;  // program descriptors, then the argument constant buffer
  uint64_t staging_mem_ = 0, staging_va_ = 0, staging_bar1_ = 0;
  std::map<uint32_t, BufferRec> buffers_;
  uint32_t next_id_ = 1;
  std::optional<Error> error_;  // first channel error seen
  // PTX modules (context_modules.cc): the parameter buffer and the report
  // (one buffer, made at the first load), the slots in use and each
  // module's data segment.
  [[nodiscard]] Status ensure_module_area();
  Buffer module_area_;
  uint64_t module_area_va_ = 0;
  std::array<bool, cls::compute::MAX_MODULE_SLOTS> module_slot_used_{};
  TransferStats stats_;
};

}  // namespace vgpu::driver
