// SPDX-License-Identifier: GPL-2.0-or-later
// The guest-program harness's machinery (guest_program.h): the host and
// the victim VM, made once per process; the attacker VM, made fresh for
// each input and torn down after it; the input reader; the oracle.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "driver/runtime.h"
#include "gpu/gpu.h"
#include "mediator/fuzz/guest_program.h"
#include "mediator/host.h"
#include "tests/testing/guest_attacker.h"
#include "testbed/testbed.h"

namespace vgpu::fuzz {

using testbed::Mode;

inline constexpr uint64_t VM_VRAM = 64 * MiB;
inline constexpr uint64_t VM_RAM = 1 * MiB + 64 * KiB;
inline constexpr uint32_t CHANNELS = 4;
inline constexpr uint64_t INST_HEAP = 4 * MiB;
// One attacker wait op, at most (VGPU_FUZZ_OP_WAIT_MS sets it; campaigns:
// 5). A wait op's result is not used: it only lets the attacker's work
// finish before its next operations. Most waits that run out are on fences
// that cannot come (the guest broke its channel or PFIFO); in `device` they
// were 45% of a replay's time at 20 ms each. So a wait op also ends once
// nothing of the attacker's can move before its next operation (the
// pass-through GPU idle; mediated: guest_ops.cc, Runner::quiet).
inline constexpr uint64_t ATTACKER_WAIT_NS = 20'000'000;
// The attacker driver's own waits (setup, ring space, teardown): long
// enough for a fresh context on a loaded machine (the CI's two cores run
// every target at once); once one times out, the input's driver
// operations stop (Attacker::wedged), so an input pays it at most a few
// times, within libFuzzer's -timeout=10.
inline constexpr uint64_t ATTACKER_DEVICE_WAIT_NS = 2'000'000'000;
// Pass-through: no mediator or victim to wait behind, and raw accesses
// wedge the device model far more often (no mediator refuses them).
inline constexpr uint64_t NATIVE_DEVICE_WAIT_NS = 1'000'000'000;
// How long a fresh pass-through attacker waits, at most, for the last
// guest's engine work to end when its first open failed: one spin launch
// may hold an engine for cls::MAX_SPIN_NS (the fixture sets ENGINE_TIMEOUT,
// which that guest may have changed) and a reset does not recall it.
inline constexpr uint64_t NATIVE_DRAIN_NS = 12'000'000'000;
inline constexpr uint64_t TURN_NS = 5'000'000;
inline constexpr uint64_t BUFFER_BYTES = 64 * KiB;  // each attacker buffer
inline constexpr uint32_t MAX_OPS = 48;             // operations run per input
// Inputs one attacker VM runs before it is torn down and made afresh
// (VGPU_FUZZ_REUSE, default 1: every input on a fresh attacker, as the
// replays run them), and inputs per victim fill (VGPU_FUZZ_FILL_EVERY,
// default 1). Campaigns raise both (scripts/fuzz --fast): making a vGPU,
// opening its driver through trapped accesses and scanning its page
// directory cost milliseconds, an input's operations far less. A finding
// then may need the inputs before it: with VGPU_FUZZ_HISTORY=DIR they are
// written there (history-NNNNN, oldest first) for a replay in order with
// the same settings; the crashing input alone with VGPU_FUZZ_REUSE=1
// says whether it is enough. VGPU_FUZZ_WAIT_MS (campaigns: 100) bounds the
// attacker driver's waits in place of ATTACKER_DEVICE_WAIT_NS once its
// setup is done: an input that wedges its device costs that.
uint32_t env_count(const char* name, uint32_t fallback);
// With VGPU_FUZZ_TRACE set: "fixture: WHAT N us" since `start` (a profile
// of the fixture's own costs beside the operations' own).
void trace_since(const char* what, std::chrono::steady_clock::time_point start);

// The input, read front to back; past its end every read is 0.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool empty() const { return n_ == 0; }
  uint8_t u8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint32_t u32() { return u16() | (uint32_t{u16()} << 16); }
  uint64_t u64() { return u32() | (uint64_t{u32()} << 32); }

