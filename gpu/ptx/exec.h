// SPDX-License-Identifier: GPL-2.0-or-later
// The interpreter's state (internal to gpu/ptx/, docs/ptx.md "Execution
// model"): a block of warps, each warp's lanes with their call frames,
// registers stored per frame as one 32-lane array per register, and the
// executor table that runs one decoded instruction over a warp's active
// lanes.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <charconv>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "gpu/ptx/interpreter.h"
#include "ptx/program.h"

namespace vgpu::ptx::exec {

constexpr uint32_t kWarpSize = 32;
constexpr uint32_t kFull = 0xffffffffu;
// Generic-address windows above the 40-bit GPU VA space, 4 GiB each.
constexpr uint64_t kSharedWindow = 0xFFFF'0000'0000'0000ull;
constexpr uint64_t kLocalWindow = 0xFFFE'0000'0000'0000ull;
constexpr uint64_t kParamWindow = 0xFFFD'0000'0000'0000ull;
constexpr uint64_t kWindowMask = 0xFFFF'FFFF'0000'0000ull;
// The generic window of `space` (cvta), 0 for global and the rest.
constexpr uint64_t window_of(StateSpace space) {
  switch (space) {
    case StateSpace::shared: return kSharedWindow;
    case StateSpace::local: return kLocalWindow;
    case StateSpace::param: return kParamWindow;
    default: return 0;
  }
}
// Param-space addresses at or above this are the thread's frame parameters
// (a .func's own, call-site .param); below it the entry's parameter buffer.
constexpr uint64_t kFrameParamBase = 0x4000'0000ull;
constexpr uint32_t kBarriers = 16;

using Lanes = std::array<uint64_t, kWarpSize>;

struct Ctx;
struct FastOp;
// A register that holds one value for the whole launch (build_fast): every
// frame starts with it in all 32 lanes; or, for tid_dim 0..2, with each
// lane's %tid of that dimension & value (the same in a warp for every block);
// or, for ctaid_dim 0..2, with the block's %ctaid of that dimension & value
// (begin_block writes it again in every frame of every warp).
struct ConstReg {
  static constexpr uint8_t kNoTid = 3;  // no dimension: tid_dim's and ctaid_dim's "none"
  uint32_t reg;
  uint64_t value;
  uint8_t tid_dim = kNoTid;
  uint8_t ctaid_dim = kNoTid;
};
struct FastProgram;
// exec_fast.h: a chain of FastOps from pc over all 32 lanes (how many ran);
// one FastOp (false: declined); a guard's lanes.
using FastFn = uint32_t (*)(Ctx& c, uint32_t& pc, uint32_t n);
using FastOneFn = bool (*)(Ctx& c, const FastOp& f);
using PredFn = uint32_t (*)(const uint64_t* p);

// Storage that starts on a cache line (kLineBytes): a frame's register r,
// 32 lanes of 8 bytes, is then four whole lines, and no vector load or
// store of the fast path (32 or 64 bytes, exec_fast.h) spans two lines.
// From malloc's 16-byte alignment half of the 32-byte accesses and every
// 64-byte one would.
constexpr size_t kLineBytes = 64;
template <typename T>
struct LineAligned {
  using value_type = T;
  LineAligned() = default;
  template <typename U>
  explicit LineAligned(const LineAligned<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kLineBytes})); }
  void deallocate(T* p, size_t) noexcept { ::operator delete (p, std::align_val_t{kLineBytes}); }
  bool operator==(const LineAligned&) const = default;
};

// One call depth of a warp: the registers and parameter area of each lane
// that is at this depth.
struct Frame {
  std::vector<uint64_t, LineAligned<uint64_t>> regs;  // reg r, lane l at r * 32 + l
  std::vector<std::byte> params;                      // lane l at l * param_stride
  std::array<uint32_t, kWarpSize> ret_pc{}, call_site{}, local_base{};
};

struct Warp {
  uint32_t index = 0;
  uint32_t live = 0;     // lanes that are threads of the block
  uint32_t exited = 0;   // lanes that exited
  uint32_t waiting = 0;  // lanes waiting at a barrier
  std::array<uint32_t, kWarpSize> pc{};
  std::array<uint8_t, kWarpSize> depth{};
  std::array<uint8_t, kWarpSize> bar_id{};
  std::array<uint32_t, kWarpSize> local_top{};
  std::array<uint32_t, 3 * kWarpSize> tid{};  // x, y, z of each lane
  uint32_t carry = 0;                         // CC.CF per lane
  std::vector<Frame> frames;
  std::array<std::vector<std::byte>, kWarpSize> local;
  // The lanes running now: all at (cur_pc, cur_depth).
  uint32_t cur_pc = 0, cur_depth = 0, mask = 0;
  // exec_control wrote pc, depth or local_top since init_warp set them (else they still hold the entry's values).
  bool lanes_moved = false;
  uint32_t runnable() const { return live & ~exited & ~waiting; }
};

