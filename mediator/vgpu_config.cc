// SPDX-License-Identifier: GPL-2.0-or-later
#include "mediator/vgpu_config.h"

#include "common/text.h"
#include "scheduler/policy.h"
#include "vgpu/option_table.h"
#include "vgpu/regs.h"

namespace vgpu::mediator {

// One default for the operation watchdog: a VM's and the GPU's reset value
// (what a guest given the GPU whole has).
static_assert(VGPU_OPT_WATCHDOG_MS_DEFAULT == regs::pfifo::CHAN_WATCHDOG_RESET_MS);

Status check_options(std::initializer_list<OptionValue> values) {
  for (const auto& [name, value] : values) {
    char err[256];
    if (!vgpu_option_check(vgpu_option_find(name), value, err, sizeof err)) return fail(Errc::invalid_argument, err);
  }
  return {};
}

Status check_vgpu_config(const VgpuConfig& c) {
  // In the user's unit (MiB), each case named.
  if (c.vram_bytes % MiB != 0)
    return fail(Errc::invalid_argument, strfmt("%s: %llu bytes is not a whole number of MiB", VGPU_OPT_VRAM,
                                               static_cast<unsigned long long>(c.vram_bytes)));
  if (c.vram_bytes > VRAM_MAX)
    return fail(Errc::invalid_argument,
                strfmt("%s: %llu MiB is above the maximum %u MiB", VGPU_OPT_VRAM,
                       static_cast<unsigned long long>(c.vram_bytes / MiB), VGPU_OPT_VRAM_MAX_MIB));
  if (c.vram_bytes < VRAM_MIN)
    return fail(Errc::invalid_argument,
                strfmt("%s: %llu MiB is below the minimum %u MiB", VGPU_OPT_VRAM,
                       static_cast<unsigned long long>(c.vram_bytes / MiB), VGPU_OPT_VRAM_MIN_MIB));
  if (Status s = check_options({{VGPU_OPT_CHANNELS, c.channels},
                                {VGPU_OPT_WEIGHT, c.weight},
                                {VGPU_OPT_SLICE_BLOCKS, c.slice_blocks},
                                {VGPU_OPT_WATCHDOG_MS, c.watchdog_ms}});
      !s)
    return s;
  if (c.shadow_bytes < MIN_SHADOW_BYTES || c.shadow_bytes % MiB)
    return fail(Errc::invalid_argument, strfmt("shadow budget: %s is not a MiB multiple of at least %s",
                                               hex(c.shadow_bytes).c_str(), hex(MIN_SHADOW_BYTES).c_str()));
  return {};
}

Status check_scheduler(std::string_view name) {
  if (sched::policy_known(name)) return {};
  return fail(Errc::invalid_argument,
              strfmt("%s: '%.*s' is not one of %s", VGPU_OPT_SCHEDULER, static_cast<int>(name.size()), name.data(),
                     sched::policy_names().c_str()));
}

}  // namespace vgpu::mediator
