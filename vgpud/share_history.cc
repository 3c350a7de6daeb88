// SPDX-License-Identifier: GPL-2.0-or-later
#include "vgpud/share_history.h"

namespace vgpu::vgpud {

void ShareHistory::sample(uint64_t now_ns, const std::map<uint32_t, uint64_t>& gpu_ns) {
  samples_.push_back(Sample{now_ns, gpu_ns});
  while (samples_.size() > KEEP) samples_.pop_front();
}

ShareHistory::Used ShareHistory::used(uint32_t vm, uint64_t window_ns) const {
  Used u;
  if (samples_.size() < 2) return u;
  const Sample& last = samples_.back();
  // The oldest sample inside the window (or the oldest there is).
  const Sample* first = &samples_.front();
  for (const Sample& s : samples_) {
    if (last.t - s.t <= window_ns) {
      first = &s;
      break;
    }
  }
  u.wall_ns = last.t - first->t;
  for (const auto& [id, total] : last.gpu_ns) {
    auto it = first->gpu_ns.find(id);
    const uint64_t before = it == first->gpu_ns.end() ? 0 : it->second;
    const uint64_t d = total >= before ? total - before : 0;
    u.all += d;
    if (id == vm) u.mine = d;
  }
  return u;
}

double ShareHistory::share(uint32_t vm, uint64_t window_ns) const {
  const Used u = used(vm, window_ns);
  return u.all ? static_cast<double>(u.mine) / static_cast<double>(u.all) : 0.0;
}

double ShareHistory::utilization(uint32_t vm, uint64_t window_ns) const {
  const Used u = used(vm, window_ns);
  return u.wall_ns ? static_cast<double>(u.mine) / static_cast<double>(u.wall_ns) : 0.0;
}

double ShareHistory::gpu_utilization(uint64_t window_ns) const {
  const Used u = used(~uint32_t{0}, window_ns);
  return u.wall_ns ? static_cast<double>(u.all) / static_cast<double>(u.wall_ns) : 0.0;
}

}  // namespace vgpu::vgpud
