// SPDX-License-Identifier: GPL-2.0-or-later
// In-memory formats of the vgpu device (docs/spec/vgpu.md): page-table
// geometry and entries, instance blocks and RAMFC, runlist and
// channel-table entries, GPFIFO entries and push-buffer method headers.
// One codec per format, next to its layout: the model, the mediator, the
// driver and the tests all encode and decode through these. Codecs of
// multi-word formats take the caller's accessors (rd(offset) -> uint32_t,
// wr(offset, value)), since each layer reaches memory its own way (VRAM, a
// guest partition, the driver's instance memory, PRAMIN). Where a format
// has validity rules, they are one list here; each layer supplies only its
// own bound (the model: VRAM; the mediator: the VM's partition).
#pragma once

#include <array>
#include <cstdio>
#include <cstdint>
#include <optional>
#include <string>

#include "vgpu/bits.h"
#include "vgpu/regs.h"

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
  unsigned va_lo;    // lowest VA bit indexed by this level
  unsigned va_bits;  // VA bits indexed by this level
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
using LptTarget = Field64<1, 0>;    // PdeTarget of the big-page table
using LptSize = Field64<3, 2>;      // must be 0 (full coverage)
using LptAddr = Field64<31, 4>;     // big-page table address >> 12
using SptTarget = Field64<33, 32>;  // PdeTarget of the small-page table
using SptVol = Bit64<34>;
using LptVol = Bit64<35>;
using SptAddr = Field64<63, 36>;  // small-page table address >> 12

constexpr uint64_t make(uint64_t spt_addr, uint64_t lpt_addr) {
  uint64_t v = 0;
  if (spt_addr) v |= SptTarget::make(uint64_t(PdeTarget::vram)) | SptAddr::make(spt_addr >> TABLE_ALIGN_SHIFT);
  if (lpt_addr) v |= LptTarget::make(uint64_t(PdeTarget::vram)) | LptAddr::make(lpt_addr >> TABLE_ALIGN_SHIFT);
  return v;
}
constexpr uint64_t spt_addr(uint64_t v) { return SptAddr::get(v) << TABLE_ALIGN_SHIFT; }
constexpr uint64_t lpt_addr(uint64_t v) { return LptAddr::get(v) << TABLE_ALIGN_SHIFT; }

// One page table under a PDE, as the PDE describes it.
struct TableRef {
  PdeTarget target;
  uint64_t addr;
};
struct Decoded {
  TableRef big;
  TableRef small;
  constexpr bool empty() const { return big.target == PdeTarget::none && small.target == PdeTarget::none; }
};
constexpr Decoded decode(uint64_t v) {
  return Decoded{{static_cast<PdeTarget>(LptTarget::get(v)), lpt_addr(v)},
                 {static_cast<PdeTarget>(SptTarget::get(v)), spt_addr(v)}};
}
}  // namespace pde

// ---------------------------------------------------------------- PTE (8 bytes)
namespace pte {
using Valid = Bit64<0>;
using Priv = Bit64<1>;  // supervisor only: user accesses fault (page_system_only)
using ReadOnly = Bit64<2>;
using Encrypted = Bit64<3>;
using Addr = Field64<31, 4>;  // page frame address >> 12
using Vol = Bit64<32>;
using Aperture = Field64<34, 33>;  // Target
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
  Target aperture = Target::vram;  // sysmem: phys is a bus address (spec §4.5)
};

constexpr uint64_t make(uint64_t phys, Flags f = {}) {
  return Valid::make(1) | Priv::make(f.priv) | ReadOnly::make(f.read_only) | Addr::make(phys >> ADDR_SHIFT) |
         Aperture::make(uint64_t(f.aperture)) | Kind::make(f.kind);
}
constexpr uint64_t addr(uint64_t v) { return Addr::get(v) << ADDR_SHIFT; }
// A page of system memory at bus address `bus` (docs/spec/vgpu.md §5.3).
constexpr uint64_t make_sysmem(uint64_t bus, Flags f = {}, Target t = Target::sysmem_noncoherent) {
  f.aperture = t;
  return make(bus, f);
}
constexpr bool in_sysmem(Target t) { return t == Target::sysmem_coherent || t == Target::sysmem_noncoherent; }

struct Decoded {
  bool valid;
  bool priv;
  bool read_only;
  Target aperture;
  uint64_t addr;
  uint64_t kind;
};
constexpr Decoded decode(uint64_t v) {
  return Decoded{
      Valid::get(v) != 0, Priv::get(v) != 0, ReadOnly::get(v) != 0, static_cast<Target>(Aperture::get(v)), addr(v),
      Kind::get(v)};
}
}  // namespace pte

// ---------------------------------------------------------------- instance block (regs::inst; spec 6.1)
// The address-space part, shared by channels and the BAR1/BAR3 spaces.
struct AddressSpace {
  uint32_t pdb_target = uint32_t(Target::vram);  // regs::inst::PdbTarget (a Target)
  uint64_t pdb = 0;                              // page directory address
  uint64_t limit = 0;                            // last valid VA byte
};

