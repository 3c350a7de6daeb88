// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's configuration and its one check: the options of
// include/vgpu/options.h, with the message that names the option at
// fault. The host checks every vGPU it creates with it, and the C API (so
// QEMU's -device vgpu) checks a device's properties with it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <string>
#include <string_view>

#include "common/error.h"
#include "vgpu/bits.h"
#include "vgpu/options.h"

namespace vgpu::mediator {

struct VgpuConfig {
  std::string name = "vm";
  uint64_t vram_bytes = uint64_t{VGPU_OPT_VRAM_DEFAULT_MIB} * MiB;
  uint32_t channels = VGPU_OPT_CHANNELS_DEFAULT;    // guest channel ids [0, channels)
  bool bar_remap = VGPU_OPT_BAR_REMAP_DEFAULT;      // map insensitive BAR pages straight onto VRAM
  bool lazy_shadow = VGPU_OPT_LAZY_SHADOW_DEFAULT;  // defer shadow sync to dispatch, rescan dirty pages only
  uint32_t weight = VGPU_OPT_WEIGHT_DEFAULT;        // scheduler share
  bool pv = VGPU_OPT_PV_DEFAULT;                    // offer the paravirtual page-table interface (spec §17)
  // Slicing (VGPU_OPT_SLICE_BLOCKS): VGPU_OPT_SLICE_BLOCKS_AUTO, pieces of
  // the host's slice time (kernels and copies); N, compute launches in
  // slices of N blocks; 0, whole.
  uint32_t slice_blocks = VGPU_OPT_SLICE_BLOCKS_DEFAULT;
  uint32_t watchdog_ms = VGPU_OPT_WATCHDOG_MS_DEFAULT;  // one operation's engine time (0: none)
  // Reserved VRAM this vGPU's shadows may use (page tables, instance
  // blocks): carved from the host's pool at creation, so that no VM can
  // exhaust what another needs. Not a device option.
  uint64_t shadow_bytes = 24 * MiB;
  // Give the partition a memfd of its own (gpu::Vram::detach), so that the
  // VM's process can map its VRAM and nothing else (the host daemon,
  // vgpud/). Not a device option.
  bool own_vram_fd = false;
};

inline constexpr uint64_t VRAM_MIN = uint64_t{VGPU_OPT_VRAM_MIN_MIB} * MiB;
inline constexpr uint64_t VRAM_MAX = uint64_t{VGPU_OPT_VRAM_MAX_MIB} * MiB;
inline constexpr uint64_t MIN_SHADOW_BYTES = 1 * MiB;  // a directory, a small and a big table, instance blocks

// Each (option, value) against the option table's row
// (vgpu/option_table.h), with its message ("channels: 200 is above the
// maximum 128"). Every front end's numbers pass through it.
using OptionValue = std::pair<const char*, uint64_t>;
[[nodiscard]] Status check_options(std::initializer_list<OptionValue> values);
// The first option out of its bounds, as "option: what is wrong".
[[nodiscard]] Status check_vgpu_config(const VgpuConfig& c);
// A scheduler's name ("scheduler: 'x' is not one of fifo, credit, band").
[[nodiscard]] Status check_scheduler(std::string_view name);

}  // namespace vgpu::mediator