 private:
  const uint8_t* p_;
  size_t n_;
};

[[noreturn]] void finding(const std::string& what);
// What the input is doing now (an operation and its index, or a step of
// the fixture with -1), for the line the history watchdog prints at 8 s.
void note_step(const char* what, int64_t index);

// The attacker VM of one input: its vGPU (none in pass-through), port,
// driver and context, and the buffers the operations aim at.
struct Attacker {
  Mode mode = Mode::fv_opt;
  mediator::Vgpu* vgpu = nullptr;
  std::unique_ptr<driver::Port> port;
  std::unique_ptr<driver::Device> dev;
  std::unique_ptr<driver::Context> ctx;
  std::optional<mediator::attack::GuestAttacker> raw;
  driver::Buffer a{}, b{}, pinned{};
  std::optional<driver::Fence> last;
  bool wedged = false;     // a driver wait timed out: no more driver operations
  bool was_reset = false;  // an input reset the device: its driver is gone
  uint32_t inputs = 0;     // inputs run on this attacker (VGPU_FUZZ_REUSE)

  uint64_t pd() { return ctx->address_space().vmm().pd_addr(); }
  uint64_t va(driver::Buffer buf) { return ctx->gpu_va(buf).value_or(0); }
  uint64_t partition_base() const;
  uint64_t vram_bytes() const;
};

// The host's turns as HostConfig::on_turn tells them: the VM whose turn
// is on the GPU (0: none; turns are not preemptive, one at a time, each
// end told before the next start) and how many starts and ends so far.
struct TurnWatch {
  std::atomic<uint32_t> vm{0};
  std::atomic<uint64_t> events{0};
  void operator()(const mediator::TurnEvent& e) {
    vm.store(e.start ? e.vm : 0);
    events.fetch_add(1);
  }
};

// The process-wide fixture.
class Fixture {
 public:
  static Fixture& get();
  // The attacker in `mode` for the next input: the one kept from earlier
  // inputs, or a fresh one (pass-through: the device model alone).
  Attacker& attacker(Mode mode);
  // After an input: the attacker is torn down (driver, port, vGPU; in
  // pass-through the GPU is reset) once it has run VGPU_FUZZ_REUSE inputs,
  // or when its driver cannot go on (a wait timed out, the device was
  // reset, no context); otherwise it is kept for the next input.
  void after_input(Attacker& a);
  bool reusing() const { return reuse_ > 1; }
  // Whether an input's costly operation takes effect: always, but with kept
  // attackers at most once in VGPU_FUZZ_RESET_EVERY inputs (campaigns: 64)
  // for a reset, VGPU_FUZZ_CONTEXT_EVERY (campaigns: 64) for a new context.
  // A reset costs the next input a fresh attacker, and a new context about
  // what a fresh attacker costs (a channel, a page directory the mediator
  // scans whole); libFuzzer keeps the inputs that do either (their coverage),
  // so without the cap one input in nine paid for a reset, and new contexts
  // (up to 48 in an input) took 95% of bar's and pagetable's time.
  enum class Costly { reset, context };
  bool take(Costly what);
  bool all_fresh() const {
    for (const auto& k : kept_)
      if (k) return false;
    return true;
  }
  // The victim's work during an input, and its checks after it: the fill
  // runs during one input in VGPU_FUZZ_FILL_EVERY; the sentinels, RAM, channel and
  // error log are checked after every input.
  void victim_begin();
  void victim_end();
  // Where a guest address of the victim's partition is in the attacker's
  // guest addresses if nothing confined it, and the same for RAM.
  uint64_t foreign_vram(const Attacker& a, uint64_t victim_gaddr) const;
  uint64_t foreign_ram(const Attacker& a, uint64_t offset) const;
  uint64_t victim_sentinel_gaddr() const { return victim_small_gaddr_; }
  mediator::Host& host() { return *host_; }
  uint64_t op_wait_ns() const { return op_wait_ns_; }
  gpu::Gpu& native() { return *native_; }  // the pass-through GPU
  const TurnWatch& turns() const { return turns_; }

