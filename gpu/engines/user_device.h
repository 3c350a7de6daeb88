// SPDX-License-Identifier: GPL-2.0-or-later
// User kernels on a device that runs them itself (Device::runs_user_kernels:
// the per-VM CUDA workers, docs/cuda-worker.md "User kernels"): LOAD_MODULE
// hands the module to the device as well, and a launch gives the device
// the channel's compute aperture (spec §10.7) as its page tables map it,
// the guest's parameters, and waits for it. The device maps the aperture
// at the guest's own VAs, so the kernel's pointers are used as they are.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gpu/device/device.h"
#include "gpu/engines/class_object.h"

namespace vgpu::gpu {

struct UserLaunch;

// The VRAM runs of the compute aperture mapped in an address space, whole
// 2 MiB blocks only (a block mapped in part, or partly in system memory,
// is left out: the device leaves it unmapped, so touching it faults).
// Walks at most one translation per 128 MiB page directory entry that has
// no table, and one run walk per 2 MiB block under one that has.
std::vector<ApertureRun> aperture_runs(Mmu& mmu, const AccessContext& as);

// The last walks by address space, reused while the MMU's generation
// holds (no invalidate since): a stream of launches walks once.
class ApertureCache {
 public:
  static constexpr size_t ENTRIES = 16;
  std::vector<ApertureRun> get(Mmu& mmu, const AccessContext& as);

 private:
  struct Entry {
    uint64_t pdb = 0, limit = 0, generation = ~uint64_t{0};
    std::vector<ApertureRun> runs;
  };
  std::mutex mu_;
  Entry entries_[ENTRIES];
  size_t next_ = 0;
};

// A user launch on the channel's device: the aperture's pages made valid
// on the device (uploaded where the host holds them), the launch queued
// and waited for; the written pages are the device's afterwards. A failure
// writes the report (mmu_fault with the VA where the device knows it,
// timeout, or illegal with the device's reason) and stops the channel.
[[nodiscard]] MethodDone user_launch_on_device(ChannelContext& ctx, const UserLaunch& launch, uint32_t mthd);

// The module's text to the device after the model loaded it into `slot`;
// the device's refusal as its message (the report says so, the slot stays
// empty), none when it loaded.
std::optional<std::string> load_on_device(ChannelContext& ctx, uint32_t slot, const std::string& text,
                                          uint64_t data_va);

}  // namespace vgpu::gpu