struct Block {
  std::vector<Warp> warps;
  std::vector<std::byte> shared;
  uint32_t ctaid[3] = {};
  uint32_t threads = 0, exited_threads = 0;
  std::array<uint32_t, kBarriers> arrived{}, expected{};
  uint32_t with_arrivals = 0;  // bit b: arrived[b] != 0
  // Where the round robin stands, so that a run that yielded resumes at the
  // very instruction and turn it stopped at (the same schedule as a run
  // that never yielded): the warp whose turn it is, whether that turn has
  // begun and how much of it is left, and whether a warp ran this round.
  uint32_t turn_warp = 0;
  bool in_turn = false, ran_this_round = false;
  uint32_t turn_left = 0;
};

// A launch's state between runs (LaunchRun): its own copy of the
// configuration and parameters, the resident block, the next block and
// the counters that the schedule and %clock64 depend on.
struct LaunchState {
  const Module& module;
  LaunchConfig launch;
  ExecLimits limits;
  std::vector<std::byte> params;
  Block block;
  uint64_t next_block = 0, end_block = 0;
  bool block_live = false;   // `block` holds a block that has not finished
  bool clear_shared = true;  // a block can write shared memory: the next one clears it (writes_shared)
  ExecStats stats;
  uint32_t since_poll = 0;
  uint32_t param_stride = 0;
  uint64_t state_bytes = 0;                 // host bytes of the kept state (ExecLimits::max_state_bytes)
  std::shared_ptr<const FastProgram> fast;  // the program's fast forms for this launch (exec_fast.h)
};

// Host pointers of global pages for one run_blocks call.
class PageCache {
 public:
  explicit PageCache(GlobalMemory& m) : mem_(m) { clear(); }
  void clear() {
    for (auto& e : entries_) e.key = ~0ull;
  }
  // Host bytes of [va, va + bytes) when va's page is cached, else nullptr
  // (then get() translates it); no fault to construct on the hot path.
  std::byte* cached(uint64_t va, bool write) const {
    uint64_t key = (va >> 12) << 1 | (write ? 1 : 0);
    const Entry& e = entries_[(key ^ (key >> 9)) & (kEntries - 1)];
    return e.key == key ? e.base + (va & 0xfff) : nullptr;
  }
  // Host bytes of [va, va + bytes), or the fault.
  std::byte* get(uint64_t va, uint32_t bytes, bool write, MemoryFault& fault) {
    uint64_t key = (va >> 12) << 1 | (write ? 1 : 0);
    Entry& e = entries_[(key ^ (key >> 9)) & (kEntries - 1)];
    if (e.key == key) return e.base + (va & 0xfff);
    auto r = mem_.access(va, bytes, write);
    if (!r) {
      fault = r.error();
      return nullptr;
    }
    e.key = key;
    e.base = *r - (va & 0xfff);
    return *r;
  }

 private:
  static constexpr size_t kEntries = 512;
  struct Entry {
    uint64_t key;
    std::byte* base;
  };
  GlobalMemory& mem_;
  std::array<Entry, kEntries> entries_;
};

// Everything one run_blocks call shares.
struct Ctx {
  const Module& module;
  const Program& prog;
  const LaunchConfig& launch;
  const ExecLimits& limits;
  const ExecControl& control;
  PageCache pages;
  ExecStats stats;      // LaunchState's, copied back when the run returns
  uint32_t since_poll;  // likewise
  uint64_t& state_bytes;
  ExecError error{ExecStatus::ok, 0, false, 0, {}};
  uint32_t param_stride = 0;
  uint64_t run_start = 0;  // stats.warp_instructions when this run began
  bool yielded = false;    // the run stopped at an instruction boundary, to be resumed
  Block* block = nullptr;
  Warp* warp = nullptr;
  uint64_t* regs = nullptr;  // the running frame's registers
  Lanes tmp[6];
  // tmp[slot] holds tmp_imm[slot] in every lane (an immediate operand's fill, reused).
  std::array<uint64_t, 6> tmp_imm{};
  std::array<bool, 6> tmp_is_imm{};
  // The fast path (exec_fast.h): one FastOp per instruction, their splats (copied into every frame), the kernels for
  // this CPU.
  const FastOp* fast = nullptr;
  std::span<const uint64_t> splats;
  std::span<const ConstReg> consts;  // in every frame from the start (FastProgram::consts)
  FastFn run_fast = nullptr;
  FastOneFn run_one = nullptr;
  PredFn pred = nullptr;
  bool chains = false;  // run_fast runs chains (ExecControl::fast_path): else the dispatch loop never calls it