 private:
  Fixture();
  void make_victim();
  std::string victim_memory_changed();
  void victim_fill_done();
  // The scheduler's view, for a finding's message: the victim, the kept
  // attackers and the attacker being made, if any.
  std::string host_state(const Attacker* making = nullptr);
  // The pass-through GPU's, for a fresh pass-through attacker's finding.
  std::string native_state(bool drained);

  TurnWatch turns_;  // before host_, which tells it
  std::unique_ptr<mediator::Host> host_;
  std::unique_ptr<gpu::Gpu> native_;  // pass-through
  Attacker fresh(Mode mode);
  void attach(Attacker& a);
  void teardown(Attacker& a);

  std::shared_ptr<gpu::MemfdRam> victim_ram_, native_ram_;
  // One kept attacker per mode (Mode's value), each with its own RAM.
  std::array<std::shared_ptr<gpu::MemfdRam>, 4> attacker_ram_;
  std::array<std::optional<Attacker>, 4> kept_;
  std::string open_driver(Attacker& a, uint64_t wait_ns);

  // Why attackers were made afresh (kept attackers only): printed at exit,
  // the share of inputs that paid for one (docs/fuzzing.md).
  struct FreshCounts {
    uint64_t inputs = 0, fresh = 0, scheduled = 0, wedged = 0, reset = 0, no_context = 0;
    uint64_t contexts = 0, contexts_skipped = 0;
  };
  static void print_fresh_counts();
  static void shutdown();
  FreshCounts counts_;

  uint32_t reuse_ = 1, fill_every_ = 1, inputs_ = 0;
  // By Costly: VGPU_FUZZ_RESET_EVERY (unset: 1, at most one reset an
  // input), VGPU_FUZZ_CONTEXT_EVERY (unset: 0, no cap, as before it was).
  std::array<uint32_t, 2> every_{1, 0};
  std::array<uint64_t, 2> last_{};          // by Costly: counts_.inputs when one was last taken
  uint32_t wait_ms_ = 0;                    // VGPU_FUZZ_WAIT_MS; 0: the long waits only
  uint64_t op_wait_ns_ = ATTACKER_WAIT_NS;  // VGPU_FUZZ_OP_WAIT_MS
  bool fill_running_ = false;
  mediator::Vgpu* victim_vgpu_ = nullptr;
  std::unique_ptr<driver::Port> victim_port_;
  std::unique_ptr<driver::Device> victim_dev_;
  std::unique_ptr<driver::Context> victim_ctx_;
  driver::Buffer small_{}, big_{}, work_{};
  uint64_t victim_small_gaddr_ = 0, victim_big_gaddr_ = 0;
  std::vector<uint32_t> small_words_, big_words_;
  std::vector<std::byte> victim_ram_copy_;
  std::optional<driver::Fence> victim_fence_;
  uint32_t round_ = 0;
  size_t victim_errors_ = 0;
};

// The operations of an input (guest_ops.cc decodes them).
enum class Op {
  reg_write,
  reg_read,
  bar_write,
  bar_read,
  pramin_write,
  fill,
  copy,
  launch,
  spin,
  wait,
  pushbuf,
  gp_entry,
  doorbell,
  pte_write,
  pde_write,
  invalidate,
  pinned_copy,
  pv_batch,
  pv_slot_base,
  reset,
  raw_channel,
  new_context,
  stop,
};
// The opcode byte that selects `op` in `surface`'s mix; none if it has none
// (for the seed writer, mediator/fuzz/make_seeds.cc).
std::optional<uint8_t> opcode(Surface surface, Op op);

// Runs the operations of one input on the attacker (guest_ops.cc).
void run_ops(Surface surface, Attacker& a, Input& in);

}  // namespace vgpu::fuzz
