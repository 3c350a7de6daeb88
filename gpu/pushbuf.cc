// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/pushbuf.h"

#include <array>

namespace vgpu::gpu::pushbuf {

using namespace fmt::mthd;

namespace {
enum class Layout : uint8_t { none, current, legacy };

struct OpRow {
  Op op;
  Layout layout;
  Kind kind;
};

// One row per opcode (bits 31:29), in opcode order.
constexpr std::array<OpRow, 8> OPS{{
    {Op::legacy_inc, Layout::legacy, Kind::inc},
    {Op::inc, Layout::current, Kind::inc},
    {Op::legacy_non_inc, Layout::legacy, Kind::non_inc},
    {Op::non_inc, Layout::current, Kind::non_inc},
    {Op::immediate, Layout::current, Kind::immediate},
    {Op::one_inc, Layout::current, Kind::one_inc},
    {Op::reserved, Layout::none, Kind::illegal},
    {Op::end_segment, Layout::none, Kind::end_segment},
}};
static_assert([] {
  for (uint32_t i = 0; i < OPS.size(); ++i)
    if (static_cast<uint32_t>(OPS[i].op) != i) return false;
  return true;
}());

constexpr uint32_t LEGACY_TERT_METHOD = 0;  // tert op 0: a method header; 1-3: subdevice masks
}  // namespace

Command decode(uint32_t header) {
  const OpRow& row = OPS[Opcode::get(header)];
  Command c{row.kind};
  switch (row.layout) {
    case Layout::none: return c;
    case Layout::current:
      c.subch = Subch::get(header);
      c.method = Addr::get(header) << 2;
      if (row.kind == Kind::immediate)
        c.immediate = Count::get(header);
      else
        c.count = Count::get(header);
      return c;
    case Layout::legacy:
      if (header == 0) return Command{Kind::nop};
      if (LegacyTert::get(header) != LEGACY_TERT_METHOD)
        // Subdevice-mask operations (opcode 0) have no effect with one GPU;
        // opcode 2 defines none.
        return Command{row.op == Op::legacy_inc ? Kind::nop : Kind::illegal};
      c.subch = Subch::get(header);
      c.method = LegacyAddr::get(header) << 2;
      c.count = LegacyCount::get(header);
      return c;
  }
  return Command{Kind::illegal};
}

uint32_t method_of(const Command& c, uint32_t i) {
  switch (c.kind) {
    case Kind::inc: return c.method + 4 * i;
    case Kind::one_inc: return i == 0 ? c.method : c.method + 4;
    default: return c.method;
  }
}

}  // namespace vgpu::gpu::pushbuf
