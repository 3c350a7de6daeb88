// SPDX-License-Identifier: GPL-2.0-or-later
// The host class 0x906F: methods below fmt::mthd::HOST_METHOD_END, run by
// PFIFO itself (SET_OBJECT, semaphores, non-stall interrupt, reference
// counter, TLB invalidate).
#pragma once

#include <atomic>
#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <span>

#include "gpu/channel.h"
#include "gpu/mem/vram.h"

namespace vgpu::gpu {

struct HostCall {
  ChannelRun& run;
  Vram& vram;
  const std::function<void(uint64_t pdb)>& tlb_invalidate;  // PFIFO's, outliving the call
  uint32_t subch;
  uint32_t method;
  uint32_t data;
  // Counts releases left unwritten because the GPU wrote them (FollowingRelease).
  std::atomic<uint64_t>* device_releases = nullptr;
};

enum class HostStep {
  done,
  blocked,  // semaphore acquire not satisfied: retry the method later
  yield,    // let other channels run
};
using HostResult = std::expected<HostStep, ChannelFault>;

HostResult host_method(const HostCall& call);

// A SEMAPHORE_A/B pair's address.
uint64_t semaphore_va(uint32_t sem_a, uint32_t sem_b);

// SEMAPHORE_A, B, C and D: the methods of one semaphore operation.
inline constexpr uint32_t SEMAPHORE_METHODS = 4;

// The one-word release that the methods SEMAPHORE_A..D (their data words,
// in order) make, if they make one; none otherwise.
std::optional<FollowingRelease> one_word_release(std::span<const uint32_t, SEMAPHORE_METHODS> abcd);

// Acquire timeout from RAMFC ACQUIRE, in nanoseconds; none when disabled.
std::optional<uint64_t> acquire_timeout_ns(uint32_t ramfc_acquire);

}  // namespace vgpu::gpu
