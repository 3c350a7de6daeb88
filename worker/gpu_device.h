// SPDX-License-Identifier: GPL-2.0-or-later
// The engine back end on per-VM workers (docs/cuda-worker.md,
// "Integration"): a gpu::Device whose streams (channels) belong to VMs and
// whose work runs in that VM's worker process. Each VM owns a 2 MiB-aligned
// part of physical VRAM; its worker maps that part, VRAM block k at
// PHYS_BASE + k * 2 MiB, so a device pointer is PHYS_BASE + phys and
// another VM's part is unmapped in it (an access there faults in the
// worker, not in its neighbour). User kernels run in the worker too
// (gpu_device_user.cc): the channel's module in its slot, and at each
// launch the channel's compute aperture mapped at the guest's own VAs
// (the blocks of the VM's part its page tables name, by plan_blocks). A worker's failure (fault, deadline, death)
// fails the next synchronize of each of that VM's streams with the reason;
// the next command starts another worker and maps the part again (its VRAM
// bytes are not restored: the spec's rule for VRAM after a device error is
// not coded yet). The built-in kernels run in the worker too (builtin.h).
// Scratch memory (alloc) is each stream's own region of worker memory
// above the VRAM parts. Not in the worker yet: device-written fences
// (write_host_word is false).
#pragma once
#include <chrono>
#include <memory>
#include <mutex>
#include <functional>
#include <map>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>
#include "gpu/device/device.h"
#include "gpu/engines/engine_limits.h"
#include "gpu/mem/vram.h"
#include "worker/block_map.h"
#include "worker/worker_host.h"

namespace vgpu::worker {

// A VM's physical VRAM: [base, base + bytes), both multiples of BLOCK_BYTES.
struct VmPart {
  uint64_t base, bytes;
};

// The options of VM `id`'s worker.
using WorkerOptionsFor = std::function<WorkerOptions(uint32_t id)>;

class WorkerGpuDevice final : public gpu::Device, public gpu::VmDevices {
 public:
  // No VM yet (the mediator adds them); `deadline` bounds every wait.
  WorkerGpuDevice(gpu::Vram& vram, WorkerOptionsFor options, std::chrono::nanoseconds deadline)
      : vram_(vram), options_(std::move(options)), deadline_(deadline) {}
  // VMs 0, 1, ... with these parts and no streams (tests: assign them).
  static Result<std::unique_ptr<WorkerGpuDevice>> create(gpu::Vram& vram, const WorkerOptions& options,
                                                         const std::vector<VmPart>& parts,
                                                         std::chrono::nanoseconds deadline);
  ~WorkerGpuDevice() override;

  uint64_t partition_align() const override { return BLOCK_BYTES; }
  // Starts VM `id`'s worker and maps its part (base: a multiple of
  // BLOCK_BYTES; the last block is whole); streams [first, first + n) are
  // its channels.
  Status add_vm(uint32_t id, uint64_t base, uint64_t bytes, uint32_t first_stream, uint32_t streams) override;
  // Ends its worker; its streams belong to no VM (their work fails).
  void remove_vm(uint32_t id) override;
  // Stream `s` (a channel) belongs to VM `id`.
  void assign(Stream s, uint32_t id);
  // VM `id`'s worker; nullopt for no such VM.
  std::optional<WorkerInfo> info(uint32_t id) const;
  std::vector<uint32_t> vm_ids() const;
  // A worker that ended between commands (killed, crashed, OOM): its VM's
  // streams fail once with the reason (its device bytes are gone) and the
  // next worker starts now and maps the part. VMs busy with their worker
  // are skipped (their own wait sees the exit). vgpud calls it from its
  // main loop; new_pid is -1 when the next worker could not start.
  struct Ended {
    uint32_t id;
    int old_pid, new_pid;
    WorkerFailure failure;
  };
  std::vector<Ended> respawn_ended();
  // The failure the last failed synchronize of `s` reported.
  std::optional<WorkerFailure> last_failure(Stream s) const;
  // The device pointer of a physical VRAM address.
  static uint64_t device_va(uint64_t phys) { return PHYS_BASE + phys; }

