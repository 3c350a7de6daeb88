// SPDX-License-Identifier: GPL-2.0-or-later
// User kernels on the model (docs/spec/vgpu.md §10.6): the compute
// object's module slots, LOAD_MODULE's work (read the PTX text through
// the MMU, parse it once per device, initialise the module's data
// segment, write the report) and a launch of a module's entry, run by the
// PTX interpreter (gpu/ptx/) whole or in resumable pieces (slices of
// thread blocks that also stop inside a block), every global access
// translated by the channel's MMU.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpu/engines/class_object.h"
#include "gpu/ptx/interpreter.h"
#include "ptx/module.h"
#include "vgpu/classes.h"

// Every ChannelContext here is the compute engine's view of the channel
// (its accesses fault with unit PGRAPH: compute_object.cc's engine_context).
namespace vgpu::gpu {

// A module in a slot: the parsed text and where its data segment lives.
struct ModuleSlot {
  std::shared_ptr<const ptx::Module> module;
  uint64_t data_va = 0;
  uint64_t source_bytes = 0;
  // The text it was parsed from, as loaded: a migration image carries it
  // and the destination parses it again (docs/migration.md §2).
  std::shared_ptr<const std::string> text;
};

// The modules of one compute object. Methods and their engine work of one
// channel never run at once, so the slots need no lock; the engine work
// holds the table by shared_ptr, so an object destroyed meanwhile (unbind,
// reset) leaves it valid.
struct ModuleSlots {
  // Source bytes the slots may hold together: with MAX_MODULE_SLOTS and
  // the channels a VM has, this bounds the host memory a VM's modules use.
  static constexpr uint64_t MAX_SOURCE_BYTES = uint64_t{8} << 20;

  std::array<ModuleSlot, cls::compute::MAX_MODULE_SLOTS> slots{};
  uint64_t source_bytes = 0;          // of all slots
  std::atomic<uint32_t> sequence{0};  // PtxReport::sequence
};

struct ModuleLoad {
  uint64_t source_va = 0;
  uint32_t source_bytes = 0;
  uint64_t data_va = 0;
  uint64_t data_bytes = 0;
  uint64_t report_va = 0;  // 0: no report
  uint32_t slot = 0;
};

// LOAD_MODULE's engine work. A module the device refuses is reported (the
// channel goes on, as CUDA's module loads fail without harming the
// context); a fault reading the text or writing the data or the report is
// the channel's mmu_fault.
[[nodiscard]] EngineWork load_module_work(const ChannelContext& ctx, std::shared_ptr<ModuleSlots> slots,
                                          const ModuleLoad& load, uint32_t mthd);

// A launch of a module's entry as LAUNCH found it.
struct UserLaunch {
  std::shared_ptr<const ptx::Module> module;
  uint32_t slot = 0;  // where the module is (a device that runs user kernels has it there too)
  uint32_t entry = 0;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;  // dynamic (SET_SHADER_SHARED_MEMORY_SIZE)
  std::vector<std::byte> params;
  uint64_t data_va = 0;
  uint64_t report_va = 0;
  std::shared_ptr<ModuleSlots> slots;  // for the report's sequence
};

// ext: a piece of a sliced user launch yields, at an instruction boundary
// inside its thread block, once it ran this long (engine time; modeled
// cost in virtual time). A fraction of the default turn (30 ms), so a VM
// beside a user kernel of any length waits at most about a turn plus one
// piece (docs/ptx.md, "Resumable runs").
inline constexpr uint64_t USER_PIECE_NS = 2'000'000;
// How often (warp instructions) a run looks at its bounds.
inline constexpr uint32_t USER_POLL_EVERY = 4096;

// UserPieces::slice_blocks for pieces bounded by time alone.
inline constexpr uint32_t UNBOUNDED_BLOCKS = ~uint32_t{0};

// How a user launch is divided (§10.5).
struct UserPieces {
  // A piece ends after this many more blocks finished (a whole block never
  // needs to fit: pieces also end inside a block); 0: the launch runs in
  // one piece, bounded only by the engine budget and the watchdog.
  uint32_t slice_blocks = 0;
  uint64_t piece_ns = USER_PIECE_NS;  // a piece also yields after this long (0: no time bound)
  // The channel's operation watchdog (CHAN_WATCHDOG, `watchdog-ms`) over
  // all pieces; 0: none. PFIFO counts it and bounds each piece's budget by
  // what is left of it; the launch only names it in its report.
  uint64_t watchdog_ns = 0;
};

// A user launch as resumable pieces. Its LaunchRun (gpu/ptx/interpreter.h)
// keeps the resident block between pieces: warps, registers, PCs, call
// frames, local and shared memory, barrier arrivals, so the pieces compute
// exactly what one run computes. The kept host memory is bounded by
// ptx::ExecLimits::max_state_bytes (32 MiB); a channel has at most one
// launch in flight, so a VM keeps at most its channels times that. It is
// freed when the launch finishes or fails, or when PFIFO drops the work
// (channel error, unbind, reset).
class UserLaunchWork final : public DividedWork {
 public:
  UserLaunchWork(const ChannelContext& ctx, UserLaunch launch, uint32_t mthd, const UserPieces& pieces);
  ~UserLaunchWork() override;