  // Accounts `bytes` more of kept state; false (ctx.error set) over the bound.
  bool grow(uint64_t bytes, uint32_t line);
  bool fail(ExecStatus s, const Instr& in, std::string message, uint64_t va = 0, bool write = false) {
    error = ExecError{s, va, write, in.line, std::move(message)};
    return false;
  }
  uint64_t* reg(uint32_t r) { return regs + size_t{r} * kWarpSize; }
  // Operand values for all 32 lanes: a register's own array or tmp[slot].
  const uint64_t* src(const Operand& o, int slot) {
    return o.kind == Operand::Kind::reg ? reg(o.reg) : src_slow(o, slot);
  }
  const uint64_t* src_slow(const Operand& o, int slot);
  uint64_t* dst(const Operand& o, int slot) {
    if (o.kind == Operand::Kind::reg) return reg(o.reg);
    tmp_is_imm[static_cast<size_t>(slot)] = false;
    return tmp[slot].data();
  }
  uint64_t sreg(SReg s, uint32_t lane) const;
  void sreg_lanes(SReg s, Lanes& out) const;
  uint64_t symbol_address(const Operand& o, uint32_t lane) const;
};

// Whether function `entry` or a function it calls (transitively) has an
// instruction that can write shared memory (st, atom, red to the shared
// space or a generic address). When none does, shared memory stays as
// LaunchRun::start zeroed it and no block needs to clear it.
bool writes_shared(const Program& prog, uint32_t entry);

// Runs `in` over the lanes of `mask`; false with ctx.error set on a fault.
using ExecFn = bool (*)(Ctx& c, const Instr& in, uint32_t mask);
ExecFn int_executor(Op op);
ExecFn float_executor(Op op);
ExecFn data_executor(Op op);
ExecFn memory_executor(Op op);
ExecFn warp_executor(Op op);
// add, sub, mul, mad, div, abs, neg, min, max of .f32/.f64 (exec_float.cc).
bool float_arith(Ctx& c, const Instr& in, uint32_t mask);

// Helpers shared by the executors.
constexpr uint64_t width_mask(uint32_t bytes) { return bytes >= 8 ? ~0ull : (1ull << (bytes * 8)) - 1; }
constexpr int64_t sext(uint64_t v, uint32_t bytes) {
  unsigned sh = 64 - bytes * 8;
  return static_cast<int64_t>(v << sh) >> sh;
}
inline float as_f32(uint64_t v) { return std::bit_cast<float>(static_cast<uint32_t>(v)); }
inline double as_f64(uint64_t v) { return std::bit_cast<double>(v); }
inline uint64_t bits(float f) { return std::bit_cast<uint32_t>(f); }
inline uint64_t bits(double d) { return std::bit_cast<uint64_t>(d); }

inline std::string hex(uint64_t v) {
  char b[20];
  auto r = std::to_chars(b, b + sizeof b, v, 16);
  return "0x" + std::string(b, r.ptr);
}

// Set bits of a lane mask, inline: std::popcount is a libgcc call when the
// build does not target POPCNT (the x86-64 baseline), once per warp
// instruction in the hot loop.
constexpr uint32_t lane_count(uint32_t m) {
  m = m - ((m >> 1) & 0x55555555u);
  m = (m & 0x33333333u) + ((m >> 2) & 0x33333333u);
  return (((m + (m >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24;
}

template <typename F>
inline void for_lanes(uint32_t mask, F f) {
  if (mask == kFull) {
    for (uint32_t l = 0; l < kWarpSize; ++l) f(l);
  } else {
    while (mask) {
      uint32_t l = static_cast<uint32_t>(std::countr_zero(mask));
      mask &= mask - 1;
      f(l);
    }
  }
}

}  // namespace vgpu::ptx::exec