  std::string name() const override;
  // Each worker's own (its device name says which: vgpuctl workers).
  std::string conv2d_library() const override {
    return "in the VM's worker: cuDNN where it opens libcudnn.so.9, else its PTX kernel";
  }
  void upload(uint64_t addr, uint64_t len) override;
  void download(uint64_t addr, uint64_t len) override;
  void upload_on(uint32_t s, uint64_t addr, uint64_t len) override;
  void download_on(uint32_t s, uint64_t addr, uint64_t len) override;
  std::byte* mirror(uint64_t phys) override { return reinterpret_cast<std::byte*>(device_va(phys)); }
  // Scratch (the engines' gathers of scattered buffers and staged copies):
  // the stream's own region at scratch_va(s), bump-allocated, its blocks
  // mapped in the worker as it grows and reset when all are freed. A
  // stream's work runs in order, so its next operation may reuse the
  // region; one operation gets at most MAX_BOUNCE_BYTES (the engines' own
  // bound), more is nullptr (the engines' internal).
  std::byte* alloc(Stream s, uint64_t bytes) override;
  void free(Stream s, std::byte* p) override;
  static uint64_t scratch_va(Stream s) { return PHYS_BASE + SCRATCH_OFFSET + uint64_t{s} * SCRATCH_STREAM_BYTES; }
  void copy(Stream s, std::byte* dst, const std::byte* src, uint64_t bytes) override;
  void copy_2d(Stream s, std::byte* dst, uint64_t dst_pitch, const std::byte* src, uint64_t src_pitch, uint64_t width,
               uint64_t height) override;
  void copy_from_host(Stream s, std::byte* dst, const std::byte* host_src, uint64_t bytes) override;
  void copy_to_host(Stream s, std::byte* host_dst, const std::byte* src, uint64_t bytes) override;
  void copy_2d_from_host(Stream s, std::byte* dst, uint64_t dst_pitch, const std::byte* host_src, uint64_t src_pitch,
                         uint64_t width, uint64_t height) override;
  void copy_2d_to_host(Stream s, std::byte* host_dst, uint64_t dst_pitch, const std::byte* src, uint64_t src_pitch,
                       uint64_t width, uint64_t height) override;
  void register_host(std::byte*, uint64_t) override {}  // bytes travel through the bulk window
  void unregister_host(std::byte*) override {}
  void fill(Stream s, float* dst, uint64_t n, float value) override;
  // The built-ins run in the worker (builtin.h): its PTX of our own or
  // cuBLAS on the GPU, the model's kernels on the fake device.
  void saxpy(Stream s, float a, const float* x, float* y, uint64_t n) override;
  void madd(Stream s, const float* a, const float* b, float* c, uint64_t n) override;
  void sgemm(Stream s, const cls::SgemmArgs& args, const float* a, const float* b, float* c) override;
  void conv2d(Stream s, const cls::Conv2dArgs& args, const float* input, const float* filter, float* output) override;
  void mriq(Stream s, uint32_t num_k, uint32_t num_x, const float* kx, const float* ky, const float* kz,
            const float* phi_mag, const float* x, const float* y, const float* z, float* qr, float* qi) override;
  void spin(Stream s, uint64_t ns) override;
  bool runs_user_kernels() const override { return true; }
  Status load_user_module(Stream s, uint32_t slot, std::string_view ptx, uint64_t data_va) override;
  void launch_user(Stream s, const gpu::DeviceUserLaunch& launch) override;
  bool write_host_word(Stream, uint64_t, uint32_t) override { return false; }
  Status synchronize(Stream s) override;
  std::optional<Failure> failure(Stream s) const override;

 private:
  struct Vm {
    uint32_t id;
    std::unique_ptr<WorkerHost> host;
    VmPart part;
    int mapped_pid = -1;  // the worker whose aperture holds the part
    // The compute aperture as the last user launch left it, in worker
    // aperture_pid (a new worker starts with none mapped).
    std::vector<BlockRun> aperture;
    int aperture_pid = -1;
    // The channel's runs that aperture was planned from: the same runs
    // again (the engines' ApertureCache gives them per MMU generation)
    // need no plan.
    std::vector<gpu::ApertureRun> aperture_runs;
    // The channels' modules by worker slot (module_key), kept to load
    // them again into a worker started after a failure.
    struct Module {
      std::string text;
      uint64_t data_va;
      int pid;  // the worker that has it
    };
    std::map<uint32_t, Module> modules;
    mutable std::mutex mu;
  };
  // Rows of `width` bytes between host memory and the device, through the
  // bulk window (a chunk per window-full, each waited for).
  struct Rows {
    uint64_t dev, dev_pitch;
    std::byte* host;
    uint64_t host_pitch, width, height;
  };

