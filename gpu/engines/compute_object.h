// SPDX-License-Identifier: GPL-2.0-or-later
// The compute engine's class: the subset of 0x90C0 (FERMI_COMPUTE_A) that
// launches built-in kernels (docs/spec/vgpu.md, "Compute class"). State
// methods latch the program region, grid, block and constant buffers;
// LAUNCH reads the program descriptor and the kernel's arguments from
// constant buffer ARG_CB_SLOT, validates them and hands the kernel to the
// compute engine. SET_REPORT_SEMAPHORE_D reports completion.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>

#include "gpu/engines/class_object.h"
#include "gpu/engines/kernel_launch.h"
#include "gpu/engines/method_table.h"
#include "gpu/engines/user_kernel.h"
#include "vgpu/classes.h"

namespace vgpu::gpu {

class ComputeObject final : public TableClassObject<ComputeObject> {
 public:
  struct Dim3 {
    uint32_t x = 1;  // ext: dimensions default to 1, so a driver that only
    uint32_t y = 1;  // sets the A methods (x, y) launches a 2D grid
    uint32_t z = 1;
  };
  struct ConstantBuffer {
    uint64_t va = 0;
    uint32_t size = 0;  // bytes
    bool valid = false;
  };
  // The registers the state methods set, as last written.
  struct State {
    uint32_t program_region_a = 0;  // VA bits 39:32
    uint32_t program_region_b = 0;  // VA bits 31:0
    uint32_t program_start = 0;     // offset of the descriptor in the region
    Dim3 grid;
    Dim3 block;
    uint32_t thread_count = 0;       // SET_CTA_THREAD_COUNT, recorded only
    uint32_t cb_selector_size = 0;   // SET_CONSTANT_BUFFER_SELECTOR_A..C
    uint32_t cb_selector_upper = 0;  // VA bits 39:32
    uint32_t cb_selector_lower = 0;  // VA bits 31:0
    uint32_t cb_load_offset = 0;     // LOAD_CONSTANT_BUFFER_OFFSET, advanced 4 per word
    std::array<ConstantBuffer, cls::compute::NUM_CB_SLOTS> bound{};
    uint32_t report_a = 0;  // SET_REPORT_SEMAPHORE_A..C
    uint32_t report_b = 0;
    uint32_t report_payload = 0;
    uint32_t shared_bytes = 0;  // SET_SHADER_SHARED_MEMORY_SIZE: a user kernel's dynamic shared memory
    uint32_t module_source_a = 0, module_source_b = 0, module_source_size = 0;  // §10.6
    uint32_t module_data_a = 0, module_data_b = 0, module_data_size = 0;
    uint32_t ptx_report_a = 0, ptx_report_b = 0;
  };

  uint32_t class_id() const override { return cls::COMPUTE; }
  // LOAD_CONSTANT_BUFFER's words in one write when they all fit the
  // buffer and lie on one small page (so a fault is the first word's);
  // LAUNCH_USER's whole run: a user launch in one method (§10.6).
  [[nodiscard]] std::optional<MethodOutcome> method_words(ChannelContext& ctx, uint32_t mthd,
                                                          std::span<const uint32_t> data) override;

  const State& state() const { return state_; }
  std::optional<std::vector<uint8_t>> save_state() const override;  // object_image.cc
  [[nodiscard]] bool restore_state(std::span<const uint8_t> bytes) override;
  // A sliced built-in launch between pieces (KernelProgress; a user
  // launch's pieces do not travel).
  [[nodiscard]] std::optional<std::string> check_work(uint32_t mthd, const WorkState& work) const override;
  [[nodiscard]] std::optional<EngineWork> restore_work(const ChannelContext& ctx, uint32_t mthd,
                                                       const WorkState& work) override;
  // The class's method table (method_table.h). The methods Fermi launch
  // sequences send that the built-in kernels have no use for (shared
  // memory, barriers, registers, caches) are accepted and ignored.
  static std::span<const Record> methods();

 private:
  friend TableClassObject<ComputeObject>;  // its store() sets state_
  // The A method of a dimension (x and y) and its B method (z): the grid's
  // SET_CTA_RASTER_SIZE and the block's SET_CTA_THREAD_DIMENSION.
  template <Dim3 State::*Dim>
  static MethodOutcome dim_xy(ComputeObject& self, ChannelContext& ctx, uint32_t mthd, uint32_t data);
  template <Dim3 State::*Dim>
  static MethodOutcome dim_z(ComputeObject& self, ChannelContext& ctx, uint32_t mthd, uint32_t data);
  static MethodOutcome load_cb(ComputeObject& self, ChannelContext& ctx, uint32_t mthd, uint32_t data);
  static MethodOutcome bind_cb(ComputeObject& self, ChannelContext& ctx, uint32_t mthd, uint32_t data);
  static MethodOutcome report_d(ComputeObject& self, ChannelContext& ctx, uint32_t mthd, uint32_t data);
  static MethodOutcome launch(ComputeObject& self, ChannelContext& ctx, uint32_t mthd, uint32_t data);
  static MethodOutcome load_module(ComputeObject& self, ChannelContext& ctx, uint32_t mthd, uint32_t data);
  static MethodOutcome unload_module(ComputeObject& self, ChannelContext& ctx, uint32_t mthd, uint32_t data);
  static MethodOutcome launch_user_word(ComputeObject& self, ChannelContext& ctx, uint32_t mthd, uint32_t data);
  // A launch of an entry of a loaded module (§10.6), from LAUNCH's state
  // and constant buffer or from LAUNCH_USER's words.
  struct UserRequest {
    uint32_t entry = 0;  // cls::compute::EntryModule, EntryIndex
    Dim3 grid, block;
    uint32_t shared_bytes = 0;
    uint64_t report_va = 0;
    uint64_t program_va = 0;                          // the address a bad_program names (0: the command's)
    std::optional<std::span<const uint32_t>> params;  // LAUNCH_USER's; none: constant-buffer slot 0
  };
  MethodOutcome launch_user(ChannelContext& ctx, uint32_t mthd, const UserRequest& r);
  MethodOutcome launch_user_words(ChannelContext& ctx, uint32_t mthd, std::span<const uint32_t> data);

  State state_;
  std::shared_ptr<ModuleSlots> modules_ = std::make_shared<ModuleSlots>();
  // Timed slicing's memory of this channel's launches (shared with their work).
  std::shared_ptr<SliceMemory> slices_ = std::make_shared<SliceMemory>();
};

}  // namespace vgpu::gpu
