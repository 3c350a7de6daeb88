// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's paravirtual page-table server (spec §17, docs/mediator.md
// "Paravirtual page tables"): the PV registers, and the batches a guest
// rings through DOORBELL. A batch is copied out of guest VRAM once, then
// each operation is bounded and validated as a whole (target pages through
// shadow/entry.h's check_target, the scanning path's own check) and
// applied straight to shadow tables; the first failing operation stops the
// batch. Nothing here reads a guest page table.
//
// Threads: called with the vGPU's lock held.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mediator/counters.h"
#include "shadow/shadow_spaces.h"
#include "shadow/guest_memory.h"
#include "shadow/reserved_vram.h"
#include "shadow/shadow_space.h"
#include "vgpu/regs.h"

namespace vgpu::mediator {

class PvServer {
 public:
  struct Env {
    const shadow::GuestMemory& guest;
    shadow::ReservedVram& pool;
    ShadowSpaces& spaces;
    Counters& counters;
    std::function<void(uint64_t)> invalidate;  // drop the physical TLB's entries of a shadow PD
    std::function<void(const std::string&)> guest_error;
  };
  PvServer(Env env, bool offered) : env_(std::move(env)), offered_(offered) {}

  uint32_t caps() const;
  uint32_t slot_base() const { return slot_base_; }
  // Any write starts a new session: every PV space of the VM is destroyed.
  void set_slot_base(uint32_t value);
  // Runs the batch of the slot `value` names; returns its result (also in
  // STATUS and the slot's header).
  regs::pv::Result doorbell(uint32_t value);
  uint32_t status() const { return static_cast<uint32_t>(status_); }
  uint32_t batches() const { return batches_; }

  // What a batch changed, for the BARs whose space it is (the vGPU
  // refreshes those BARs' page lists): VA range, or all of the space.
  struct Change {
    const shadow::ShadowSpace* space;
    uint64_t va;
    uint64_t bytes;  // ALL: the whole space
  };
  static constexpr uint64_t ALL = ~uint64_t{0};
  std::vector<Change> take_changed();

  // The VM reset: every space and the slot area go.
  void reset();

  // The live space with id `id`, or null (tests).
  std::shared_ptr<shadow::ShadowSpace> space(uint32_t id) const;

 private:
  struct Op {
    regs::pv::Opcode code;
    uint32_t flags;
    uint32_t space;
    uint64_t va;
    uint64_t addr;
    uint32_t pages;
  };
  using Slot = std::array<uint8_t, regs::pv::SLOT_BYTES>;
  struct Space {
    std::shared_ptr<shadow::ShadowSpace> shadow;
    uint64_t pd = 0;  // 0: no set_pd yet
  };
  using Handler = regs::pv::Result (PvServer::*)(const Op&, const Slot&);
  static const std::array<Handler, regs::pv::OPCODES> HANDLERS;

  regs::pv::Result run(const Slot& slot, uint32_t count, std::array<uint32_t, regs::pv::MAX_OPS>& results);
  regs::pv::Result op_nop(const Op&, const Slot&);
  regs::pv::Result op_create(const Op&, const Slot&);
  regs::pv::Result op_destroy(const Op&, const Slot&);
  regs::pv::Result op_set_pd(const Op&, const Slot&);
  regs::pv::Result op_map(const Op&, const Slot&);
  regs::pv::Result op_map_list(const Op&, const Slot&);
  regs::pv::Result op_unmap(const Op&, const Slot&);
  regs::pv::Result op_flush(const Op&, const Slot&);
  // Checks shared by map, map_list and unmap: flags, space, page count, VA range.
  regs::pv::Result check_range(const Op& op, Space*& space) const;
  regs::pv::Result apply(const Op& op, Space& space, const std::function<uint64_t(uint64_t)>& pte);
  Space* find(uint32_t id);
  void drop(Space& s);

  Env env_;
  const bool offered_;
  uint32_t slot_base_ = 0;
  regs::pv::Result status_ = regs::pv::Result::ok;
  uint32_t batches_ = 0;
  std::map<uint32_t, Space> spaces_;  // by id
  std::vector<Change> changed_;
};

}  // namespace vgpu::mediator
