// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's channel address spaces: one shadow per guest page directory in
// use (shared by the channels bound to that directory, kept while one of
// them holds it), their synchronization at the sync points, and the
// routing of trapped guest writes to the spaces whose tables they hit
// (docs/mediator.md, "Shadow page tables and their sync points").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "common/error.h"
#include "shadow/counters.h"
#include "shadow/guest_memory.h"
#include "shadow/reserved_vram.h"
#include "shadow/shadow_space.h"

namespace vgpu::mediator {

class ShadowSpaces {
 public:
  // `invalidate(shadow_pd)` drops the physical TLB's translations of a
  // shadow directory; `sync_error(message)` reports a failed sync.
  ShadowSpaces(const shadow::GuestMemory& guest, shadow::ReservedVram& pool, shadow::ShadowCounters& counters,
               std::function<void(uint64_t)> invalidate, std::function<void(const std::string&)> sync_error);

  // The space of a guest page directory: the one in use, or a new one
  // (unsynced). Fails when the directory lies outside the partition or the
  // pool is exhausted.
  [[nodiscard]] Result<std::shared_ptr<shadow::ShadowSpace>> get(uint64_t guest_pd);

  // Bring a space up to date (full rescan, or dirty pages only), then
  // invalidate the physical TLB for it if any shadow entry changed.
  void sync(shadow::ShadowSpace& space, bool full) const;
  // Lazy sync in pieces: stops once the steady clock passes until_ns
  // (ShadowSpace::sync_dirty_until). Returns whether it is done.
  bool sync_until(shadow::ShadowSpace& space, uint64_t until_ns) const;
  // Full rescan of every space in use, or of the one with `guest_pd`.
  void sync_all_full() const;
  void sync_full(uint64_t guest_pd) const;

  // A trapped guest write landed at `gaddr`: mark it dirty where it hits a table.
  void note_write(uint64_t gaddr) const;
  // Guest pages holding a table of a space in use (unsorted, may repeat).
  void append_table_pages(std::vector<uint64_t>& out) const;

  // Paravirtual spaces (spec §17): `attach_pv` makes get(pd) return `space`
  // from now on; false when `pd` already names another PV space or a
  // scanned space in use. `detach_pv` forgets the name (channels bound to
  // the space keep it until they unbind).
  [[nodiscard]] bool attach_pv(uint64_t pd, std::shared_ptr<shadow::ShadowSpace> space);
  void detach_pv(uint64_t pd) { pv_.erase(pd); }
  std::shared_ptr<shadow::ShadowSpace> find_pv(uint64_t pd) const;

  void clear() {
    spaces_.clear();
    pv_.clear();
  }

 private:
  template <typename F>
  void each(F&& f) const {
    for (const auto& [pd, weak] : spaces_)
      if (auto space = weak.lock()) f(*space);
  }

  const shadow::GuestMemory& guest_;
  shadow::ReservedVram& pool_;
  shadow::ShadowCounters& counters_;
  const std::function<void(uint64_t)> invalidate_;
  const std::function<void(const std::string&)> sync_error_;
  std::map<uint64_t, std::weak_ptr<shadow::ShadowSpace>> spaces_;  // by guest PD
  std::map<uint64_t, std::weak_ptr<shadow::ShadowSpace>> pv_;      // PV spaces, by the PD their set_pd named
};

}  // namespace vgpu::mediator