  // The bulk window: host transfers and module texts below PARAM_AREA, a
  // user launch's parameters in its stream's page above (one launch per
  // channel is in flight, so its page is free again at the next).
  static constexpr uint64_t PARAM_AREA = BULK_BYTES - uint64_t{NUM_STREAMS} * cls::compute::MAX_PARAM_BYTES;

  // Scratch regions in the physical window: VRAM parts lie below
  // SCRATCH_OFFSET; stream s's region (its blocks' handles numbered from
  // SCRATCH_OFFSET / BLOCK_BYTES up, past every VRAM block) above.
  static constexpr uint64_t SCRATCH_OFFSET = PHYS_BYTES / 2;
  static constexpr uint64_t SCRATCH_STREAM_BYTES = gpu::MAX_BOUNCE_BYTES + BLOCK_BYTES;  // + the buffers' alignment
  static_assert(SCRATCH_OFFSET + NUM_STREAMS * SCRATCH_STREAM_BYTES <= PHYS_BYTES);
  static_assert(SCRATCH_STREAM_BYTES % BLOCK_BYTES == 0);
  struct Scratch {
    uint64_t used = 0;    // bytes handed out since the region was last empty
    uint32_t live = 0;    // allocations not yet freed
    uint32_t blocks = 0;  // mapped in worker `pid`
    int pid = -1;
  };

  // The stream's VM; nullptr (the stream failed) where it has none.
  Vm* vm_of_stream(Stream s);
  // The stream's VM, locked, if it has one and has not failed.
  std::unique_lock<std::mutex> usable(Stream s, Vm*& vm);
  // Starts the worker if it failed and maps the VM's part; false (the
  // streams failed) when it cannot.
  bool ready(Vm& vm);
  void queue(Stream s, Command c);
  bool fenced(Vm& vm, Stream s, Command c);
  bool fence_and_wait(Vm& vm, Stream s);
  void fail_vm(Vm& vm, const WorkerFailure& f);
  void rows(Stream s, Vm& vm, const Rows& r, bool to_device);
  // rows() on stream s's VM, if that VM's worker is ready (else nothing).
  void stream_rows(Stream s, const Rows& r, bool to_device);
  // User kernels (gpu_device_user.cc). The worker's slot of a channel's slot.
  static uint32_t module_key(Stream s, uint32_t slot) { return s * cls::compute::MAX_MODULE_SLOTS + slot; }
  // Loads the text into the VM's worker: a refusal's reason, or none.
  Result<std::optional<std::string>> load_in_worker(Vm& vm, Stream s, uint32_t key, std::string_view ptx,
                                                    uint64_t data_va);
  // Maps the launch's aperture in the VM's worker (changed blocks only).
  bool set_aperture(Vm& vm, Stream s, std::span<const gpu::ApertureRun> runs);
  void fail_stream(Stream s, regs::ChannelError code, std::string reason);
  // The residency tracker's transfers, each VM's share through its worker,
  // on `stream` (0: the tracker's own, in no channel's order).
  void transfer(uint64_t addr, uint64_t len, bool to_device, Stream stream);

  gpu::Vram& vram_;
  WorkerOptionsFor options_;
  std::chrono::nanoseconds deadline_;
  // VMs by id; a removed VM's entry stays (its worker ended) so that a
  // call that found it still holds a live object.
  mutable std::shared_mutex table_mu_;
  std::vector<std::unique_ptr<Vm>> vms_;
  Vm* stream_vm_[NUM_STREAMS] = {};
  // Per stream: a failure not yet reported, and the last one reported.
  std::optional<WorkerFailure> pending_[NUM_STREAMS], reported_[NUM_STREAMS];
  Scratch scratch_[NUM_STREAMS];  // under the stream's VM's lock
  mutable std::mutex streams_mu_;
};

}  // namespace vgpu::worker
