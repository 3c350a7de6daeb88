// SPDX-License-Identifier: GPL-2.0-or-later
// Operand values the executors share (exec.h's Ctx): immediates, special
// registers and symbol addresses filled into a 32-lane array.
#include <algorithm>

#include "gpu/ptx/exec.h"

namespace vgpu::ptx::exec {

const uint64_t* Ctx::src_slow(const Operand& o, int slot) {
  if (o.kind == Operand::Kind::reg) return reg(o.reg);
  auto i = static_cast<size_t>(slot);
  bool was_imm = tmp_is_imm[i];
  tmp_is_imm[i] = false;
  switch (o.kind) {
    case Operand::Kind::imm:
      if (!was_imm || tmp_imm[i] != o.imm) tmp[slot].fill(o.imm);
      tmp_is_imm[i] = true;
      tmp_imm[i] = o.imm;
      break;
    case Operand::Kind::sreg: sreg_lanes(static_cast<SReg>(o.reg), tmp[slot]); break;
    case Operand::Kind::addr:
      if (o.base == AddrBase::local)
        for (uint32_t l = 0; l < kWarpSize; ++l) tmp[slot][l] = symbol_address(o, l);
      else
        tmp[slot].fill(symbol_address(o, 0));  // the same in every lane
      break;
    default: tmp[slot].fill(0); break;
  }
  return tmp[slot].data();
}

// A special register's value in every lane: one switch for the warp.
void Ctx::sreg_lanes(SReg s, Lanes& out) const {
  const Warp& w = *warp;
  switch (s) {
    case SReg::tid_x:
    case SReg::tid_y:
    case SReg::tid_z: {
      size_t first = size_t{kWarpSize} * (static_cast<size_t>(s) - static_cast<size_t>(SReg::tid_x));
      std::copy_n(w.tid.begin() + static_cast<std::ptrdiff_t>(first), kWarpSize, out.begin());
      return;
    }
    case SReg::laneid:
    case SReg::lanemask_eq:
    case SReg::lanemask_lt:
    case SReg::lanemask_le:
    case SReg::lanemask_gt:
    case SReg::lanemask_ge:
      for (uint32_t l = 0; l < kWarpSize; ++l) out[l] = sreg(s, l);
      return;
    default: out.fill(sreg(s, 0)); return;  // the same in every lane
  }
}

uint64_t Ctx::sreg(SReg s, uint32_t lane) const {
  const Warp& w = *warp;
  const Dim3& g = launch.grid;
  const Dim3& b = launch.block;
  switch (s) {
    case SReg::tid_x: return w.tid[lane];
    case SReg::tid_y: return w.tid[kWarpSize + lane];
    case SReg::tid_z: return w.tid[2 * kWarpSize + lane];
    case SReg::ntid_x: return b.x;
    case SReg::ntid_y: return b.y;
    case SReg::ntid_z: return b.z;
    case SReg::ctaid_x: return block->ctaid[0];
    case SReg::ctaid_y: return block->ctaid[1];
    case SReg::ctaid_z: return block->ctaid[2];
    case SReg::nctaid_x: return g.x;
    case SReg::nctaid_y: return g.y;
    case SReg::nctaid_z: return g.z;
    case SReg::laneid: return lane;
    case SReg::warpid: return w.index;
    case SReg::nwarpid: return block->warps.size();
    case SReg::smid:
    case SReg::gridid: return 0;
    case SReg::nsmid: return 1;
    case SReg::clock: return stats.warp_instructions & 0xffffffffu;
    case SReg::clock64:
    case SReg::globaltimer: return stats.warp_instructions;
    case SReg::lanemask_eq: return 1ull << lane;
    case SReg::lanemask_lt: return (1ull << lane) - 1;
    case SReg::lanemask_le: return (2ull << lane) - 1;
    case SReg::lanemask_gt: return ~((2ull << lane) - 1) & kFull;
    case SReg::lanemask_ge: return ~((1ull << lane) - 1) & kFull;
  }
  return 0;
}

uint64_t Ctx::symbol_address(const Operand& o, uint32_t lane) const {
  switch (o.base) {
    case AddrBase::data: return launch.data_va + o.imm;
    case AddrBase::local: return warp->frames[warp->cur_depth].local_base[lane] + o.imm;
    case AddrBase::fparam: return kFrameParamBase + o.imm;
    default: return o.imm;
  }
}

bool writes_shared(const Program& prog, uint32_t entry) {
  std::vector<bool> seen(prog.functions.size(), false);
  std::vector<uint32_t> todo{entry};
  seen[entry] = true;
  while (!todo.empty()) {
    const Function& f = prog.functions[todo.back()];
    todo.pop_back();
    for (uint32_t i = f.first; i < f.end && i < prog.code.size(); ++i) {
      const Instr& in = prog.code[i];
      const bool store = in.op == Op::st || in.op == Op::atom || in.op == Op::red;
      if (store && (in.space == StateSpace::shared || in.space == StateSpace::generic)) return true;
      if (in.op != Op::call || in.target >= prog.calls.size()) continue;
      const uint32_t callee = prog.calls[in.target].callee;
      if (callee < seen.size() && !seen[callee]) {
        seen[callee] = true;
        todo.push_back(callee);
      }
    }
  }
  return false;
}

}  // namespace vgpu::ptx::exec

namespace vgpu::ptx {

const char* exec_status_name(ExecStatus s) {
  switch (s) {
    case ExecStatus::ok: return "ok";
    case ExecStatus::mmu_fault: return "mmu_fault";
    case ExecStatus::misaligned: return "misaligned";
    case ExecStatus::trap: return "trap";
    case ExecStatus::timeout: return "timeout";
    case ExecStatus::resource: return "resource";
    case ExecStatus::bad_launch: return "bad_launch";
    case ExecStatus::illegal: return "illegal";
  }
  return "?";
}

}  // namespace vgpu::ptx
