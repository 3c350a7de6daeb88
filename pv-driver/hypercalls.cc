// SPDX-License-Identifier: GPL-2.0-or-later
#include "pv-driver/hypercalls.h"

#include "common/text.h"

namespace vgpu::pvdriver {
namespace {
namespace pv = regs::pv;
using driver::Bar;

const char* opcode_name(pv::Opcode c) {
  static constexpr const char* NAMES[pv::OPCODES] = {"nop", "create_space", "destroy_space", "set_pd",
                                                     "map", "map_list",     "unmap",         "flush"};
  const auto i = static_cast<uint32_t>(c);
  return i < pv::OPCODES ? NAMES[i] : "?";
}
}  // namespace

const char* result_name(uint32_t code) {
  switch (static_cast<pv::Result>(code)) {
    case pv::Result::ok: return "ok";
    case pv::Result::not_run: return "not_run";
    case pv::Result::bad_opcode: return "bad_opcode";
    case pv::Result::bad_space: return "bad_space";
    case pv::Result::space_exists: return "space_exists";
    case pv::Result::bad_alignment: return "bad_alignment";
    case pv::Result::bad_range: return "bad_range";
    case pv::Result::outside_partition: return "outside_partition";
    case pv::Result::target_refused: return "target_refused";
    case pv::Result::bad_list: return "bad_list";
    case pv::Result::no_memory: return "no_memory";
    case pv::Result::pd_in_use: return "pd_in_use";
    case pv::Result::bad_slot: return "bad_slot";
    case pv::Result::bad_count: return "bad_count";
    case pv::Result::not_enabled: return "not_enabled";
  }
  return "unknown";
}

bool Hypercalls::offered(driver::Port& port) {
  const uint32_t caps = port.read32(Bar::bar0, pv::CAPS.offset);
  return caps != regs::BAD_REGISTER && pv::CapsSignature::get(caps) == pv::SIGNATURE &&
         pv::CapsHypercalls::get(caps) != 0;
}

Result<std::unique_ptr<Hypercalls>> Hypercalls::open(driver::Port& port, driver::InstMem& mem, uint64_t area,
                                                     uint32_t slot) {
  if (!offered(port)) return fail(Errc::unsupported, "the device offers no paravirtual interface (pv=on)");
  if (area % pv::SLOT_BYTES || slot >= pv::SLOTS)
    return fail(Errc::invalid_argument, strfmt("PV slot area %s or slot %u invalid", hex(area).c_str(), slot));
  port.write32(Bar::bar0, pv::SLOT_BASE.offset,
               pv::SlotBaseEnable::mask | pv::SlotBaseAddr::make(static_cast<uint32_t>(area >> pv::SLOT_BASE_SHIFT)));
  if (!pv::SlotBaseEnable::get(port.read32(Bar::bar0, pv::SLOT_BASE.offset)))
    return fail(Errc::device_error, "the device refused the PV slot area at " + hex(area));
  return std::unique_ptr<Hypercalls>(new Hypercalls(port, mem, area + uint64_t{slot} * pv::SLOT_BYTES, slot));
}

Status Hypercalls::add(const PvOp& op) {
  if (count_ == pv::MAX_OPS)
    if (auto ok = submit(); !ok) return ok;
  const uint64_t rec = slot_addr_ + pv::slot::OPS + uint64_t{count_} * pv::slot::OP_BYTES;
  mem_.write32(rec + pv::op::CODE, pv::op::Code::make(static_cast<uint32_t>(op.code)) | op.flags);
  mem_.write32(rec + pv::op::SPACE, op.space);
  mem_.write64(rec + pv::op::VA, op.va);
  mem_.write64(rec + pv::op::ADDR, op.addr);
  mem_.write32(rec + pv::op::PAGES, op.pages);
  codes_.push_back(op.code);
  ++count_;
  ++stats_.ops;
  return {};
}

Status Hypercalls::submit() {
  if (count_ == 0) return {};
  mem_.write32(slot_addr_ + pv::slot::COUNT, count_);
  const uint32_t count = count_;
  count_ = 0;
  std::vector<pv::Opcode> codes;
  codes.swap(codes_);
  ++stats_.batches;
  // DOORBELL is not posted: the batch has run when the write returns.
  port_.write32(Bar::bar0, pv::DOORBELL.offset, pv::DoorbellSlot::make(slot_));
  const uint32_t status = mem_.read32(slot_addr_ + pv::slot::STATUS);
  if (status == uint32_t(pv::Result::ok)) return {};
  const uint32_t done = mem_.read32(slot_addr_ + pv::slot::DONE);
  if (done >= count)
    return fail(Errc::device_error, strfmt("PV batch of %u operations: %s", count, result_name(status)));
  return fail(Errc::device_error, strfmt("PV batch: operation %u of %u (%s) failed: %s", done, count,
                                         opcode_name(codes[done]), result_name(status)));
}

Result<uint32_t> Hypercalls::alloc_space() {
  for (uint32_t i = 0; i < used_.size(); ++i)
    if (!used_[i]) {
      used_[i] = true;
      return i;
    }
  return fail(Errc::out_of_memory, strfmt("all %u PV address space ids in use", pv::SPACES));
}

void Hypercalls::free_space(uint32_t id) {
  if (id < used_.size()) used_[id] = false;
}

}  // namespace vgpu::pvdriver
