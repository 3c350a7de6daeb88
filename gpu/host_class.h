// SPDX-License-Identifier: GPL-2.0-or-later
// The host class 0x906F: methods below fmt::mthd::HOST_METHOD_END, run by
// PFIFO itself (SET_OBJECT, semaphores, non-stall interrupt, reference
// counter, TLB invalidate).
#pragma once

#include <cstdint>
#include <expected>
#include <functional>

#include "gpu/channel.h"
#include "gpu/mem/vram.h"

namespace vgpu::gpu {

struct HostCall {
  ChannelRun& run;
  Vram& vram;
  std::function<void(uint64_t pdb)> tlb_invalidate;
  uint32_t subch;
  uint32_t method;
  uint32_t data;
};

enum class HostStep {
  done,
  blocked,  // semaphore acquire not satisfied: retry the method later
  yield,    // let other channels run
};
using HostResult = std::expected<HostStep, ChannelFault>;

HostResult host_method(const HostCall& call);

// Acquire timeout from RAMFC ACQUIRE, in nanoseconds; none when disabled.
std::optional<uint64_t> acquire_timeout_ns(uint32_t ramfc_acquire);

}  // namespace vgpu::gpu
