// SPDX-License-Identifier: GPL-2.0-or-later
// The pre-decoded form of a module's functions (docs/ptx.md, "Program"):
// what the parser hands the interpreter. Every operand is resolved at
// parse time: registers are numbered per function, labels are instruction
// indices, symbols are (base, offset) pairs, calls name their callee and
// the parameter bytes to copy. Nothing here is a string the interpreter
// has to read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vgpu::ptx {

enum class Type : uint8_t { none, b8, b16, b32, b64, u8, u16, u32, u64, s8, s16, s32, s64, f32, f64, pred };

constexpr uint32_t type_bytes(Type t) {
  switch (t) {
    case Type::b8:
    case Type::u8:
    case Type::s8: return 1;
    case Type::b16:
    case Type::u16:
    case Type::s16: return 2;
    case Type::b32:
    case Type::u32:
    case Type::s32:
    case Type::f32: return 4;
    case Type::b64:
    case Type::u64:
    case Type::s64:
    case Type::f64: return 8;
    case Type::pred: return 1;
    case Type::none: return 0;
  }
  return 0;
}
constexpr bool is_signed(Type t) { return t == Type::s8 || t == Type::s16 || t == Type::s32 || t == Type::s64; }
constexpr bool is_float(Type t) { return t == Type::f32 || t == Type::f64; }

// Instructions as the interpreter dispatches them (one executor each).
enum class Op : uint8_t {
  add,
  sub,
  mul,
  mad,
  mul24,
  mad24,
  sad,
  div,
  rem,
  abs,
  neg,
  min,
  max,
  and_,
  or_,
  xor_,
  not_,
  cnot,
  shl,
  shr,
  popc,
  clz,
  brev,
  bfe,
  bfi,
  prmt,
  fma,
  rcp,
  sqrt,
  rsqrt,
  ex2,
  lg2,
  sin,
  cos,
  testp,
  copysign,
  cvt,
  cvta,
  mov,
  selp,
  setp,
  set,
  slct,
  bra,
  call,
  ret,
  exit,
  trap,
  ld,
  st,
  atom,
  red,
  bar,
  nop,
  shfl,
  vote,
  activemask,
  count_
};

// State spaces of ld/st/atom/cvta; `generic` is no space qualifier.
enum class StateSpace : uint8_t { generic, global, shared, local, param, constant };

// Where a symbol's address is relative to.
enum class AddrBase : uint8_t {
  none,    // an absolute address (a register or an immediate)
  data,    // module data segment: LaunchConfig::data_va + offset (.global, .const)
  shared,  // the block's shared memory
  local,   // the thread's current frame's .local depot
  kparam,  // the entry's parameter buffer
  fparam,  // the thread's current frame's parameter area (.func params, call-site .param)
};

enum class Round : uint8_t { none, rn, rz, rm, rp, rni, rzi, rmi, rpi };

enum class Cmp : uint8_t { eq, ne, lt, le, gt, ge, lo, ls, hi, hs, equ, neu, ltu, leu, gtu, geu, num, nan };
enum class BoolOp : uint8_t { none, and_, or_, xor_ };
enum class AtomOp : uint8_t { add, min, max, inc, dec, and_, or_, xor_, exch, cas };
enum class ShflMode : uint8_t { up, down, bfly, idx };
enum class VoteMode : uint8_t { all, any, uni, ballot };
enum class MulMode : uint8_t { lo, hi, wide };

// Special registers (%tid.x, ...).
enum class SReg : uint8_t {
  tid_x,
  tid_y,
  tid_z,
  ntid_x,
  ntid_y,
  ntid_z,
  ctaid_x,
  ctaid_y,
  ctaid_z,
  nctaid_x,
  nctaid_y,
  nctaid_z,
  laneid,
  warpid,
  nwarpid,
  smid,
  nsmid,
  gridid,
  clock,
  clock64,
  globaltimer,
  lanemask_eq,
  lanemask_lt,
  lanemask_le,
  lanemask_gt,
  lanemask_ge,
};

// Instruction flags.
enum : uint16_t {
  kFtz = 1u << 0,
  kSat = 1u << 1,
  kApprox = 1u << 2,
  kCarryOut = 1u << 3,  // .cc
  kCarryIn = 1u << 4,   // addc, subc, madc
  kUni = 1u << 5,
  kNegGuard = 1u << 6,  // @!%p
  kToSpace = 1u << 7,   // cvta.to.*
  kSrcNeg = 1u << 8,    // a predicate operand written !%p (setp's c, selp's c)
};

constexpr uint32_t kNoReg = 0xffffffffu;

struct Operand {
  enum class Kind : uint8_t { none, reg, imm, sreg, addr, vec, sink };
  Kind kind = Kind::none;
  AddrBase base = AddrBase::none;  // addr: what `imm` is relative to (besides `reg`)
  uint8_t count = 0;               // vec: elements in regs[]
  bool neg = false;                // !%p
  uint32_t reg = kNoReg;           // reg, sreg (SReg value), addr: base register or kNoReg
  uint64_t imm = 0;                // imm: the bits; addr: the offset (symbol offset + displacement)
  uint32_t regs[4] = {kNoReg, kNoReg, kNoReg, kNoReg};  // vec elements (kNoReg: sink `_`)
};

struct Instr {
  Op op = Op::nop;
  Type type = Type::none;   // the instruction's (destination) type
  Type type2 = Type::none;  // cvt's source type, setp/set's comparison type, ...
  Round rnd = Round::none;
  uint8_t sub = 0;      // Cmp, AtomOp, ShflMode, VoteMode, MulMode
  uint8_t bool_op = 0;  // BoolOp of setp/set
  StateSpace space = StateSpace::generic;
  uint8_t vec = 1;  // ld/st: 1, 2 or 4 elements
  uint16_t flags = 0;
  uint32_t guard = kNoReg;  // predicate register, kNoReg when none
  Operand dst[2];           // setp's second destination, shfl's predicate
  Operand src[4];
  uint32_t target = 0;  // bra: instruction index; call: CallSite index
  uint32_t line = 0;    // PTX source line
};

// One `call`: which function, and the parameter bytes copied between the
// caller's frame (its .param declarations) and the callee's incoming area.
struct CallSite {
  uint32_t callee = 0;  // Program::functions index
  struct Copy {
    uint32_t caller_offset, callee_offset, size;
  };
  std::vector<Copy> args;  // caller -> callee at the call
  std::vector<Copy> rets;  // callee -> caller at the return
};

struct Function {
  std::string name;
  bool is_entry = false;
  bool defined = false;
  uint32_t first = 0, end = 0;  // instructions [first, end) in Program::code
  uint32_t num_regs = 0;
  uint32_t local_bytes = 0;        // the frame's .local depot
  uint32_t param_frame_bytes = 0;  // incoming params + call-site .param declarations
  struct Slot {
    uint32_t offset, size;
  };
  std::vector<Slot> ret_params;  // .func return parameters in the frame
  std::vector<Slot> params;      // .func parameters in the frame
  uint32_t line = 0;
};

struct Program {
  std::vector<Instr> code;
  std::vector<Function> functions;
  std::vector<CallSite> calls;
  std::vector<uint32_t> entry_functions;  // Module::entries() index -> functions index
  uint32_t max_regs = 0;                  // over all functions
  uint32_t max_param_frame = 0;           // over all functions
  uint32_t static_shared_bytes = 0;       // all .shared variables, module and function scope
  uint32_t dynamic_shared_offset = 0;     // where `.extern .shared` arrays begin
};

}  // namespace vgpu::ptx
