// SPDX-License-Identifier: GPL-2.0-or-later
#include "shadow/shadow_spaces.h"

namespace vgpu::mediator {

ShadowSpaces::ShadowSpaces(const shadow::GuestMemory& guest, shadow::ReservedVram& pool,
                           shadow::ShadowCounters& counters, std::function<void(uint64_t)> invalidate,
                           std::function<void(const std::string&)> sync_error)
    : guest_(guest),
      pool_(pool),
      counters_(counters),
      invalidate_(std::move(invalidate)),
      sync_error_(std::move(sync_error)) {}

Result<std::shared_ptr<shadow::ShadowSpace>> ShadowSpaces::get(uint64_t guest_pd) {
  if (auto pv = find_pv(guest_pd)) return pv;
  if (auto it = spaces_.find(guest_pd); it != spaces_.end())
    if (auto live = it->second.lock()) return live;
  auto created = shadow::ShadowSpace::create(guest_, pool_, counters_, guest_pd);
  if (!created) return std::unexpected(created.error());
  std::shared_ptr<shadow::ShadowSpace> space = std::move(*created);
  spaces_[guest_pd] = space;
  return space;
}

bool ShadowSpaces::attach_pv(uint64_t pd, std::shared_ptr<shadow::ShadowSpace> space) {
  if (find_pv(pd)) return false;
  if (auto it = spaces_.find(pd); it != spaces_.end() && !it->second.expired()) return false;
  pv_[pd] = space;
  return true;
}

std::shared_ptr<shadow::ShadowSpace> ShadowSpaces::find_pv(uint64_t pd) const {
  auto it = pv_.find(pd);
  return it == pv_.end() ? nullptr : it->second.lock();
}

void ShadowSpaces::sync(shadow::ShadowSpace& space, bool full) const {
  const uint64_t before = counters_.shadow_writes.load(std::memory_order_relaxed);
  Status s = full ? space.sync_full() : space.sync_dirty();
  if (!s) sync_error_("shadow sync: " + s.error().message);
  if (counters_.shadow_writes.load(std::memory_order_relaxed) != before) invalidate_(space.shadow_pd());
}

bool ShadowSpaces::sync_until(shadow::ShadowSpace& space, uint64_t until_ns) const {
  const uint64_t before = counters_.shadow_writes.load(std::memory_order_relaxed);
  bool done = false;
  Status s = space.sync_dirty_until(until_ns, done);
  if (!s) sync_error_("shadow sync: " + s.error().message);
  if (counters_.shadow_writes.load(std::memory_order_relaxed) != before) invalidate_(space.shadow_pd());
  return done;
}

void ShadowSpaces::sync_all_full() const {
  each([&](shadow::ShadowSpace& s) { sync(s, true); });
}

void ShadowSpaces::sync_full(uint64_t guest_pd) const {
  each([&](shadow::ShadowSpace& s) {
    if (s.guest_pd() == guest_pd) sync(s, true);
  });
}

void ShadowSpaces::note_write(uint64_t gaddr) const {
  each([&](shadow::ShadowSpace& s) { s.note_write(gaddr); });
}

void ShadowSpaces::append_table_pages(std::vector<uint64_t>& out) const {
  each([&](const shadow::ShadowSpace& s) {
    auto t = s.table_pages();
    out.insert(out.end(), t.begin(), t.end());
  });
}

}  // namespace vgpu::mediator
