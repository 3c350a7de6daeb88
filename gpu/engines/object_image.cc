// SPDX-License-Identifier: GPL-2.0-or-later
// Class objects in the migration image (docs/migration.md §2, "Bound
// subchannel objects"): each State in one fixed field order, for save and
// restore alike. The order is the format: a new field joins the end of its
// visit function and the image version goes up; the static_asserts stop
// the build until it does.
#include <algorithm>
#include <string>

#include "common/wire_codec.h"
#include "gpu/channel_image.h"
#include "gpu/engines/compute_object.h"
#include "gpu/engines/copy_object.h"

namespace vgpu::gpu {
namespace {

constexpr size_t COPY_WORDS = 12;
static_assert(sizeof(CopyObject::State) == COPY_WORDS * sizeof(uint32_t),
              "a CopyObject::State field is missing from visit_copy");

// The scalar words of ComputeObject::State (the two Dim3 count 3 each);
// the constant buffer bindings follow them.
constexpr size_t COMPUTE_WORDS = 26;
static_assert(sizeof(ComputeObject::State) ==
                  COMPUTE_WORDS * sizeof(uint32_t) + cls::compute::NUM_CB_SLOTS * sizeof(ComputeObject::ConstantBuffer),
              "a ComputeObject::State field is missing from visit_compute");

// A compute object's whole state: its fields, its bindings, and its module
// table at the most (sequence; per slot a flag, a VA and a text length).
constexpr size_t MODULE_TABLE_BYTES = sizeof(uint32_t) +
                                      cls::compute::MAX_MODULE_SLOTS * (1 + sizeof(uint64_t) + sizeof(uint32_t));
static_assert(sizeof(ComputeObject::State) + MODULE_TABLE_BYTES + ModuleSlots::MAX_SOURCE_BYTES <=
                  MAX_OBJECT_STATE_BYTES,
              "MAX_OBJECT_STATE_BYTES is too small for a compute object's modules");

template <class S, class Visit>
void visit_copy(S& s, Visit&& v) {
  for (auto* f : {&s.semaphore_a, &s.semaphore_b, &s.semaphore_payload, &s.addressing_mode, &s.offset_in_upper,
                  &s.offset_in_lower, &s.offset_out_upper, &s.offset_out_lower, &s.pitch_in, &s.pitch_out,
                  &s.line_length_in, &s.line_count})
    v(*f);
}

template <class S, class Visit>
void visit_compute(S& s, Visit&& v) {
  for (auto* f : {&s.program_region_a,
                  &s.program_region_b,
                  &s.program_start,
                  &s.grid.x,
                  &s.grid.y,
                  &s.grid.z,
                  &s.block.x,
                  &s.block.y,
                  &s.block.z,
                  &s.thread_count,
                  &s.cb_selector_size,
                  &s.cb_selector_upper,
                  &s.cb_selector_lower,
                  &s.cb_load_offset,
                  &s.report_a,
                  &s.report_b,
                  &s.report_payload,
                  &s.shared_bytes,
                  &s.module_source_a,
                  &s.module_source_b,
                  &s.module_source_size,
                  &s.module_data_a,
                  &s.module_data_b,
                  &s.module_data_size,
                  &s.ptx_report_a,
                  &s.ptx_report_b})
    v(*f);
}

// What BIND_CONSTANT_BUFFER can have latched: an unbound slot is all zero,
// a bound one a 40-bit VA and a size of CbSize.
bool bindable(const ComputeObject::ConstantBuffer& cb) {
  using namespace cls::compute;
  constexpr unsigned VA_BITS = 32 + VaUpper::width;
  if (!cb.valid) return cb.va == 0 && cb.size == 0;
  return cb.va >> VA_BITS == 0 && CbSize::fits(cb.size);
}

bool dims_fit(const ComputeObject::Dim3& d) {
  using namespace cls::compute;
  return DimLo::fits(d.x) && DimHi::fits(d.y) && DimLo::fits(d.z);
}

// The module table (image version 2): the report sequence, then per slot
// whether it holds a module and, if so, its data segment's VA and its
// text. Nothing parsed is carried: the destination parses the text again.
void save_modules(const ModuleSlots& m, Writer& w) {
  w.u32(m.sequence.load());
  for (const ModuleSlot& slot : m.slots) {
    w.boolean(slot.module != nullptr);
    if (!slot.module) continue;
    w.u64(slot.data_va);
    w.text(slot.text ? *slot.text : std::string());
  }
}

// Refuses a text that is empty, longer than a module may be, past the
// table's budget, or that this device does not parse.
bool restore_modules(Reader& r, ModuleSlots& m) {
  m.sequence.store(r.u32());
  for (ModuleSlot& slot : m.slots) {
    if (!r.boolean()) continue;
    const uint64_t data_va = r.u64();
    std::string text = r.text();
    if (!r.ok() || text.empty() || text.size() > cls::compute::MAX_MODULE_BYTES ||
        m.source_bytes + text.size() > ModuleSlots::MAX_SOURCE_BYTES)
      return false;
    auto parsed = ptx::parse_module(text);
    if (!parsed) return false;
    m.source_bytes += text.size();
    slot = ModuleSlot{.module = *parsed,
                      .data_va = data_va,
                      .source_bytes = text.size(),
                      .text = std::make_shared<const std::string>(std::move(text))};
  }
  return r.ok();
}

}  // namespace

std::optional<std::vector<uint8_t>> CopyObject::save_state() const {
  Writer w;
  visit_copy(state_, [&w](uint32_t f) { w.u32(f); });
  return w.take();
}

bool CopyObject::restore_state(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  State next;
  visit_copy(next, [&r](uint32_t& f) { f = r.u32(); });
  if (!r.ok() || !r.at_end()) return false;
  state_ = next;
  return true;
}

std::optional<std::vector<uint8_t>> ComputeObject::save_state() const {
  Writer w;
  visit_compute(state_, [&w](uint32_t f) { w.u32(f); });
  for (const ConstantBuffer& cb : state_.bound) {
    w.u64(cb.va);
    w.u32(cb.size);
    w.boolean(cb.valid);
  }
  save_modules(*modules_, w);
  return w.take();
}

bool ComputeObject::restore_state(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  State next;
  visit_compute(next, [&r](uint32_t& f) { f = r.u32(); });
  for (ConstantBuffer& cb : next.bound) {
    cb.va = r.u64();
    cb.size = r.u32();
    cb.valid = r.boolean();
  }
  if (!r.ok() || !dims_fit(next.grid) || !dims_fit(next.block) || !std::ranges::all_of(next.bound, bindable))
    return false;
  // Image version 1 ends here: no module table (none was loaded, or the
  // export was refused).
  auto modules = std::make_shared<ModuleSlots>();
  if (!r.at_end() && !restore_modules(r, *modules)) return false;
  if (!r.ok() || !r.at_end()) return false;
  state_ = next;
  modules_ = std::move(modules);
  return true;
}

}  // namespace vgpu::gpu
