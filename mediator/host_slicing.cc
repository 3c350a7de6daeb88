// SPDX-License-Identifier: GPL-2.0-or-later
// The host's side of slicing by time (docs/scheduler.md, "Slicing by
// time" and "Cutting on demand"): the pieces' time, and when the host
// asks the GPU's engines to cut them (SLICE_YIELD).
#include <algorithm>

#include "mediator/host.h"
#include "mediator/reg_names.h"

namespace vgpu::mediator {

uint64_t Host::slice_ns() const {
  constexpr uint64_t NS_PER_MS = 1'000'000;
  const uint64_t turn = config_.turn_ns != 0 ? config_.turn_ns : HostConfig{}.turn_ns;
  const uint64_t slice = turn / VGPU_OPT_SLICE_TURN_FRACTION;
  // A piece must fit the piece bound with room to spare: at most half of it.
  if (config_.max_gpu_ms == 0) return slice;
  return std::min(slice, uint64_t{config_.max_gpu_ms} * NS_PER_MS / 2);
}

void Host::hold_slice_yield(bool take) {
  if (take)
    yield_holds_.fetch_add(1);
  else
    yield_holds_.fetch_sub(1);
  write_slice_yield();
}

void Host::write_slice_yield() {
  yield_teller_.changed([this] { return others_waiting_.load() || yield_holds_.load() != 0; },
                        [this](bool ask) { gpu_->write32(pf::SLICE_YIELD.offset, pf::SliceYieldRequest::make(ask)); });
}

}  // namespace vgpu::mediator
