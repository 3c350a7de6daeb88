// SPDX-License-Identifier: GPL-2.0-or-later
#include "vgpud/share_history.h"

namespace vgpu::vgpud {

void ShareHistory::sample(uint64_t now_ns, const std::map<uint32_t, uint64_t>& gpu_ns) {
  samples_.push_back(Sample{now_ns, gpu_ns});
  while (samples_.size() > KEEP) samples_.pop_front();
}

double ShareHistory::share(uint32_t vm, uint64_t window_ns) const {
  if (samples_.size() < 2) return 0.0;
  const Sample& last = samples_.back();
  // The oldest sample inside the window (or the oldest there is).
  const Sample* first = &samples_.front();
  for (const Sample& s : samples_) {
    if (last.t - s.t <= window_ns) {
      first = &s;
      break;
    }
  }
  auto used = [&](uint32_t id, uint64_t now_total) {
    auto it = first->gpu_ns.find(id);
    const uint64_t before = it == first->gpu_ns.end() ? 0 : it->second;
    return now_total >= before ? now_total - before : 0;
  };
  uint64_t all = 0, mine = 0;
  for (const auto& [id, total] : last.gpu_ns) {
    const uint64_t u = used(id, total);
    all += u;
    if (id == vm) mine = u;
  }
  return all ? static_cast<double>(mine) / static_cast<double>(all) : 0.0;
}

}  // namespace vgpu::vgpud