template <typename Rd>
constexpr AddressSpace decode_address_space(Rd&& rd) {
  namespace in = regs::inst;
  const uint32_t lo = rd(in::PDB_LO);
  return AddressSpace{in::PdbTarget::get(lo),
                      (uint64_t{in::PdbAddrHi::get(rd(in::PDB_HI))} << 32) | (lo & in::PdbAddrLo::mask),
                      join64(rd(in::LIMIT_HI), rd(in::LIMIT_LO))};
}

template <typename Wr>
constexpr void encode_address_space(const AddressSpace& a, Wr&& wr) {
  namespace in = regs::inst;
  wr(in::PDB_LO, in::PdbTarget::make(a.pdb_target) | (lo32(a.pdb) & in::PdbAddrLo::mask));
  wr(in::PDB_HI, in::PdbAddrHi::make(hi32(a.pdb)));
  wr(in::LIMIT_LO, lo32(a.limit));
  wr(in::LIMIT_HI, hi32(a.limit));
}

// ---------------------------------------------------------------- RAMFC (regs::ramfc; spec 6.2)
struct Ramfc {
  uint32_t signature = regs::ramfc::SIGNATURE_VALUE;
  uint64_t gp_base = 0;  // GPFIFO ring VA
  uint32_t limit2 = 0;   // log2 of the ring's entries
  uint32_t userd_target = uint32_t(Target::vram);
  uint64_t userd = 0;  // USERD page address (bits 11:0 ignored)
  uint32_t gp_get = 0;
  uint32_t gp_put = 0;
  uint32_t acquire = 0;  // semaphore acquire timeout setting
  constexpr uint32_t ring_entries() const { return uint32_t{1} << limit2; }
};

template <typename Rd>
constexpr Ramfc decode_ramfc(Rd&& rd) {
  namespace f = regs::ramfc;
  const uint32_t userd_lo = rd(f::USERD_LO);
  const uint32_t gp_hi = rd(f::GP_BASE_HI);
  Ramfc r;
  r.signature = f::SignatureValue::get(rd(f::SIGNATURE));
  r.gp_base = (uint64_t{f::GpBaseHiAddr::get(gp_hi)} << 32) | rd(f::GP_BASE);
  r.limit2 = f::GpBaseHiLimit2::get(gp_hi);
  r.userd_target = f::UserdTarget::get(userd_lo);
  r.userd = join64(rd(f::USERD_HI), userd_lo & f::UserdAddrLo::mask);
  r.gp_get = rd(f::GP_GET);
  r.gp_put = rd(f::GP_PUT);
  r.acquire = rd(f::ACQUIRE);
  return r;
}

// Writes every field of the struct; the rest of the RAMFC is left alone.
template <typename Wr>
constexpr void encode_ramfc(const Ramfc& r, Wr&& wr) {
  namespace f = regs::ramfc;
  wr(f::GP_PUT, r.gp_put);
  wr(f::USERD_LO, (lo32(r.userd) & f::UserdAddrLo::mask) | f::UserdTarget::make(r.userd_target));
  wr(f::USERD_HI, hi32(r.userd));
  wr(f::SIGNATURE, f::SignatureValue::make(r.signature));
  wr(f::GP_GET, r.gp_get);
  wr(f::ACQUIRE, r.acquire);
  wr(f::GP_BASE, lo32(r.gp_base));
  wr(f::GP_BASE_HI, f::GpBaseHiAddr::make(hi32(r.gp_base)) | f::GpBaseHiLimit2::make(r.limit2));
}

// ---------------------------------------------------------------- a channel's instance block
struct ChannelInstance {
  AddressSpace space;
  Ramfc ramfc;
};

template <typename Rd>
constexpr ChannelInstance decode_channel_instance(Rd&& rd) {
  return ChannelInstance{decode_address_space(rd), decode_ramfc(rd)};
}

// The first rule of spec 6.2 a channel's instance block at `at` breaks:
// what, and the offending value. `inside(addr, bytes)` is the checking
// layer's bound on memory (the model: VRAM; the mediator: the partition).
struct InstanceViolation {
  const char* what;
  uint64_t value;
  bool bound = false;  // a bound rule: the layer names its memory after `what`
  std::string message(const char* memory) const;
};
template <typename Inside>
constexpr std::optional<InstanceViolation> check_channel_instance(uint64_t at, const ChannelInstance& c,
                                                                  Inside&& inside) {
  const Ramfc& r = c.ramfc;
  const struct {
    bool ok;
    InstanceViolation v;
  } rules[] = {
      {at % regs::inst::ALIGN == 0 && inside(at, regs::inst::SIZE), {"not an aligned block inside", at, true}},
      {r.signature == regs::ramfc::SIGNATURE_VALUE, {"RAMFC signature", r.signature}},
      {r.gp_base % regs::ramfc::GP_ENTRY_BYTES == 0, {"GPFIFO ring not 8-byte aligned", r.gp_base}},
      {r.limit2 <= regs::ramfc::MAX_LIMIT2, {"GPFIFO ring too large (log2 entries)", r.limit2}},
      {c.space.pdb_target == uint32_t(Target::vram), {"page directory not in VRAM", c.space.pdb_target}},
      {inside(c.space.pdb, PD.table_bytes()), {"page directory outside", c.space.pdb, true}},
      {c.space.limit != 0 && c.space.limit < VA_LIMIT, {"address-space limit out of range", c.space.limit}},
      {r.userd_target == uint32_t(Target::vram), {"USERD not in VRAM", r.userd_target}},
      {inside(r.userd, regs::userd::SIZE), {"USERD page outside", r.userd, true}},
  };
  for (const auto& rule : rules)
    if (!rule.ok) return rule.v;
  return std::nullopt;
}

