// SPDX-License-Identifier: GPL-2.0-or-later
#include "mediator/pv_server.h"

#include <algorithm>
#include <cstring>

#include "common/text.h"
#include "shadow/entry.h"

namespace vgpu::mediator {
namespace {

namespace pv = regs::pv;
using R = pv::Result;

uint32_t load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

const char* result_name(R r) {
  switch (r) {
    case R::ok: return "ok";
    case R::not_run: return "not_run";
    case R::bad_opcode: return "bad_opcode";
    case R::bad_space: return "bad_space";
    case R::space_exists: return "space_exists";
    case R::bad_alignment: return "bad_alignment";
    case R::bad_range: return "bad_range";
    case R::outside_partition: return "outside_partition";
    case R::target_refused: return "target_refused";
    case R::bad_list: return "bad_list";
    case R::no_memory: return "no_memory";
    case R::pd_in_use: return "pd_in_use";
    case R::bad_slot: return "bad_slot";
    case R::bad_count: return "bad_count";
    case R::not_enabled: return "not_enabled";
  }
  return "?";
}

fmt::PageSize page_size(uint32_t flags) { return pv::op::Big::get(flags) ? fmt::PageSize::big : fmt::PageSize::small; }

bool is_bar_space(uint32_t id) { return id == pv::SPACE_BAR1 || id == pv::SPACE_BAR3; }

}  // namespace

const std::array<PvServer::Handler, pv::OPCODES> PvServer::HANDLERS{
    &PvServer::op_nop, &PvServer::op_create,   &PvServer::op_destroy, &PvServer::op_set_pd,
    &PvServer::op_map, &PvServer::op_map_list, &PvServer::op_unmap,   &PvServer::op_flush,
};

uint32_t PvServer::caps() const {
  return offered_ ? pv::CapsSignature::make(pv::SIGNATURE) | pv::CapsHypercalls::mask : regs::BAD_REGISTER;
}

void PvServer::set_slot_base(uint32_t value) {
  // A new session (a driver opened the device again): nothing of the last
  // one survives, as at reset.
  for (auto& [id, s] : spaces_) drop(s);
  spaces_.clear();
  slot_base_ = 0;
  if (!offered_ || !pv::SlotBaseEnable::get(value)) return;
  const uint64_t base = uint64_t{pv::SlotBaseAddr::get(value)} << pv::SLOT_BASE_SHIFT;
  if (base % pv::SLOT_BYTES || !env_.guest.partition().contains(base, pv::AREA_BYTES)) {
    env_.guest_error("PV: slot area " + hex(base) + " not aligned to " + hex(pv::SLOT_BYTES) +
                     " or not wholly in the VM's VRAM");
    return;
  }
  slot_base_ = value & (pv::SlotBaseAddr::mask | pv::SlotBaseEnable::mask);
}

pv::Result PvServer::doorbell(uint32_t value) {
  ++batches_;
  Counters::bump(env_.counters.pv_batches);
  const auto finish = [&](R r) {
    status_ = r;
    if (r != R::ok) {
      Counters::bump(env_.counters.pv_failures);
      env_.guest_error(strfmt("PV: batch in slot %u: %s", pv::DoorbellSlot::get(value), result_name(r)));
    }
    return r;
  };
  if (!offered_ || !pv::SlotBaseEnable::get(slot_base_)) return finish(R::not_enabled);
  const uint32_t index = pv::DoorbellSlot::get(value);
  if (index >= pv::SLOTS || value != pv::DoorbellSlot::make(index)) return finish(R::bad_slot);
  const uint64_t gslot = (uint64_t{pv::SlotBaseAddr::get(slot_base_)} << pv::SLOT_BASE_SHIFT) +
                         uint64_t{index} * pv::SLOT_BYTES;
  // The one copy: everything below reads `slot`, never guest memory, so a
  // guest rewriting the slot meanwhile changes nothing that was validated.
  auto slot = std::make_unique<Slot>();
  if (!env_.guest.vram().read(env_.guest.partition().host(gslot), slot->data(), slot->size()))
    return finish(R::not_enabled);
  const uint32_t count = load32(slot->data() + pv::slot::COUNT);
  std::array<uint32_t, pv::MAX_OPS> results{};
  R r = R::bad_count;
  uint32_t done = 0;
  if (count >= 1 && count <= pv::MAX_OPS) {
    r = run(*slot, count, results);
    while (done < count && results[done] == uint32_t(R::ok)) ++done;
    for (uint32_t i = 0; i < count; ++i)
      (void)env_.guest.write32(gslot + pv::slot::OPS + i * pv::slot::OP_BYTES + pv::op::RESULT, results[i]);
  }
  (void)env_.guest.write32(gslot + pv::slot::DONE, done);
  (void)env_.guest.write32(gslot + pv::slot::STATUS, static_cast<uint32_t>(r));
  return finish(r);
}

pv::Result PvServer::run(const Slot& slot, uint32_t count, std::array<uint32_t, pv::MAX_OPS>& results) {
  R batch = R::ok;
  for (uint32_t i = 0; i < count; ++i) {
    if (batch != R::ok) {
      results[i] = uint32_t(R::not_run);
      continue;
    }
    const uint8_t* rec = slot.data() + pv::slot::OPS + i * pv::slot::OP_BYTES;
    const uint32_t code = load32(rec + pv::op::CODE);
    const Op op{static_cast<pv::Opcode>(pv::op::Code::get(code)),
                code & ~pv::op::Code::mask,
                load32(rec + pv::op::SPACE),
                load64(rec + pv::op::VA),
                load64(rec + pv::op::ADDR),
                load32(rec + pv::op::PAGES)};
    R r = R::bad_opcode;
    if (pv::op::Code::get(code) < pv::OPCODES && (op.flags & ~pv::op::FLAGS) == 0)
      r = (this->*HANDLERS[pv::op::Code::get(code)])(op, slot);
    Counters::bump(env_.counters.pv_ops);
    results[i] = uint32_t(r);
    if (r != R::ok) batch = r;
  }
  return batch;
}

PvServer::Space* PvServer::find(uint32_t id) {
  auto it = spaces_.find(id);
  return it == spaces_.end() ? nullptr : &it->second;
}

std::shared_ptr<shadow::ShadowSpace> PvServer::space(uint32_t id) const {
  auto it = spaces_.find(id);
  return it == spaces_.end() ? nullptr : it->second.shadow;
}

std::vector<PvServer::Change> PvServer::take_changed() {
  std::vector<Change> out;
  out.swap(changed_);
  return out;
}

void PvServer::drop(Space& s) {
  if (s.pd) env_.spaces.detach_pv(s.pd);
  env_.invalidate(s.shadow->shadow_pd());
  changed_.push_back({s.shadow.get(), 0, ALL});
}

void PvServer::reset() {
  for (auto& [id, s] : spaces_) drop(s);
  spaces_.clear();
  changed_.clear();
  slot_base_ = 0;
  status_ = R::ok;
}

// ---- operations: each validates everything before it changes anything

pv::Result PvServer::op_nop(const Op& op, const Slot&) { return op.flags ? R::bad_opcode : R::ok; }

pv::Result PvServer::op_create(const Op& op, const Slot&) {
  if (op.flags) return R::bad_opcode;
  if (op.space >= pv::SPACES && !is_bar_space(op.space)) return R::bad_space;
  if (find(op.space)) return R::space_exists;
  auto shadow = shadow::ShadowSpace::create_pv(env_.guest, env_.pool, env_.counters.shadow);
  if (!shadow) return R::no_memory;
  spaces_[op.space] = Space{std::shared_ptr<shadow::ShadowSpace>(std::move(*shadow)), 0};
  return R::ok;
}

pv::Result PvServer::op_destroy(const Op& op, const Slot&) {
  if (op.flags) return R::bad_opcode;
  Space* s = find(op.space);
  if (!s) return R::bad_space;
  drop(*s);
  spaces_.erase(op.space);
  return R::ok;
}

pv::Result PvServer::op_set_pd(const Op& op, const Slot&) {
  if (op.flags) return R::bad_opcode;
  Space* s = find(op.space);
  if (!s) return R::bad_space;
  if (op.addr % fmt::TABLE_ALIGN || op.addr == 0) return R::bad_alignment;
  if (!env_.guest.partition().contains(op.addr, fmt::TABLE_ALIGN)) return R::outside_partition;
  if (s->pd == op.addr) return R::ok;
  if (!env_.spaces.attach_pv(op.addr, s->shadow)) return R::pd_in_use;
  if (s->pd) env_.spaces.detach_pv(s->pd);
  s->pd = op.addr;
  return R::ok;
}

pv::Result PvServer::check_range(const Op& op, Space*& space) const {
  if (pv::op::ReadOnly::get(op.flags) && op.code == pv::Opcode::unmap) return R::bad_opcode;
  auto it = spaces_.find(op.space);
  if (it == spaces_.end()) return R::bad_space;
  space = const_cast<Space*>(&it->second);
  const uint64_t page = fmt::page_bytes(page_size(op.flags));
  if (op.va % page) return R::bad_alignment;
  if (op.pages == 0 || op.pages > pv::MAX_PAGES) return R::bad_range;
  if (op.va >= fmt::VA_LIMIT || uint64_t{op.pages} * page > fmt::VA_LIMIT - op.va) return R::bad_range;
  return R::ok;
}

pv::Result PvServer::apply(const Op& op, Space& space, const std::function<uint64_t(uint64_t)>& pte) {
  if (!space.shadow->pv_write(op.va, op.pages, page_size(op.flags), pte)) return R::no_memory;
  changed_.push_back({space.shadow.get(), op.va, uint64_t{op.pages} * fmt::page_bytes(page_size(op.flags))});
  return R::ok;
}

pv::Result PvServer::op_map(const Op& op, const Slot&) {
  Space* s = nullptr;
  if (R r = check_range(op, s); r != R::ok) return r;
  const fmt::PageSize ps = page_size(op.flags);
  const uint64_t page = fmt::page_bytes(ps);
  const fmt::Target target = pv::op::Sysmem::get(op.flags) ? fmt::Target::sysmem_coherent : fmt::Target::vram;
  const uint64_t bytes = uint64_t{op.pages} * page;
  if (op.addr % page) return R::bad_alignment;
  if (op.addr > ~uint64_t{0} - bytes) return R::outside_partition;
  // Every page through the scanning path's check. VRAM: the partition is
  // one range, so the pages' host addresses follow the first. System
  // memory: each page is confined to the VM's RAM on its own (a range may
  // span RAM regions that lie apart on the host bus).
  std::vector<uint64_t> hosts(target == fmt::Target::vram ? 1 : op.pages);
  for (uint64_t i = 0; i < op.pages; ++i) {
    const shadow::TargetPage t = shadow::check_target(target, op.addr + i * page, page, env_.guest.partition(),
                                                      env_.guest.ram());
    if (t.verdict != shadow::Verdict::mapped)
      return target == fmt::Target::vram ? R::outside_partition : R::target_refused;
    if (i < hosts.size()) hosts[i] = t.host;
  }
  const fmt::pte::Flags flags{.read_only = pv::op::ReadOnly::get(op.flags) != 0, .aperture = target};
  return apply(op, *s,
               [&](uint64_t i) { return fmt::pte::make(hosts.size() == 1 ? hosts[0] + i * page : hosts[i], flags); });
}

pv::Result PvServer::op_map_list(const Op& op, const Slot& slot) {
  Space* s = nullptr;
  if (R r = check_range(op, s); r != R::ok) return r;
  const fmt::PageSize ps = page_size(op.flags);
  const uint64_t page = fmt::page_bytes(ps);
  const fmt::Target target = pv::op::Sysmem::get(op.flags) ? fmt::Target::sysmem_coherent : fmt::Target::vram;
  // The list lies in the slot's list area (of the copy).
  if (op.addr % sizeof(uint64_t) || op.addr < pv::slot::LIST || op.addr > pv::SLOT_BYTES ||
      uint64_t{op.pages} * sizeof(uint64_t) > pv::SLOT_BYTES - op.addr)
    return R::bad_list;
  const uint8_t* list = slot.data() + op.addr;
  std::vector<uint64_t> hosts(op.pages);
  for (uint64_t i = 0; i < op.pages; ++i) {
    const shadow::TargetPage t = shadow::check_target(target, load64(list + i * sizeof(uint64_t)), page,
                                                      env_.guest.partition(), env_.guest.ram());
    if (t.verdict != shadow::Verdict::mapped) {
      if (target != fmt::Target::vram) return R::target_refused;
      return load64(list + i * sizeof(uint64_t)) % page ? R::bad_alignment : R::outside_partition;
    }
    hosts[i] = t.host;
  }
  const fmt::pte::Flags flags{.read_only = pv::op::ReadOnly::get(op.flags) != 0, .aperture = target};
  return apply(op, *s, [&](uint64_t i) { return fmt::pte::make(hosts[i], flags); });
}

pv::Result PvServer::op_unmap(const Op& op, const Slot&) {
  if (pv::op::Sysmem::get(op.flags)) return R::bad_opcode;
  Space* s = nullptr;
  if (R r = check_range(op, s); r != R::ok) return r;
  return apply(op, *s, [](uint64_t) { return uint64_t{0}; });
}

pv::Result PvServer::op_flush(const Op& op, const Slot&) {
  if (op.flags) return R::bad_opcode;
  Space* s = find(op.space);
  if (!s) return R::bad_space;
  Counters::bump(env_.counters.tlb_invalidates);
  env_.invalidate(s->shadow->shadow_pd());
  return R::ok;
}

}  // namespace vgpu::mediator
