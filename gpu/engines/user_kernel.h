// SPDX-License-Identifier: GPL-2.0-or-later
// User kernels on the model (docs/spec/vgpu.md §10.6): the compute
// object's module slots, LOAD_MODULE's work (read the PTX text through
// the MMU, parse it once per device, initialise the module's data
// segment, write the report) and a launch of a module's entry, run by the
// PTX interpreter (gpu/ptx/) whole or in slices of thread blocks, every
// global access translated by the channel's MMU.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/engines/class_object.h"
#include "ptx/module.h"
#include "vgpu/classes.h"

// Every ChannelContext here is the compute engine's view of the channel
// (its accesses fault with unit PGRAPH: compute_object.cc's engine_context).
namespace vgpu::gpu {

// A module in a slot: the parsed text and where its data segment lives.
struct ModuleSlot {
  std::shared_ptr<const ptx::Module> module;
  uint64_t data_va = 0;
  uint64_t source_bytes = 0;
};

// The modules of one compute object. Methods and their engine work of one
// channel never run at once, so the slots need no lock; the engine work
// holds the table by shared_ptr, so an object destroyed meanwhile (unbind,
// reset) leaves it valid.
struct ModuleSlots {
  // Source bytes the slots may hold together: with MAX_MODULE_SLOTS and
  // the channels a VM has, this bounds the host memory a VM's modules use.
  static constexpr uint64_t MAX_SOURCE_BYTES = uint64_t{8} << 20;

  std::array<ModuleSlot, cls::compute::MAX_MODULE_SLOTS> slots{};
  uint64_t source_bytes = 0;          // of all slots
  std::atomic<uint32_t> sequence{0};  // PtxReport::sequence
};

struct ModuleLoad {
  uint64_t source_va = 0;
  uint32_t source_bytes = 0;
  uint64_t data_va = 0;
  uint64_t data_bytes = 0;
  uint64_t report_va = 0;  // 0: no report
  uint32_t slot = 0;
};

// LOAD_MODULE's engine work. A module the device refuses is reported (the
// channel goes on, as CUDA's module loads fail without harming the
// context); a fault reading the text or writing the data or the report is
// the channel's mmu_fault.
[[nodiscard]] EngineWork load_module_work(const ChannelContext& ctx, std::shared_ptr<ModuleSlots> slots,
                                          const ModuleLoad& load, uint32_t mthd);

// A launch of a module's entry as LAUNCH found it.
struct UserLaunch {
  std::shared_ptr<const ptx::Module> module;
  uint32_t entry = 0;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;  // dynamic (SET_SHADER_SHARED_MEMORY_SIZE)
  std::vector<std::byte> params;
  uint64_t data_va = 0;
  uint64_t report_va = 0;
  std::shared_ptr<ModuleSlots> slots;  // for the report's sequence
};

// The launch's engine work: whole, or in slices of `slice_blocks` blocks
// (0: whole), or, with a timed CHAN_SLICE (ctx.slice_ns), in pieces of
// about that time, sized from the blocks' measured speed. A failure writes the report and stops the channel: mmu_fault
// (the faulting VA), timeout, or kernel_error (trap, misaligned access,
// out-of-range shared or local access, a launch bound).
[[nodiscard]] EngineWork user_launch_work(const ChannelContext& ctx, UserLaunch launch, uint32_t mthd,
                                          uint32_t slice_blocks);

// Writes a report at `va` (0: none) with the slots' next sequence number.
[[nodiscard]] MethodDone write_report(ChannelContext& ctx, uint64_t va, cls::PtxReport report, ModuleSlots& slots,
                                      uint32_t mthd);
cls::PtxReport make_report(cls::PtxStatus status, uint32_t line, uint64_t addr, std::string_view message);

}  // namespace vgpu::gpu
