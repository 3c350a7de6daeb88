// SPDX-License-Identifier: GPL-2.0-or-later
// Method tables of the class objects: one record per method (name, byte
// address, number of words for method arrays, handler), looked up by the
// method's byte address. Also the small helpers every handler uses to
// report a channel fault.
#pragma once

#include <algorithm>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <vector>

#include "gpu/engines/class_object.h"

namespace vgpu::gpu {

template <typename Object>
struct MethodRecord {
  using Handler = MethodOutcome (*)(Object&, ChannelContext&, uint32_t mthd, uint32_t data);
  const char* name;
  uint32_t offset;  // byte address of the first word
  uint32_t words;   // 1, or the length of a method array (LOAD_CONSTANT_BUFFER)
  Handler handler;
  bool starts_work = false;  // the handler may return engine work (LAUNCH, LAUNCH_DMA)

  constexpr bool covers(uint32_t mthd) const {
    return mthd >= offset && mthd - offset < words * sizeof(uint32_t) && (mthd - offset) % sizeof(uint32_t) == 0;
  }
  // Index of mthd in a method array.
  constexpr uint32_t index(uint32_t mthd) const { return (mthd - offset) / static_cast<uint32_t>(sizeof(uint32_t)); }
};

// A table's records by method word: one lookup per method instead of a
// walk of the table (a launch is a dozen methods, and the walk was a fifth
// of PFIFO's instructions per launch; docs/cuda.md, "Hand-overs").
template <typename Object>
class MethodIndex {
 public:
  explicit MethodIndex(std::span<const MethodRecord<Object>> table) : table_(table) {
    if (table.empty()) return;
    first_ = std::ranges::min(table, {}, &MethodRecord<Object>::offset).offset;
    uint32_t end = first_;
    for (const MethodRecord<Object>& r : table)
      end = std::max(end, r.offset + r.words * static_cast<uint32_t>(sizeof(uint32_t)));
    slot_.assign((end - first_) / sizeof(uint32_t), NONE);
    for (size_t i = table.size(); i-- > 0;)  // the first record covering a word wins
      for (uint32_t w = 0; w < table[i].words; ++w)
        slot_[(table[i].offset - first_) / sizeof(uint32_t) + w] = static_cast<uint16_t>(i);
  }
  const MethodRecord<Object>* find(uint32_t mthd) const {
    if (mthd % sizeof(uint32_t) != 0 || mthd < first_) return nullptr;
    const uint32_t word = (mthd - first_) / static_cast<uint32_t>(sizeof(uint32_t));
    if (word >= slot_.size() || slot_[word] == NONE) return nullptr;
    return &table_[slot_[word]];
  }
  // Whether the method's handler may return engine work.
  bool starts_work(uint32_t mthd) const {
    const MethodRecord<Object>* r = find(mthd);
    return r != nullptr && r->starts_work;
  }

 private:
  static constexpr uint16_t NONE = UINT16_MAX;
  std::span<const MethodRecord<Object>> table_;
  uint32_t first_ = 0;          // byte address of the table's lowest method
  std::vector<uint16_t> slot_;  // per method word from first_: its record, or NONE
};

// Object's method table (Object::methods()) indexed by method word, made
// on first use: one per class.
template <typename Object>
const MethodIndex<Object>& method_index() {
  static const MethodIndex<Object> INDEX(Object::methods());
  return INDEX;
}

// The name of a method of Object's table; nullptr for one it does not have.
template <typename Object>
const char* table_method_name(uint32_t mthd) {
  const MethodRecord<Object>* r = method_index<Object>().find(mthd);
  return r == nullptr ? nullptr : r->name;
}

// Deliver one method through a table; a method the table lacks is illegal.
template <typename Object>
MethodOutcome dispatch_method(const MethodIndex<Object>& index, Object& object, ChannelContext& ctx, uint32_t mthd,
                              uint32_t data) {
  const MethodRecord<Object>* record = index.find(mthd);
  if (record == nullptr)
    return std::unexpected(ChannelFault{.code = regs::ChannelError::illegal_method, .method = mthd});
  return record->handler(object, ctx, mthd, data);
}

inline std::unexpected<ChannelFault> channel_fault(regs::ChannelError code, uint32_t mthd, uint64_t addr = 0) {
  return std::unexpected(ChannelFault{.code = code, .method = mthd, .addr = addr});
}

inline std::unexpected<ChannelFault> mmu_channel_fault(uint32_t mthd, const Fault& fault) {
  return std::unexpected(
      ChannelFault{.code = regs::ChannelError::mmu_fault, .method = mthd, .addr = fault.va, .mmu = fault});
}

// A method that completed at once, with no engine work.
inline MethodOutcome method_done() { return std::optional<EngineWork>{}; }

// A class object whose methods are its table, Self::methods(): delivery,
// the may-start-work check, method names and the index come from the
// table, and so do the handlers both tables use. Self keeps its registers
// in `state_` and befriends this base so that `store` can set them.
template <typename Self>
class TableClassObject : public ClassObject {
 public:
  [[nodiscard]] MethodOutcome method(ChannelContext& ctx, uint32_t mthd, uint32_t data) override {
    return dispatch_method(index(), static_cast<Self&>(*this), ctx, mthd, data);
  }
  bool may_start_work(uint32_t mthd) const override { return index().starts_work(mthd); }
  // Name of a method of this class; nullptr for one it does not have.
  static const char* method_name(uint32_t mthd) { return table_method_name<Self>(mthd); }
  using Record = MethodRecord<Self>;
  // The table indexed by method word (one per class, made on first use).
  static const MethodIndex<Self>& index() { return method_index<Self>(); }

 protected:
  // A state method: its data is the register Reg (a member of Self's state_).
  template <auto Reg>
  static MethodOutcome store(Self& self, ChannelContext&, uint32_t, uint32_t data) {
    self.state_.*Reg = data;
    return method_done();
  }
  // A method accepted that has nothing to do.
  static MethodOutcome ignore(Self&, ChannelContext&, uint32_t, uint32_t) { return method_done(); }
};

}  // namespace vgpu::gpu
