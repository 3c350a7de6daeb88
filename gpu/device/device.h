// SPDX-License-Identifier: GPL-2.0-or-later
// A GPU that runs the engines' work for the model (docs/cuda.md): it holds
// a mirror of VRAM (same physical addresses) and runs copies and the
// built-in kernels on it, on one stream per channel. Pointers are device
// addresses: mirror(phys) for VRAM, alloc() for scratch; the host never
// dereferences them. Work is asynchronous until synchronize(stream).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/error.h"
#include "gpu/device/residency.h"
#include "gpu/mem/system_memory.h"
#include "vgpu/classes.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {

// One physically contiguous VRAM run of a channel's compute aperture
// (spec §10.7), as its page tables map it: a user kernel may touch it.
struct ApertureRun {
  uint64_t va, phys, bytes;
  bool writable;
  bool operator==(const ApertureRun&) const = default;
};

// A user kernel's launch on a device that runs them (runs_user_kernels):
// the module loaded into the channel's slot, the guest's packed
// parameters, and every mapping of the channel's compute aperture (what
// the device maps at the guest's own VAs; anything else faults).
struct DeviceUserLaunch {
  uint32_t slot = 0, entry = 0;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;  // dynamic
  std::span<const std::byte> params;
  uint32_t piece_blocks = 0;  // the grid in pieces of about this many blocks (0: whole)
  std::span<const ApertureRun> aperture;
};

// As a DmaRegistrar it registers (pins) host memory that system memory
// DMA reaches (guest RAM), counted per base (host_registry.h).
class Device : public MirrorTransfers, public DmaRegistrar {
 public:
  using Stream = uint32_t;  // the channel id

  virtual std::string name() const = 0;  // e.g. "NVIDIA H100 80GB HBM3 (cuda)"
  // What conv2d runs on (e.g. "cudnn 9.1", "direct cuda kernel").
  virtual std::string conv2d_library() const = 0;

  virtual std::byte* mirror(uint64_t phys) = 0;
  virtual std::byte* alloc(Stream s, uint64_t bytes) = 0;  // nullptr if out of memory
  virtual void free(Stream s, std::byte* p) = 0;           // stream-ordered

  // Device-to-device copies. copy_2d: `height` rows of `width` bytes.
  virtual void copy(Stream s, std::byte* dst, const std::byte* src, uint64_t bytes) = 0;
  virtual void copy_2d(Stream s, std::byte* dst, uint64_t dst_pitch, const std::byte* src, uint64_t src_pitch,
                       uint64_t width, uint64_t height) = 0;

  // Host<->device copies (system memory DMA): the host side is memory
  // registered through DmaRegistrar (any host memory works, slower). The
  // host bytes must stay until the stream is synchronized.
  virtual void copy_from_host(Stream s, std::byte* dst, const std::byte* host_src, uint64_t bytes) = 0;
  virtual void copy_to_host(Stream s, std::byte* host_dst, const std::byte* src, uint64_t bytes) = 0;
  virtual void copy_2d_from_host(Stream s, std::byte* dst, uint64_t dst_pitch, const std::byte* host_src,
                                 uint64_t src_pitch, uint64_t width, uint64_t height) = 0;
  virtual void copy_2d_to_host(Stream s, std::byte* host_dst, uint64_t dst_pitch, const std::byte* src,
                               uint64_t src_pitch, uint64_t width, uint64_t height) = 0;

  // The built-in kernels (gpu/kernels/kernels.h semantics, fp32).
  virtual void fill(Stream s, float* dst, uint64_t n, float value) = 0;
  virtual void saxpy(Stream s, float a, const float* x, float* y, uint64_t n) = 0;
  virtual void madd(Stream s, const float* a, const float* b, float* c, uint64_t n) = 0;
  virtual void sgemm(Stream s, const cls::SgemmArgs& args, const float* a, const float* b, float* c) = 0;
  virtual void conv2d(Stream s, const cls::Conv2dArgs& args, const float* input, const float* filter,
                      float* output) = 0;
  virtual void mriq(Stream s, uint32_t num_k, uint32_t num_x, const float* kx, const float* ky, const float* kz,
                    const float* phi_mag, const float* x, const float* y, const float* z, float* qr, float* qi) = 0;
  virtual void spin(Stream s, uint64_t ns) = 0;

  // User kernels (spec §10.6) on the device itself (the per-VM workers,
  // docs/cuda-worker.md); elsewhere the model's interpreter runs them.
  virtual bool runs_user_kernels() const { return false; }
  // Loads the module text of the channel's `slot` (its variables at
  // data_va); an error is the device's refusal, the channel goes on.
  [[nodiscard]] virtual Status load_user_module(Stream, uint32_t /*slot*/, std::string_view /*ptx*/,
                                                uint64_t /*data_va*/) {
    return fail(Errc::unsupported, "this device runs no user kernels");
  }
  // Queues the launch; synchronize(s) says how it went (failure(s) why).
  // Called only where runs_user_kernels().
  virtual void launch_user(Stream, const DeviceUserLaunch&) {}

  // Writes `value` into the host's VRAM bytes at `phys` (4-aligned) from
  // the device once the stream's earlier work is done: a fence with no host
  // thread between the work and the word (docs/cuda.md, "Fences"). False,
  // with nothing queued, where the device cannot reach host VRAM.
  [[nodiscard]] virtual bool write_host_word(Stream s, uint64_t phys, uint32_t value) = 0;

  // Waits for the stream's work; an error if the device failed it.
  [[nodiscard]] virtual Status synchronize(Stream s) = 0;

  // What the stream's last failed synchronize means for its channel, where
  // the device knows more than "it failed" (the per-VM workers: a fault
  // with its VA, a kernel past its deadline, a dead worker). None: internal.
  struct Failure {
    regs::ChannelError code;
    uint64_t addr;
    std::string reason;
    // A memory fault of the device (addr: the VA where known): a user
    // kernel's report says mmu_fault.
    bool memory_fault = false;
  };
  virtual std::optional<Failure> failure(Stream) const { return std::nullopt; }
};

// A device that keeps each VM's memory and work apart (the per-VM CUDA
// workers, worker/gpu_device.h): the mediator tells it each VM's VRAM
// partition and channels (streams) as the VM comes and goes.
class VmDevices {
 public:
  virtual ~VmDevices() = default;
  // What a VM's partition's base and size must be multiples of.
  virtual uint64_t partition_align() const = 0;
  [[nodiscard]] virtual Status add_vm(uint32_t id, uint64_t base, uint64_t bytes, uint32_t first_stream,
                                      uint32_t streams) = 0;
  virtual void remove_vm(uint32_t id) = 0;
};

}  // namespace vgpu::gpu
