// SPDX-License-Identifier: GPL-2.0-or-later
// The warp fast path (docs/ptx.md, "Fast path"): at a launch's start the
// common instruction forms of the program are decoded a second time into
// FastOps, each a kernel over all 32 lanes with its operands resolved
// (register numbers, immediates as 32-lane splats, parameters and symbol
// addresses folded into constants). A full active warp runs a FastOp
// instead of the executor table; the kernels are plain 0..31 loops, built
// twice (AVX2+FMA and the x86-64 baseline) and chosen at run time. A
// FastOp gives exactly the executor's bits, or declines (a load or store
// that is not coalesced, on two pages, misaligned or out of range): then
// the executor runs the instruction, with its error reporting.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/ptx/exec.h"

namespace vgpu::ptx::exec {

enum class FastKind : uint8_t {
  none,  // not a fast form: the executor table runs it
  fill,  // d = imm (an immediate, a symbol address, an entry parameter)
  and_,  // d = a & b & mask (mov, cvta to/from global, cvt to a narrower unsigned type: b = all ones)
  or_,   // d = (a | b) & mask
  xor_,  // d = (a ^ b) & mask
  add,   // d = (a + b) & mask
  sub,   // d = (a - b) & mask
  mul,   // d = (a * b) & mask (mul.lo)
  mul_wide_s32,
  mul_wide_u32,
  mul32,    // mul.lo at 32 bits: d = (u32(a) * u32(b)) & mask
  mad,      // d = (a * b + x) & mask (mad.lo)
  mad32,    // mad.lo at 32 bits: d = (u32(a) * u32(b) + x) & mask
  shl,      // d = (a << imm) & mask, imm below the width
  shr_u,    // d = (a & mask) >> imm
  shr_s32,  // d = (s32(a) >> imm) & mask
  shr_s64,
  sext32,    // d = s64(s32(a)) & mask (cvt from .s32)
  selp,      // d = (x & 1) ^ imm ? a : b
  setp_s32,  // d = cmp(a, b), e = !d (sub: Cmp)
  setp_u32,
  setp_s64,
  setp_u64,
  setp_f32,
  add_f32,  // .rn, no .ftz/.sat
  sub_f32,
  mul_f32,
  fma_f32,
  add_f64,
  mul_f64,
  fma_f64,
  sreg,       // d = special register sub, & mask (one that is not constant for the launch and not a clock)
  tid,        // d = %tid of dimension sub, & mask
  ctaid,      // d = the block's %ctaid of dimension sub, & mask
  ld_global,  // scalar ld/st of 4 or 8 bytes (imm: the address offset, sub: bytes, mask: 1 = sign-extend)
  st_global,
  ld_shared,
  st_shared,
  // The kinds a chain runs itself, last (it tests `chain >= nop` once per op):
  nop,    // d already holds its value (FastProgram::consts); imm: the nops that follow in a row, this one included
  bra,    // to imm when every lane's guard (register x, sub: 1 = negated; kNoReg: none) holds, on when none does
  exit_,  // the warp's threads exit: `exit` (sub 1), or `ret` at call depth 0 (sub 0; deeper, the executor runs it)
};

// While decoded, operand `a`, `b` or `x` is register r (r < kSplatBit) or
// the 32-lane splat FastProgram::splats[r - kSplatBit]. Every frame keeps
// the splats after its Program::max_regs registers (splat s as register
// max_regs + s; interpreter.cc copies them in when it makes the frame),
// and build_fast turns every register field (d, e, a, b, x; kNoReg stays)
// into that register's lane offset (times kLaneScale), so that a kernel
// adds it to the frame's base with no multiply and no splat test.
constexpr uint32_t kSplatBit = 0x8000'0000u;
constexpr uint32_t kLaneScale = kWarpSize;

struct FastOp {
  FastKind kind = FastKind::none;
  uint8_t sub = 0;
  StateSpace space = StateSpace::generic;
  FastKind chain = FastKind::none;  // `kind` when it runs inside a chain (unguarded, or a bra), else none
  uint32_t d = 0, e = kNoReg;       // destinations (e: setp's second)
  uint32_t a = 0, b = 0, x = 0;
  uint64_t imm = 0, mask = ~0ull;
};

struct FastProgram {
  std::vector<FastOp> ops;       // one per Program::code instruction
  std::vector<uint64_t> splats;  // splat s: its 32 lanes at s * kLaneScale (each frame's copy: above)
  // The registers whose only writer in the program gives one value for the
  // whole launch (a parameter, an immediate, %ntid, a mov or cvta of such a
  // register, ...): every frame starts with that value in all lanes, so the
  // writer's FastOp is a nop; the executor, when it runs the writer, writes
  // the same value again. Likewise a register whose only writer reads %tid:
  // a warp's lanes have the same %tid in every block; and one whose only
  // writer reads %ctaid holds the block's (block_consts).
  std::vector<ConstReg> consts;
  // Those of consts that hold the block's %ctaid (ConstReg::ctaid_dim), which begin_block rewrites per block.
  std::vector<ConstReg> block_consts;
};

// The fast forms of `prog` for one launch (its parameters and data segment).
FastProgram build_fast(const Program& prog, const LaunchConfig& launch);

// A FastFn runs the chain of FastOps from pc over all 32 lanes of the
// running warp: at most n of them, one after another, while they chain
// (FastOp::chain), following a bra that every lane takes or none does.
// It stops before an op that declines (nothing of it written; the
// executor runs it), a bra that splits the warp, or an op that does not
// chain; it leaves pc there, adds what ran to the warp and thread
// instruction counters, and returns how many ran. An exit_ ends the chain
// and the warp (Warp::exited, Block::exited_threads, mask 0), pc left at
// it, as the executor's exit or ret would. Running a chain in one
// call keeps the dispatch loop's per-instruction work (guard, counters,
// poll, the indirect call) out of its instructions. A FastOneFn runs one
// op (a guarded one whose guard holds in every lane). The AVX-512 or AVX2
// build when the CPU has it (fast_isa_limit).
FastFn fast_runner() noexcept;
FastFn declining_runner() noexcept;  // runs nothing (ExecControl::fast_path off)
FastOneFn fast_one_runner() noexcept;
FastOneFn declining_one_runner() noexcept;
// A PredFn gives the lanes whose predicate register has bit 0 set.
PredFn pred_runner() noexcept;
// The best build the runners above may pick (tests: each build against the
// executor table): the CPU's best (AVX-512 where it has AVX-512 F, VL, BW
// and DQ, else AVX2 where it has AVX2 and FMA), at most AVX2, or the
// x86-64 baseline even on a CPU with more.
enum class FastIsa : uint8_t { best, avx2, baseline };
FastIsa& fast_isa_limit() noexcept;

}  // namespace vgpu::ptx::exec