// "what[ memory] (value)", the value in hex.
inline std::string InstanceViolation::message(const char* memory) const {
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(value));
  return std::string(what) + (bound ? std::string(" ") + memory : std::string()) + " (" + hex + ")";
}

// ---------------------------------------------------------------- channel-table entry (PFIFO CHAN_INST)
struct ChanInst {
  bool valid = false;
  uint32_t target = uint32_t(Target::vram);
  uint64_t inst = 0;  // instance block address
};
constexpr uint32_t encode_chan_inst(const ChanInst& c) {
  namespace pf = regs::pfifo;
  return pf::ChanInstValid::make(c.valid) | pf::ChanInstPoll::make(c.valid) | pf::ChanInstTarget::make(c.target) |
         pf::ChanInstAddr::make(static_cast<uint32_t>(c.inst >> pf::CHAN_INST_SHIFT));
}
constexpr ChanInst decode_chan_inst(uint32_t v) {
  namespace pf = regs::pfifo;
  return ChanInst{pf::ChanInstValid::get(v) != 0, pf::ChanInstTarget::get(v),
                  uint64_t{pf::ChanInstAddr::get(v)} << pf::CHAN_INST_SHIFT};
}

// ---------------------------------------------------------------- runlist entry (regs::runlist; spec 6.5)
constexpr std::array<uint32_t, 2> encode_runlist_entry(uint32_t chid) {
  return {regs::runlist::EntryChid::make(chid), regs::runlist::ENTRY_FLAGS_VALUE};
}
// The channel a runlist entry's first word names; none when the word has
// bits beyond the channel id.
constexpr std::optional<uint32_t> decode_runlist_entry(uint32_t word0) {
  const uint32_t chid = regs::runlist::EntryChid::get(word0);
  if (word0 != chid) return std::nullopt;
  return chid;
}

// ---------------------------------------------------------------- GPFIFO entries (8 bytes)
namespace gp {
// dword 0
using Fetch = Bit<0>;
using NoContextSwitch = Bit<1>;
using GetLo = Field<31, 2>;  // push-buffer VA bits 31:2
// dword 1
using GetHi = Field<7, 0>;  // push-buffer VA bits 39:32
using Priv = Bit<8>;
using Level = Bit<9>;          // 0 = main, 1 = subroutine
using Length = Field<30, 10>;  // dwords; 0 = control entry
using Sync = Bit<31>;
using Opcode = Field<7, 0>;  // control entries
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
using Count = Field<28, 16>;  // data words (or immediate data)
using Subch = Field<15, 13>;
using Addr = Field<11, 0>;  // method byte address >> 2
// legacy (opcode 0 and 2): count 28:18, subch 15:13, method 12:2 (bytes)
using LegacyCount = Field<28, 18>;
using LegacyTert = Field<17, 16>;
using LegacyAddr = Field<12, 2>;

enum class Op : uint32_t {
  legacy_inc = 0,  // also the NOP word (0) and the subdevice-mask forms
  inc = 1,
  legacy_non_inc = 2,
  non_inc = 3,
  immediate = 4,
  one_inc = 5,
  reserved = 6,  // ILLEGAL_CMD
  end_segment = 7,
};

constexpr uint32_t header(Op op, unsigned subch, uint32_t method_bytes, uint32_t count) {
  return Opcode::make(uint32_t(op)) | Count::make(count) | Subch::make(subch) | Addr::make(method_bytes >> 2);
}
constexpr uint32_t inc(unsigned subch, uint32_t m, uint32_t n) { return header(Op::inc, subch, m, n); }
constexpr uint32_t non_inc(unsigned subch, uint32_t m, uint32_t n) { return header(Op::non_inc, subch, m, n); }
constexpr uint32_t one_inc(unsigned subch, uint32_t m, uint32_t n) { return header(Op::one_inc, subch, m, n); }
constexpr uint32_t immediate(unsigned subch, uint32_t m, uint32_t data) {
  return header(Op::immediate, subch, m, data);
}
inline constexpr uint32_t IMMEDIATE_MAX = Count::max;
inline constexpr uint32_t HOST_METHOD_END = 0x100;  // methods below this go to the host (906F)
}  // namespace mthd

}  // namespace vgpu::fmt
