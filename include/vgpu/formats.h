// SPDX-License-Identifier: GPL-2.0-or-later
// In-memory formats of the vgpu device (docs/spec/vgpu.md): page-table
// geometry and entries, GPFIFO entries and push-buffer method headers.
#pragma once

#include <cstdint>

#include "vgpu/bits.h"

namespace vgpu::fmt {

// ---------------------------------------------------------------- memory targets
// Aperture encodings. Fermi uses two: page directory bases, PTEs and most
// registers say 0 = VRAM; PDEs say 1 = VRAM and 0 = no table.
enum class Target : uint32_t { vram = 0, sysmem_coherent = 2, sysmem_noncoherent = 3 };
enum class PdeTarget : uint64_t { none = 0, vram = 1, sysmem_coherent = 2, sysmem_noncoherent = 3 };

// ---------------------------------------------------------------- page-table geometry
inline constexpr unsigned VA_BITS = 40;
inline constexpr uint64_t VA_LIMIT = uint64_t{1} << VA_BITS;

enum class PageSize : unsigned { small = 0, big = 1 };

// One row per level, as data (docs/spec/vgpu.md, "Page tables").
struct Level {
  const char* name;
  unsigned va_lo;        // lowest VA bit indexed by this level
  unsigned va_bits;      // VA bits indexed by this level
  unsigned entry_bytes;
  constexpr uint64_t entries() const { return uint64_t{1} << va_bits; }
  constexpr uint64_t table_bytes() const { return entries() * entry_bytes; }
  constexpr uint64_t index(uint64_t va) const { return (va >> va_lo) & (entries() - 1); }
};

inline constexpr unsigned SMALL_PAGE_SHIFT = 12;
inline constexpr unsigned BIG_PAGE_SHIFT = 17;
inline constexpr unsigned PDE_SHIFT = 27;
inline constexpr uint64_t SMALL_PAGE = uint64_t{1} << SMALL_PAGE_SHIFT;  // 4 KiB
inline constexpr uint64_t BIG_PAGE = uint64_t{1} << BIG_PAGE_SHIFT;      // 128 KiB
inline constexpr uint64_t PDE_SPAN = uint64_t{1} << PDE_SHIFT;           // 128 MiB

inline constexpr Level PD{"pd", PDE_SHIFT, VA_BITS - PDE_SHIFT, 8};
inline constexpr Level SPT{"spt", SMALL_PAGE_SHIFT, PDE_SHIFT - SMALL_PAGE_SHIFT, 8};
inline constexpr Level LPT{"lpt", BIG_PAGE_SHIFT, PDE_SHIFT - BIG_PAGE_SHIFT, 8};

static_assert(PD.entries() == 8192 && PD.table_bytes() == 64 * KiB);
static_assert(SPT.entries() == 32768 && SPT.table_bytes() == 256 * KiB);
static_assert(LPT.entries() == 1024 && LPT.table_bytes() == 8 * KiB);
static_assert(PD.va_lo + PD.va_bits == VA_BITS);

constexpr uint64_t page_bytes(PageSize s) { return s == PageSize::big ? BIG_PAGE : SMALL_PAGE; }
constexpr const Level& table_level(PageSize s) { return s == PageSize::big ? LPT : SPT; }

inline constexpr unsigned TABLE_ALIGN_SHIFT = 12;  // tables are 4 KiB aligned
inline constexpr uint64_t TABLE_ALIGN = uint64_t{1} << TABLE_ALIGN_SHIFT;

// ---------------------------------------------------------------- PDE (8 bytes)
namespace pde {
using LptTarget = Field64<1, 0>;     // PdeTarget of the big-page table
using LptSize = Field64<3, 2>;       // must be 0 (full coverage)
using LptAddr = Field64<31, 4>;      // big-page table address >> 12
using SptTarget = Field64<33, 32>;   // PdeTarget of the small-page table
using SptVol = Bit64<34>;
using LptVol = Bit64<35>;
using SptAddr = Field64<63, 36>;     // small-page table address >> 12

constexpr uint64_t make(uint64_t spt_addr, uint64_t lpt_addr) {
  uint64_t v = 0;
  if (spt_addr) v |= SptTarget::make(uint64_t(PdeTarget::vram)) | SptAddr::make(spt_addr >> TABLE_ALIGN_SHIFT);
  if (lpt_addr) v |= LptTarget::make(uint64_t(PdeTarget::vram)) | LptAddr::make(lpt_addr >> TABLE_ALIGN_SHIFT);
  return v;
}
constexpr uint64_t spt_addr(uint64_t v) { return SptAddr::get(v) << TABLE_ALIGN_SHIFT; }
constexpr uint64_t lpt_addr(uint64_t v) { return LptAddr::get(v) << TABLE_ALIGN_SHIFT; }
}  // namespace pde

// ---------------------------------------------------------------- PTE (8 bytes)
namespace pte {
using Valid = Bit64<0>;
using Priv = Bit64<1>;               // supervisor only: user accesses fault (page_system_only)
using ReadOnly = Bit64<2>;
using Encrypted = Bit64<3>;
using Addr = Field64<31, 4>;         // page frame address >> 12
using Vol = Bit64<32>;
using Aperture = Field64<34, 33>;    // Target
using Kind = Field64<43, 36>;
using Comptag = Field64<60, 44>;
inline constexpr unsigned ADDR_SHIFT = 12;

inline constexpr uint64_t KIND_PITCH = 0x00;
inline constexpr uint64_t KIND_GENERIC_BLOCKLINEAR = 0xfe;
constexpr bool kind_supported(uint64_t kind) { return kind == KIND_PITCH || kind == KIND_GENERIC_BLOCKLINEAR; }

struct Flags {
  bool read_only = false;
  bool priv = false;
  uint64_t kind = KIND_PITCH;
};

constexpr uint64_t make(uint64_t phys, Flags f = {}) {
  return Valid::make(1) | Priv::make(f.priv) | ReadOnly::make(f.read_only) |
         Addr::make(phys >> ADDR_SHIFT) | Aperture::make(uint64_t(Target::vram)) | Kind::make(f.kind);
}
constexpr uint64_t addr(uint64_t v) { return Addr::get(v) << ADDR_SHIFT; }
}  // namespace pte

// ---------------------------------------------------------------- GPFIFO entries (8 bytes)
namespace gp {
// dword 0
using Fetch = Bit<0>;
using NoContextSwitch = Bit<1>;
using GetLo = Field<31, 2>;           // push-buffer VA bits 31:2
// dword 1
using GetHi = Field<7, 0>;            // push-buffer VA bits 39:32
using Priv = Bit<8>;
using Level = Bit<9>;                 // 0 = main, 1 = subroutine
using Length = Field<30, 10>;         // dwords; 0 = control entry
using Sync = Bit<31>;
using Opcode = Field<7, 0>;           // control entries
enum class ControlOp : uint32_t { nop = 0, illegal = 1, gp_crc = 2, pb_crc = 3 };

struct Entry {
  uint32_t w0;
  uint32_t w1;
};
constexpr Entry make(uint64_t pb_va, uint32_t dwords) {
  return Entry{GetLo::make(lo32(pb_va) >> 2), GetHi::make(hi32(pb_va)) | Length::make(dwords)};
}
constexpr uint64_t va(Entry e) { return (uint64_t{GetHi::get(e.w1)} << 32) | (uint64_t{GetLo::get(e.w0)} << 2); }
}  // namespace gp

// ---------------------------------------------------------------- push-buffer method headers
namespace mthd {
using Opcode = Field<31, 29>;
using Count = Field<28, 16>;          // data words (or immediate data)
using Subch = Field<15, 13>;
using Addr = Field<11, 0>;            // method byte address >> 2
// legacy (opcode 0 and 2): count 28:18, subch 15:13, method 12:2 (bytes)
using LegacyCount = Field<28, 18>;
using LegacyTert = Field<17, 16>;
using LegacyAddr = Field<12, 2>;

enum class Op : uint32_t {
  legacy_inc = 0,      // also the NOP word (0) and the subdevice-mask forms
  inc = 1,
  legacy_non_inc = 2,
  non_inc = 3,
  immediate = 4,
  one_inc = 5,
  reserved = 6,        // ILLEGAL_CMD
  end_segment = 7,
};

constexpr uint32_t header(Op op, unsigned subch, uint32_t method_bytes, uint32_t count) {
  return Opcode::make(uint32_t(op)) | Count::make(count) | Subch::make(subch) | Addr::make(method_bytes >> 2);
}
constexpr uint32_t inc(unsigned subch, uint32_t m, uint32_t n) { return header(Op::inc, subch, m, n); }
constexpr uint32_t non_inc(unsigned subch, uint32_t m, uint32_t n) { return header(Op::non_inc, subch, m, n); }
constexpr uint32_t one_inc(unsigned subch, uint32_t m, uint32_t n) { return header(Op::one_inc, subch, m, n); }
constexpr uint32_t immediate(unsigned subch, uint32_t m, uint32_t data) { return header(Op::immediate, subch, m, data); }
inline constexpr uint32_t IMMEDIATE_MAX = Count::max;
inline constexpr uint32_t HOST_METHOD_END = 0x100;  // methods below this go to the host (906F)
}  // namespace mthd

}  // namespace vgpu::fmt
