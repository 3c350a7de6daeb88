// SPDX-License-Identifier: GPL-2.0-or-later
// What a worker runs its commands on (docs/cuda-worker.md): the GPU
// (cuda_device.cc, libcuda.so.1 opened at run time) or the fake device
// (fake_device.cc: host memory, for CI). Addresses are the guest's VAs in
// the compute aperture; a VA that is not mapped faults as on the GPU.
// Work is queued on a stream (a channel id); fence() queues the write of
// the stream's fence word behind it. An error is sticky: once a call
// failed, the worker reports it and exits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include "common/error.h"
#include "worker/block_map.h"
#include "worker/builtin.h"
#include "worker/ipc.h"

namespace vgpu::worker {

// A device error with the CUDA code (or FAKE_FAULT) and the faulting VA.
struct DeviceFault {
  uint32_t code;
  uint64_t addr;
  std::string message;
  // A module load refused with the context intact: not a device error
  // (the worker reports it, ipc.h ModuleRefusal, and goes on).
  bool refused = false;
};
inline constexpr uint32_t FAKE_FAULT = CUDA_ILLEGAL_ADDRESS;  // the fake device reports faults as the GPU does
// The driver's codes (CUresult) the fake device gives a failed kernel.
inline constexpr uint32_t CUDA_LAUNCH_OUT_OF_RESOURCES = 701;
inline constexpr uint32_t CUDA_ILLEGAL_INSTRUCTION = 715;
inline constexpr uint32_t CUDA_MISALIGNED_ADDRESS = 716;
inline constexpr uint32_t CUDA_LAUNCH_FAILED = 719;

using DeviceStatus = std::expected<void, DeviceFault>;

class WorkerDevice {
 public:
  virtual ~WorkerDevice() = default;
  virtual std::string name() const = 0;
  // Maps VRAM block `block` (created on first use) at `va`; unmaps it.
  virtual DeviceStatus map_block(uint64_t va, uint32_t block, bool writable) = 0;
  virtual DeviceStatus unmap_block(uint64_t va) = 0;
  virtual DeviceStatus fill32(uint32_t stream, uint64_t va, uint32_t value, uint64_t words) = 0;
  virtual DeviceStatus copy(uint32_t stream, uint64_t dst, uint64_t src, uint64_t bytes) = 0;
  // Host bytes in the shared region's bulk window (registered with the GPU).
  virtual DeviceStatus write(uint32_t stream, uint64_t va, const std::byte* host, uint64_t bytes) = 0;
  virtual DeviceStatus read(uint32_t stream, uint64_t va, std::byte* host, uint64_t bytes) = 0;
  virtual DeviceStatus spin(uint32_t stream, uint64_t ns) = 0;
  // The module's .global/.const variables live at data_va (module_globals.h).
  virtual DeviceStatus load_module(uint32_t slot, const char* text, uint64_t bytes, uint64_t data_va) = 0;
  virtual DeviceStatus launch(uint32_t stream, const LaunchArgs& args, const std::byte* params) = 0;
  // A built-in kernel (builtin.h), its block checked and its VAs placed.
  virtual DeviceStatus kernel(uint32_t stream, const KernelCall& call) = 0;
  // Queues fence[stream] = seq behind the stream's work.
  virtual DeviceStatus fence(uint32_t stream, std::atomic<uint32_t>* word, uint32_t seq) = 0;
  // An error of work already queued (a fault found after the launch call).
  virtual DeviceStatus poll_error() = 0;
  // True while any stream has queued work not yet done.
  virtual bool busy() = 0;
  // Where the physical window really is: commands name a VA in it as
  // PHYS_BASE + offset (block_map.h) and the loop moves it here.
  virtual uint64_t phys_window() const { return PHYS_BASE; }
};

// The fake device: 2 MiB host blocks, the work done at once on the
// calling thread (spin busy-waits, so a long spin is a hung kernel). It
// loads modules as the GPU's worker prepares them (parsed, variables
// placed, %ctaid rewritten; refused otherwise) and runs their launches, in
// the same pieces, on the PTX interpreter over its mapped blocks: a fault
// is a device error as on the GPU.
std::unique_ptr<WorkerDevice> make_fake_device();
// The GPU through libcuda.so.1, or an error naming what is missing.
Result<std::unique_ptr<WorkerDevice>> make_cuda_device(Region& region);

}  // namespace vgpu::worker
