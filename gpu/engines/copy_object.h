// SPDX-License-Identifier: GPL-2.0-or-later
// The copy engine's class 0x90B5 (GF100_DMA_COPY, NVIDIA's published method
// layout; docs/spec/vgpu.md, "Copy class"). State methods latch registers;
// LAUNCH_DMA validates them and hands a pitch copy (1D or 2D) plus its
// semaphore release and interrupt to the copy engine.
#pragma once

#include <cstdint>
#include <span>

#include "gpu/engines/class_object.h"
#include "gpu/engines/method_table.h"
#include "vgpu/classes.h"

namespace vgpu::gpu {

class CopyObject final : public TableClassObject<CopyObject> {
 public:
  // The registers the state methods set, as last written.
  struct State {
    uint32_t semaphore_a = 0;  // SET_SEMAPHORE_A: VA bits 39:32
    uint32_t semaphore_b = 0;  // SET_SEMAPHORE_B: VA bits 31:0
    uint32_t semaphore_payload = 0;
    uint32_t addressing_mode = cls::copy::ADDRESSING_VIRTUAL_LOCAL_FB;
    uint32_t offset_in_upper = 0;
    uint32_t offset_in_lower = 0;
    uint32_t offset_out_upper = 0;
    uint32_t offset_out_lower = 0;
    uint32_t pitch_in = 0;
    uint32_t pitch_out = 0;
    uint32_t line_length_in = 0;  // bytes per line
    uint32_t line_count = 0;      // lines, when MULTI_LINE_ENABLE
  };

  uint32_t class_id() const override { return cls::DMA_COPY; }

  const State& state() const { return state_; }
  std::optional<std::vector<uint8_t>> save_state() const override;  // object_image.cc
  [[nodiscard]] bool restore_state(std::span<const uint8_t> bytes) override;
  // The class's method table (method_table.h).
  static std::span<const Record> methods();

 private:
  friend TableClassObject<CopyObject>;  // its store() sets state_
  static MethodOutcome launch_dma(CopyObject& self, ChannelContext& ctx, uint32_t mthd, uint32_t data);

  State state_;
};

}  // namespace vgpu::gpu