  // One piece: run_for(pieces.piece_ns, budget_ns) (no time bound when
  // slice_blocks is 0).
  [[nodiscard]] MethodDone run_piece(std::optional<uint64_t> budget_ns) override;
  // The seam for a time-sized slicer: runs from where the launch stopped
  // until it finished, `piece_ns` of engine time passed (0: no bound),
  // UserPieces::slice_blocks more blocks finished, or a bound ended it:
  // `budget_ns` (PFIFO's: max-gpu-ms for the piece, within what is left
  // of the channel's watchdog over all pieces; none: no limit), with
  // channel error timeout and the report.
  [[nodiscard]] MethodDone run_for(uint64_t piece_ns, std::optional<uint64_t> budget_ns);
  bool finished() const override;
  uint64_t state_bytes() const;  // host bytes kept between pieces now
  uint64_t engine_ns() const { return spent_ns_; }

 private:
  MethodDone finish(MethodDone result);

  ChannelContext ctx_;
  UserLaunch launch_;
  uint32_t mthd_;
  UserPieces pieces_;
  std::unique_ptr<ptx::LaunchRun> run_;
  uint64_t spent_ns_ = 0;  // engine time of the pieces so far
  // The first piece's engine budget (set once the first piece ran).
  std::optional<std::optional<uint64_t>> first_budget_;
  // Whether a run that ran out of `budget_ns` was ended by the watchdog.
  [[nodiscard]] bool by_watchdog(std::optional<uint64_t> budget_ns) const;
  bool done_ = false;
};

// The launch's engine work: one piece (slice_blocks 0) or resumable pieces
// of at most `slice_blocks` blocks and USER_PIECE_NS each, or, with a timed
// CHAN_SLICE (ctx.slice_ns, slice-blocks auto), pieces of ctx.slice_ns
// each; the watchdog in force. A failure writes the report and stops the channel:
// mmu_fault (the faulting VA), timeout, or kernel_error (trap, misaligned
// access, out-of-range shared or local access, a launch bound).
[[nodiscard]] EngineWork user_launch_work(const ChannelContext& ctx, UserLaunch launch, uint32_t mthd,
                                          uint32_t slice_blocks);
[[nodiscard]] EngineWork user_launch_work(const ChannelContext& ctx, UserLaunch launch, uint32_t mthd,
                                          const UserPieces& pieces);

// Writes a report at `va` (0: none) with the slots' next sequence number.
[[nodiscard]] MethodDone write_report(ChannelContext& ctx, uint64_t va, cls::PtxReport report, ModuleSlots& slots,
                                      uint32_t mthd);
cls::PtxReport make_report(cls::PtxStatus status, uint32_t line, uint64_t addr, std::string_view message);

}  // namespace vgpu::gpu
