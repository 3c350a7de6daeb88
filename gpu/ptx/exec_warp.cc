// SPDX-License-Identifier: GPL-2.0-or-later
// Warp-level instructions: shfl.sync, vote.sync, activemask, and the
// instructions that are no-ops in a single-threaded model (membar, fence,
// bar.warp.sync: a warp's lanes already run in lockstep).
#include "gpu/ptx/exec.h"

namespace vgpu::ptx::exec {
namespace {

bool shfl(Ctx& c, const Instr& in, uint32_t m) {
  Lanes a;
  std::memcpy(a.data(), c.src(in.src[0], 0), sizeof a);  // d may be a
  const uint64_t* b = c.src(in.src[1], 1);
  const uint64_t* cc = c.src(in.src[2], 2);
  uint64_t* d = c.dst(in.dst[0], 4);
  uint64_t* p = in.dst[1].kind == Operand::Kind::reg ? c.reg(in.dst[1].reg) : nullptr;
  auto mode = static_cast<ShflMode>(in.sub);
  for_lanes(m, [&](uint32_t l) {
    uint32_t bv = b[l] & 31, cv = static_cast<uint32_t>(cc[l]);
    uint32_t segmask = (cv >> 8) & 31;
    uint32_t max_lane = (l & segmask) | (cv & ~segmask & 31), min_lane = l & segmask;
    int32_t j = 0;
    bool ok = false;
    switch (mode) {
      case ShflMode::up:
        j = static_cast<int32_t>(l) - static_cast<int32_t>(bv);
        ok = j >= static_cast<int32_t>(max_lane);
        break;
      case ShflMode::down:
        j = static_cast<int32_t>(l + bv);
        ok = j <= static_cast<int32_t>(max_lane);
        break;
      case ShflMode::bfly:
        j = static_cast<int32_t>(l ^ bv);
        ok = j <= static_cast<int32_t>(max_lane);
        break;
      case ShflMode::idx:
        j = static_cast<int32_t>(min_lane | (bv & ~segmask));
        ok = j <= static_cast<int32_t>(max_lane);
        break;
    }
    uint32_t src = ok ? static_cast<uint32_t>(j) & 31 : l;
    d[l] = a[src] & 0xffffffffu;
    if (p) p[l] = ok;
  });
  return true;
}

bool vote(Ctx& c, const Instr& in, uint32_t m) {
  const uint64_t* p = c.src(in.src[0], 0);
  const uint64_t* mm = c.src(in.src[1], 1);
  uint32_t first = static_cast<uint32_t>(std::countr_zero(m));
  uint32_t members = m & static_cast<uint32_t>(mm[first]);
  bool neg = in.src[0].neg;
  uint32_t ballot = 0;
  for_lanes(members, [&](uint32_t l) { ballot |= (((p[l] & 1) != 0) != neg) ? 1u << l : 0; });
  uint64_t r = 0;
  switch (static_cast<VoteMode>(in.sub)) {
    case VoteMode::all: r = ballot == members; break;
    case VoteMode::any: r = ballot != 0; break;
    case VoteMode::uni: r = ballot == 0 || ballot == members; break;
    case VoteMode::ballot: r = ballot; break;
  }
  uint64_t* d = c.dst(in.dst[0], 4);
  for_lanes(m, [&](uint32_t l) { d[l] = r; });
  return true;
}

bool activemask(Ctx& c, const Instr& in, uint32_t m) {
  uint64_t* d = c.dst(in.dst[0], 4);
  for_lanes(m, [&](uint32_t l) { d[l] = m; });
  return true;
}

bool nop(Ctx&, const Instr&, uint32_t) { return true; }

}  // namespace

ExecFn warp_executor(Op op) {
  switch (op) {
    case Op::shfl: return shfl;
    case Op::vote: return vote;
    case Op::activemask: return activemask;
    case Op::nop: return nop;
    default: return nullptr;
  }
}

}  // namespace vgpu::ptx::exec
