// SPDX-License-Identifier: GPL-2.0-or-later
// run_blocks: blocks one after another, a block's warps round-robin, each
// warp's lanes in lockstep under the min-PC policy (docs/ptx.md,
// "Execution model"). Control flow, calls and barriers live here; the
// other instructions are in the executor tables (exec_*.cc).
#include <algorithm>

#include "gpu/ptx/exec.h"
#include "gpu/ptx/exec_fast.h"

namespace vgpu::ptx {
namespace exec {
namespace {

constexpr uint32_t kSlice = 4096;  // warp instructions before the next warp's turn

// The executor of each op, built at load time from the families' switches (no guard to test per use).
const std::array<ExecFn, static_cast<size_t>(Op::count_)> kExecutors = [] {
  std::array<ExecFn, static_cast<size_t>(Op::count_)> t{};
  for (size_t i = 0; i < t.size(); ++i) {
    auto op = static_cast<Op>(i);
    for (auto family : {int_executor, float_executor, data_executor, memory_executor, warp_executor})
      if (!t[i]) t[i] = family(op);
  }
  return t;
}();

// Host bytes of one warp's call frame (registers, the splats after them and parameter areas).
uint64_t frame_bytes(const Ctx& c) {
  return (uint64_t{c.prog.max_regs} * sizeof(uint64_t) + c.param_stride) * kWarpSize +
         c.splats.size() * sizeof(uint64_t);
}

// A new frame of warp w: zeroed registers but the launch's constant ones (FastProgram::consts), the fast path's splats
// after them (exec_fast.h), and parameter areas.
void make_frame(const Ctx& c, const Warp& w, Frame& f) {
  const size_t regs = size_t{c.prog.max_regs} * kWarpSize;
  f.regs.assign(regs + c.splats.size(), 0);
  for (const ConstReg& k : c.consts) {
    uint64_t* r = f.regs.data() + size_t{k.reg} * kWarpSize;
    const uint64_t v = k.ctaid_dim == ConstReg::kNoTid ? k.value : c.block->ctaid[k.ctaid_dim] & k.value;
    for (uint32_t l = 0; l < kWarpSize; ++l)
      r[l] = k.tid_dim == ConstReg::kNoTid ? v : w.tid[k.tid_dim * kWarpSize + l] & k.value;
  }
  std::copy(c.splats.begin(), c.splats.end(), f.regs.begin() + static_cast<ptrdiff_t>(regs));
  f.params.resize(size_t{c.param_stride} * kWarpSize);
}

bool is_control(Op op) {
  return op == Op::bra || op == Op::call || op == Op::ret || op == Op::exit || op == Op::trap || op == Op::bar;
}

// The min-PC policy: the deepest call level first, then the lowest PC;
// the lanes there run together. False when no lane can run.
bool schedule(Warp& w) {
  uint32_t r = w.runnable();
  if (!r) {
    w.mask = 0;
    return false;
  }
  if (r == kFull) {  // converged: every lane at lane 0's place
    uint32_t diff = 0;
    for (uint32_t l = 0; l < kWarpSize; ++l) diff |= (w.pc[l] ^ w.pc[0]) | (w.depth[l] ^ w.depth[0]);
    if (!diff) {
      w.cur_pc = w.pc[0];
      w.cur_depth = w.depth[0];
      w.mask = r;
      return true;
    }
  }
  uint32_t best_depth = 0, best_pc = ~0u, mask = 0;
  for_lanes(r, [&](uint32_t l) {
    uint32_t d = w.depth[l], pc = w.pc[l];
    if (d > best_depth || (d == best_depth && pc < best_pc)) {
      best_depth = d;
      best_pc = pc;
      mask = 0;
    }
    if (d == best_depth && pc == best_pc) mask |= 1u << l;
  });
  w.cur_pc = best_pc;
  w.cur_depth = best_depth;
  w.mask = mask;
  return true;
}

void leave_group(Warp& w, uint32_t lanes, uint32_t pc) {
  for_lanes(lanes, [&](uint32_t l) { w.pc[l] = pc; });
}

bool exec_call(Ctx& c, Warp& w, const Instr& in, uint32_t m) {
  const CallSite& site = c.prog.calls[in.target];
  const Function& callee = c.prog.functions[site.callee];
  uint32_t d = w.cur_depth + 1;
  if (d > c.limits.max_call_depth)
    return c.fail(ExecStatus::resource, in,
                  "call depth over " + std::to_string(c.limits.max_call_depth) + " in '" + callee.name + "'");
  if (w.frames.size() <= d) {
    if (!c.grow(frame_bytes(c), in.line)) return false;
    w.frames.resize(d + 1);
    make_frame(c, w, w.frames[d]);
  }
  Frame& from = w.frames[d - 1];
  Frame& to = w.frames[d];
  bool ok = true;
  uint64_t grown = 0;
  for_lanes(m, [&](uint32_t l) {
    uint32_t base = (w.local_top[l] + 15u) & ~15u;
    uint64_t top = uint64_t{base} + callee.local_bytes;
    if (top > c.limits.max_local_bytes_per_thread) {
      ok = false;
      return;
    }
    if (w.local[l].size() < top) {
      grown += top - w.local[l].size();
      w.local[l].resize(top);
    }
    to.local_base[l] = base;
    to.ret_pc[l] = w.cur_pc + 1;
    to.call_site[l] = in.target;
    w.local_top[l] = static_cast<uint32_t>(top);
    for (auto& a : site.args)
      std::memcpy(&to.params[l * c.param_stride + a.callee_offset], &from.params[l * c.param_stride + a.caller_offset],
                  a.size);
    w.pc[l] = callee.first;
    w.depth[l] = static_cast<uint8_t>(d);
  });
  if (!ok)
    return c.fail(ExecStatus::resource, in,
                  "local memory over " + std::to_string(c.limits.max_local_bytes_per_thread) +
                      " bytes per thread in '" + callee.name + "'");
  return c.grow(grown, in.line);
}

void exec_ret(Ctx& c, Warp& w, uint32_t m) {
  uint32_t d = w.cur_depth;
  if (d == 0) {
    w.exited |= m;
    c.block->exited_threads += lane_count(m);
    return;
  }
  Frame& callee = w.frames[d];
  Frame& caller = w.frames[d - 1];
  for_lanes(m, [&](uint32_t l) {
    const CallSite& site = c.prog.calls[callee.call_site[l]];
    for (auto& r : site.rets)
      std::memcpy(&caller.params[l * c.param_stride + r.caller_offset],
                  &callee.params[l * c.param_stride + r.callee_offset], r.size);
    w.pc[l] = callee.ret_pc[l];
    w.local_top[l] = callee.local_base[l];
    w.depth[l] = static_cast<uint8_t>(d - 1);
  });
}

bool exec_bar(Ctx& c, Warp& w, const Instr& in, uint32_t m) {
  const uint64_t* id = c.src(in.src[0], 0);
  uint32_t first = static_cast<uint32_t>(std::countr_zero(m));
  uint64_t b = id[first];
  if (b >= kBarriers) return c.fail(ExecStatus::illegal, in, "barrier " + std::to_string(b) + " out of range");
  if (in.src[1].kind != Operand::Kind::none) {
    uint64_t n = c.src(in.src[1], 1)[first];
    if (n == 0 || n % kWarpSize != 0 || n > c.block->threads + kWarpSize)
      return c.fail(ExecStatus::illegal, in, "barrier thread count " + std::to_string(n));
    c.block->expected[b] = static_cast<uint32_t>(n);
  }
  for_lanes(m, [&](uint32_t l) { w.bar_id[l] = static_cast<uint8_t>(b); });
  w.waiting |= m;
  c.block->arrived[b] += lane_count(m);
  c.block->with_arrivals |= 1u << b;
  return true;
}

// One control instruction over the group; the lanes' PCs are left in w.pc.
bool exec_control(Ctx& c, Warp& w, const Instr& in, uint32_t group, uint32_t m) {
  w.lanes_moved = true;  // init_warp resets the lanes' places for the next block
  leave_group(w, group & ~m, w.cur_pc + 1);
  if (!m) return true;
  switch (in.op) {
    case Op::bra: leave_group(w, m, in.target); return true;
    case Op::call: return exec_call(c, w, in, m);
    case Op::ret: exec_ret(c, w, m); return true;
    case Op::exit:
      w.exited |= m;
      c.block->exited_threads += lane_count(m);
      return true;
    case Op::trap: return c.fail(ExecStatus::trap, in, "trap");
    case Op::bar: leave_group(w, m, w.cur_pc + 1); return exec_bar(c, w, in, m);
    default: return true;
  }
}

// Whether a resumable run should stop here (ExecControl::yield_after, yield_now).
bool yield_due(const Ctx& c) {
  if (c.control.yield_after && c.stats.warp_instructions - c.run_start >= c.control.yield_after) return true;
  return c.control.yield_now && c.control.yield_now();
}

// False when the launch stops (ctx.error) or yields (ctx.yielded) before `in`.
bool poll(Ctx& c, const Instr& in) {
  if (c.control.keep_going && !c.control.keep_going())
    return c.fail(ExecStatus::timeout, in, "stopped by the launch's control");
  if (yield_due(c)) {
    c.yielded = true;
    return false;
  }
  return true;
}

// A full warp at a chain of fast ops (exec_fast.h) runs as much of it as
// its turn (`left`) and the next poll (`until_poll`, at least 1) allow in
// one call. When an op declines, the executor runs that instruction (no
// poll is due before it). Returns the instructions it ran (0: the warp is
// at a bra that splits it, for the dispatch loop), or -1 on the
// executor's error.
int64_t run_chain(Ctx& c, Warp& w, uint32_t& since, uint32_t& left, uint32_t until_poll) {
  const uint32_t n = std::min(left, until_poll);
  const uint32_t k = c.run_fast(c, w.cur_pc, n);
  since += k;
  left -= k;
  const FastOp& f = c.fast[w.cur_pc];
  if (k == n || !w.mask || f.chain == FastKind::none || f.chain >= FastKind::bra) return k;
  const Instr& in = c.prog.code[w.cur_pc];  // declined
  ++since;
  --left;
  c.stats.warp_instructions++;
  c.stats.thread_instructions += kWarpSize;
  if (!kExecutors[static_cast<size_t>(in.op)](c, in, kFull)) return -1;
  w.cur_pc++;
  return k + 1;
}

// Runs warp w until it waits, exits or used its turn (Block::turn_left),
// polling every poll_every (at least 1) warp instructions.
// False on an error or a yield; a yield leaves the warp before an
// instruction it has not begun, so the next run starts with it.
bool run_warp(Ctx& c, Warp& w, uint32_t poll_every) {
  const auto& table = kExecutors;
  const Instr* code = c.prog.code.data();
  Block& blk = *c.block;
  c.warp = &w;
  c.regs = w.frames[w.cur_depth].regs.data();
  // The counters in locals while the warp runs (stored back on every exit).
  uint32_t since = c.since_poll, left = blk.turn_left;
  const auto leave = [&](bool ok) {
    c.since_poll = since;
    blk.turn_left = left;
    return ok;
  };
  while (left && w.mask) {
    const Instr& in = code[w.cur_pc];
    if (since >= poll_every) {
      since = 0;
      if (!poll(c, in)) return leave(false);
    }
    if (c.chains && c.fast[w.cur_pc].chain != FastKind::none && w.mask == kFull) {
      const int64_t ran = run_chain(c, w, since, left, poll_every - since);
      if (ran < 0) return leave(false);
      if (ran) continue;
    }
    ++since;
    --left;
    uint32_t group = w.mask, m = group;
    if (in.guard != kNoReg) {
      uint32_t t = c.pred(c.reg(in.guard));
      m &= (in.flags & kNegGuard) ? ~t : t;
    }
    c.stats.warp_instructions++;
    c.stats.thread_instructions += m == kFull ? kWarpSize : uint64_t{lane_count(m)};
    // A full warp runs the instruction's fast form when it has one that applies.
    if (m == kFull && c.fast[w.cur_pc].kind != FastKind::none && c.run_one(c, c.fast[w.cur_pc])) {
      w.cur_pc++;
      continue;
    }
    if (!is_control(in.op)) {
      if (m && !table[static_cast<size_t>(in.op)](c, in, m)) return leave(false);
      w.cur_pc++;
      continue;
    }
    // A uniform branch keeps the group together.
    if (in.op == Op::bra && (m == group || m == 0) && group == w.runnable()) {
      w.cur_pc = m ? in.target : w.cur_pc + 1;
      continue;
    }
    if (!exec_control(c, w, in, group, m)) return leave(false);
    schedule(w);
    c.regs = w.mask ? w.frames[w.cur_depth].regs.data() : c.regs;
  }
  return leave(true);
}

// A full warp at the start of its turn, at an op that chains, no poll due: its chain runs without run_warp's loop.
// True when it ran to its exit (the common case); else run_warp goes on from where it stopped, in the same turn.
bool first_chain(Ctx& c, Block& blk, Warp& w, uint32_t poll_every) {
  const uint32_t since = c.since_poll;
  if (w.mask != kFull || since >= poll_every || c.fast[w.cur_pc].chain == FastKind::none) return false;
  c.warp = &w;
  c.regs = w.frames[w.cur_depth].regs.data();
  const uint32_t k = c.run_fast(c, w.cur_pc, std::min(kSlice, poll_every - since));
  c.since_poll = since + k;
  blk.turn_left = kSlice - k;
  return !w.mask;
}

void init_warp(Ctx& c, Warp& w, uint32_t index, uint32_t threads, const Function& entry) {
  w.exited = w.waiting = w.carry = 0;
  // Only control instructions move a lane's own place (exec_control); a warp that ran none last block still has
  // every lane at the entry, at depth 0, with the entry's local top.
  if (w.lanes_moved || w.frames.empty()) {
    w.pc.fill(entry.first);
    w.depth.fill(0);
    w.local_top.fill(entry.local_bytes);
    w.lanes_moved = false;
  }
  if (w.frames.empty()) {  // the first block of the call: what every block shares
    const Dim3& b = c.launch.block;
    const uint32_t first = index * kWarpSize, n = std::min(kWarpSize, threads - first);
    w.index = index;
    w.live = n == kWarpSize ? kFull : (1u << n) - 1;
    for (uint32_t l = 0; l < kWarpSize; ++l) {
      uint32_t t = first + l;
      w.tid[l] = t % b.x;
      w.tid[kWarpSize + l] = t / b.x % b.y;
      w.tid[2 * kWarpSize + l] = t / (b.x * b.y);
    }
    w.frames.resize(1);
    make_frame(c, w, w.frames[0]);
    w.frames[0].local_base.fill(0);  // the entry's locals start at 0 (a call writes only deeper frames' bases)
  }
  if (entry.local_bytes)
    for (auto& mem : w.local) {
      if (mem.size() < entry.local_bytes) mem.resize(entry.local_bytes);
      std::fill_n(mem.begin(), entry.local_bytes, std::byte{0});
    }
  w.cur_pc = entry.first;
  w.cur_depth = 0;
  w.mask = w.live;
}

// Releases barriers every live thread (or the given count) reached.
bool release_barriers(Block& blk) {
  uint32_t with = blk.with_arrivals;
  if (!with) return false;
  bool released = false;
  uint32_t live = blk.threads - blk.exited_threads;
  for (uint32_t left = with; left; left &= left - 1) {  // the barriers with arrivals, in order
    const uint32_t b = static_cast<uint32_t>(std::countr_zero(left));
    uint32_t need = blk.expected[b] ? blk.expected[b] : live;
    if (blk.arrived[b] < need) continue;
    // Lanes wait only at barriers with arrivals: when b is the only one, every waiting lane waits at b.
    bool only = (with & ~(1u << b)) == 0;
    for (auto& w : blk.warps) {
      uint32_t lanes = only ? w.waiting : 0;
      if (!only) for_lanes(w.waiting, [&](uint32_t l) { lanes |= w.bar_id[l] == b ? 1u << l : 0; });
      w.waiting &= ~lanes;
      if (lanes && !w.mask) schedule(w);
    }
    blk.arrived[b] = 0;
    blk.expected[b] = 0;
    with &= ~(1u << b);
    blk.with_arrivals &= ~(1u << b);
    released = true;
  }
  return released;
}

// Runs the block's warps round robin until every thread exited. False on
// an error or a yield (Block keeps the round robin's place).
bool run_block(Ctx& c, Block& blk) {
  const uint32_t poll_every = std::max<uint32_t>(c.control.poll_every, 1);
  const uint32_t warps = static_cast<uint32_t>(blk.warps.size());  // fixed for the launch
  const bool chains = c.chains;
  for (;;) {
    // Whether no warp can run after this round (a whole one: each warp ended its turn with no lane to run and
    // released no barrier). Then the next round would run nothing, so the checks after it run at once (a
    // block whose warps all run to their exit in one turn, the common case, has no empty second round).
    bool none_left = blk.turn_warp == 0;
    for (; blk.turn_warp < warps; ++blk.turn_warp) {
      Warp& w = blk.warps[blk.turn_warp];
      if (!w.mask) continue;
      blk.ran_this_round = true;
      if (!blk.in_turn) {
        blk.turn_left = kSlice;
        if (chains && first_chain(c, blk, w, poll_every)) {  // it ran to its exit in its chain: its turn is over
          if (blk.with_arrivals && release_barriers(blk)) none_left = false;
          continue;
        }
        blk.in_turn = true;
      }
      if (!run_warp(c, w, poll_every)) return false;
      blk.in_turn = false;
      if (w.mask || (blk.with_arrivals && release_barriers(blk))) none_left = false;
    }
    blk.turn_warp = 0;
    const bool ran = blk.ran_this_round && !none_left;
    blk.ran_this_round = false;
    if (ran) continue;
    if (release_barriers(blk)) continue;
    if (blk.exited_threads == blk.threads) return true;
    c.error = ExecError{ExecStatus::illegal, 0, false, 0,
                        "barrier deadlock in block (" + std::to_string(blk.ctaid[0]) + "," +
                            std::to_string(blk.ctaid[1]) + "," + std::to_string(blk.ctaid[2]) +
                            "): threads wait at different barriers or counts"};
    return false;
  }
}

// Sets up block `st.next_block` in the kept Block.
void begin_block(Ctx& c, LaunchState& st) {
  const LaunchConfig& l = st.launch;
  const Program& prog = c.prog;
  const Function& entry = prog.functions[prog.entry_functions[l.entry]];
  Block& blk = st.block;
  const uint64_t b = st.next_block;
  blk.ctaid[0] = static_cast<uint32_t>(b % l.grid.x);
  blk.ctaid[1] = static_cast<uint32_t>(b / l.grid.x % l.grid.y);
  blk.ctaid[2] = static_cast<uint32_t>(b / (uint64_t{l.grid.x} * l.grid.y));
  blk.exited_threads = 0;
  blk.arrived.fill(0);
  blk.expected.fill(0);
  blk.with_arrivals = 0;
  // Shared memory starts zeroed (LaunchRun::start); only a launch that can write it clears it per block.
  if (st.clear_shared) std::fill(blk.shared.begin(), blk.shared.end(), std::byte{0});
  blk.turn_warp = 0;
  blk.in_turn = blk.ran_this_round = false;
  for (uint32_t i = 0; i < blk.warps.size(); ++i) init_warp(c, blk.warps[i], i, blk.threads, entry);
  for (const ConstReg& k : st.fast->block_consts) {  // the block's %ctaid in every frame (FastProgram::block_consts)
    const uint64_t v = blk.ctaid[k.ctaid_dim] & k.value;
    for (Warp& w : blk.warps)
      for (Frame& f : w.frames) std::fill_n(f.regs.begin() + ptrdiff_t{k.reg} * kWarpSize, kWarpSize, v);
  }
}

size_t shared_size(const Program& prog, const LaunchConfig& l) {
  return (l.dynamic_shared_bytes ? prog.dynamic_shared_offset : prog.static_shared_bytes) +
         size_t{l.dynamic_shared_bytes};
}

std::expected<void, ExecError> check_launch(const Module& m, const LaunchConfig& l, const ExecLimits& lim,
                                            uint64_t first, uint64_t end) {
  auto bad = [](ExecStatus s, std::string msg) { return std::unexpected(ExecError{s, 0, false, 0, std::move(msg)}); };
  if (l.entry >= m.entries().size()) return bad(ExecStatus::bad_launch, "no entry " + std::to_string(l.entry));
  const EntryInfo& e = m.entries()[l.entry];
  uint64_t threads = uint64_t{l.block.x} * l.block.y * l.block.z;
  if (threads == 0 || threads > 1024)
    return bad(ExecStatus::bad_launch, "block of " + std::to_string(threads) + " threads");
  if (l.block.z > 64) return bad(ExecStatus::bad_launch, "block z over 64");
  if (e.max_threads && threads > e.max_threads) return bad(ExecStatus::bad_launch, "block over the entry's .maxntid");
  uint64_t blocks = uint64_t{l.grid.x} * l.grid.y * l.grid.z;
  if (blocks == 0 || l.grid.y > 65535 || l.grid.z > 65535) return bad(ExecStatus::bad_launch, "bad grid");
  if (first > end || end > blocks)
    return bad(ExecStatus::bad_launch,
               "blocks [" + std::to_string(first) + ", " + std::to_string(end) + ") outside the grid");
  if (l.params.size() < e.param_bytes)
    return bad(ExecStatus::bad_launch, "parameter buffer of " + std::to_string(l.params.size()) +
                                           " bytes, the entry needs " + std::to_string(e.param_bytes));
  uint64_t shared = (l.dynamic_shared_bytes ? m.program().dynamic_shared_offset : m.program().static_shared_bytes) +
                    uint64_t{l.dynamic_shared_bytes};
  if (shared > lim.max_shared_bytes)
    return bad(ExecStatus::resource,
               "shared memory of " + std::to_string(shared) + " bytes over " + std::to_string(lim.max_shared_bytes));
  const Function& f = m.program().functions[m.program().entry_functions[l.entry]];
  if (f.local_bytes > lim.max_local_bytes_per_thread) return bad(ExecStatus::resource, "local memory over the limit");
  return {};
}

}  // namespace

bool Ctx::grow(uint64_t bytes, uint32_t line) {
  state_bytes += bytes;
  if (state_bytes <= limits.max_state_bytes) return true;
  error = ExecError{ExecStatus::resource, 0, false, line,
                    "the launch's state over " + std::to_string(limits.max_state_bytes) + " bytes of host memory"};
  return false;
}

}  // namespace exec

LaunchRun::~LaunchRun() = default;

std::expected<std::unique_ptr<LaunchRun>, ExecError> LaunchRun::start(const Module& module, const LaunchConfig& launch,
                                                                      uint64_t first_block, uint64_t end_block,
                                                                      const ExecLimits& limits) {
  using namespace exec;
  if (auto ok = check_launch(module, launch, limits, first_block, end_block); !ok) return std::unexpected(ok.error());
  const Program& prog = module.program();
  const Function& entry = prog.functions[prog.entry_functions[launch.entry]];
  std::unique_ptr<LaunchRun> run(new LaunchRun());
  run->state_.reset(new LaunchState{.module = module, .launch = launch, .limits = limits});
  LaunchState& st = *run->state_;
  st.params.assign(launch.params.begin(), launch.params.end());
  st.launch.params = st.params;
  st.next_block = first_block;
  st.end_block = end_block;
  st.param_stride = std::max<uint32_t>((prog.max_param_frame + 7u) & ~7u, 8);
  Block& blk = st.block;
  blk.threads = launch.block.x * launch.block.y * launch.block.z;
  const uint32_t warps = (blk.threads + kWarpSize - 1) / kWarpSize;
  // Frame 0 and the entry's local depot of every warp, and the shared memory.
  st.state_bytes = warps * (sizeof(Warp) + (uint64_t{prog.max_regs} * sizeof(uint64_t) + st.param_stride) * kWarpSize +
                            uint64_t{entry.local_bytes} * kWarpSize) +
                   shared_size(prog, launch);
  if (st.state_bytes > limits.max_state_bytes)
    return std::unexpected(ExecError{ExecStatus::resource, 0, false, 0,
                                     "a block's state of " + std::to_string(st.state_bytes) + " bytes over " +
                                         std::to_string(limits.max_state_bytes)});
  blk.warps.resize(warps);
  blk.shared.assign(shared_size(prog, launch), std::byte{0});
  st.clear_shared = !blk.shared.empty() && writes_shared(prog, prog.entry_functions[launch.entry]);
  auto fast = std::make_shared<FastProgram>(build_fast(prog, st.launch));
  // The splats, and their copy in every warp's frame 0 (exec_fast.h).
  st.state_bytes += fast->ops.size() * sizeof(FastOp) + (1 + warps) * fast->splats.size() * sizeof(uint64_t);
  if (st.state_bytes > limits.max_state_bytes)
    return std::unexpected(ExecError{ExecStatus::resource, 0, false, 0,
                                     "a block's state of " + std::to_string(st.state_bytes) + " bytes over " +
                                         std::to_string(limits.max_state_bytes) +
                                         " with the fast path's ops and splats"});
  st.fast = std::move(fast);
  return run;
}

std::expected<LaunchRun::State, ExecError> LaunchRun::run(GlobalMemory& memory, const ExecControl& control,
                                                          uint64_t stop_block) {
  using namespace exec;
  if (failed_) return std::unexpected(*failed_);
  LaunchState& st = *state_;
  const Program& prog = st.module.program();
  const FastFn run_fast = control.fast_path ? fast_runner() : declining_runner();
  const FastOneFn run_one = control.fast_path ? fast_one_runner() : declining_one_runner();
  const PredFn pred = pred_runner();
  Ctx c{st.module,
        prog,
        st.launch,
        st.limits,
        control,
        PageCache(memory),
        st.stats,
        st.since_poll,
        st.state_bytes,
        {ExecStatus::ok, 0, false, 0, {}},
        st.param_stride,
        st.stats.warp_instructions,
        false,
        &st.block,
        nullptr,
        nullptr,
        {},
        {},
        {},
        st.fast->ops.data(),
        st.fast->splats,
        st.fast->consts,
        run_fast,
        run_one,
        pred,
        control.fast_path};
  struct KeepCounters {  // the run's counters back into the kept state, however it returns
    LaunchState& st;
    const Ctx& c;
    ~KeepCounters() {
      st.stats = c.stats;
      st.since_poll = c.since_poll;
    }
  } keep{st, c};
  const uint64_t stop = std::min(stop_block, st.end_block);
  for (;;) {
    if (!st.block_live) {
      if (st.next_block >= stop) return st.next_block >= st.end_block ? State::finished : State::yielded;
      begin_block(c, st);
      st.block_live = true;
    }
    if (!run_block(c, st.block)) {
      if (c.yielded) return State::yielded;
      failed_ = c.error;
      return std::unexpected(std::move(c.error));
    }
    st.block_live = false;
    ++st.next_block;
  }
}

bool LaunchRun::finished() const { return !state_->block_live && state_->next_block >= state_->end_block; }
uint64_t LaunchRun::next_block() const { return state_->next_block; }
const ExecStats& LaunchRun::stats() const { return state_->stats; }
uint64_t LaunchRun::state_bytes() const { return state_->state_bytes; }

std::expected<ExecStats, ExecError> run_blocks(const Module& module, const LaunchConfig& launch, GlobalMemory& memory,
                                               uint64_t first_block, uint64_t end_block, const ExecLimits& limits,
                                               const ExecControl& control) {
  auto run = LaunchRun::start(module, launch, first_block, end_block, limits);
  if (!run) return std::unexpected(std::move(run.error()));
  ExecControl whole = control;  // one run: never yields
  whole.yield_after = 0;
  whole.yield_now = nullptr;
  if (auto r = (*run)->run(memory, whole); !r) return std::unexpected(std::move(r.error()));
  return (*run)->stats();
}

}  // namespace vgpu::ptx
