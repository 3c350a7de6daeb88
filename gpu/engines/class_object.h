// SPDX-License-Identifier: GPL-2.0-or-later
// The seam between PFIFO (which fetches and decodes push buffers) and the
// objects bound to subchannels by SET_OBJECT (copy 0x90B5, compute 0x90C0).
// PFIFO delivers each non-host method to the bound object in order. A
// method either completes at once or hands back engine work, which PFIFO
// runs on that engine's own thread; the channel waits for it before its
// next method, while other channels go on.
#pragma once

#include <atomic>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "gpu/kernels/kernels.h"
#include "gpu/mem/mmu.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {

struct DeviceEngines;  // gpu/engines/device_work.h
class ModuleCache;     // gpu/engines/module_cache.h

enum class EngineId : uint8_t { copy = 0, compute = 1 };

// Why a channel stops: the code for CHAN_ERROR, the method, and details.
struct ChannelFault {
  regs::ChannelError code;
  uint32_t method = 0;  // byte address of the offending method
  uint32_t subch = 0;
  uint64_t addr = 0;         // faulting or offending address, if any
  std::optional<Fault> mmu;  // set when code == mmu_fault
};

// A one-word semaphore release that directly follows a method's engine
// work in the push buffer (the driver's fence; PFIFO looks it up before
// the method runs). A device back end writes it from the GPU right after
// the work, with no host thread in between, and then stores `token` in
// `*written`; PFIFO's own execution of that release writes nothing more
// (docs/cuda.md, "Fences").
struct FollowingRelease {
  uint64_t va = 0;
  uint32_t payload = 0;
  uint64_t token = 0;
  std::atomic<uint64_t>* written = nullptr;
};

// What an object may use while running a method of one channel.
struct ChannelContext {
  uint32_t chid;
  AccessContext as;  // the channel's address space
  Mmu& mmu;
  Clock& clock;
  const kernels::CostModel& cost;
  // Raise the channel's non-stall interrupt (NONSTALL_PENDING, PFIFO intr).
  std::function<void()> nonstall;
  // A semaphore was written: wake channels blocked in an acquire.
  std::function<void()> semaphore_written;
  // ext: how long engine work started by this method may run (one job:
  // ENGINE_TIMEOUT, within what is left of the operation's CHAN_WATCHDOG);
  // none: no limit.
  std::optional<uint64_t> engine_budget_ns;
  // ext: the channel's CHAN_SLICE blocks: a compute launch of more thread
  // blocks runs in slices of this many (§10.5); 0: whole (or timed).
  uint32_t slice_blocks = 0;
  // ext: the channel's timed CHAN_SLICE: launches and copies run in pieces
  // of about this much engine time, sized from the work's measured speed
  // (§10.5); 0: not timed.
  uint64_t slice_ns = 0;
  // ext: an on-demand timed CHAN_SLICE (§10.5): PFIFO's SLICE_YIELD, which
  // engine work reads at its unit boundaries; null: pieces end at their time.
  const std::atomic<uint32_t>* slice_yield = nullptr;
  // Whether a piece that has had its time must end now: not on demand, or
  // the host asks for the engine.
  bool yield_requested() const {
    return slice_yield == nullptr ||
           regs::pfifo::SliceYieldRequest::get(slice_yield->load(std::memory_order_relaxed)) != 0;
  }
  // ext: the channel's CHAN_WATCHDOG in ns: the most engine time one
  // operation may use over all its pieces (work that keeps its own count,
  // a user launch, says so in its report); 0: none.
  uint64_t watchdog_ns = 0;
  // The device that runs copies and kernels (docs/cuda.md); none: the
  // model runs them on host views of VRAM.
  DeviceEngines* device = nullptr;
  // Parsed PTX modules shared by the device's channels (§10.6); none: the
  // object parses every module it loads.
  ModuleCache* modules = nullptr;
  // Set by PFIFO for the method it runs, with a device back end only.
  std::optional<FollowingRelease> following_release;
};

using MethodDone = std::expected<void, ChannelFault>;

// Engine work done in pieces (a launch in slices of thread blocks,
// docs/spec/vgpu.md §10.5): PFIFO runs one piece per engine job and,
// between pieces, may stop the channel and resume it later. Pieces run
// one at a time, never concurrently.
// Divided work between two pieces as a migration image carries it
// (docs/migration.md §2, "Divided launch between pieces"): the kind (the
// object's own tag for its work) and its state in that kind's one field
// list: the launch's parameters as the channel had them and the next piece.
struct WorkState {
  uint32_t kind = 0;
  std::vector<uint8_t> bytes;
  bool operator==(const WorkState&) const = default;
};

class DividedWork {
 public:
  virtual ~DividedWork() = default;
  // The next piece, with budget_ns of engine time left for it (none: no limit).
  [[nodiscard]] virtual MethodDone run_piece(std::optional<uint64_t> budget_ns) = 0;
  virtual bool finished() const = 0;
  // Between pieces: the work's state for a migration image; nullopt when
  // its kind cannot travel (a user launch keeps a resident thread block).
  virtual std::optional<WorkState> save_progress() const { return std::nullopt; }
};

// Work for an engine thread. It returns when the work is done (in virtual
// time it charges its modeled cost to the clock). Divisible work comes as
// `divided` instead of `run`.
struct EngineWork {
  EngineId engine;
  std::function<MethodDone()> run;
  std::shared_ptr<DividedWork> divided = {};
  // Brief work (a few microseconds of host time at most, on the model's
  // own views of VRAM): PFIFO may run it itself while the engine is idle,
  // sparing two thread hand-overs (to the engine and back), which cost more
  // than the work (docs/runtime.md, "Launch latency").
  bool brief = false;
};

// The most modeled work (beyond the fixed launch cost) and the most bytes
// a copy may have to be brief.
inline constexpr uint64_t BRIEF_WORK_NS = 64;
inline constexpr uint64_t BRIEF_COPY_BYTES = 4096;

using MethodOutcome = std::expected<std::optional<EngineWork>, ChannelFault>;

class ClassObject {
 public:
  virtual ~ClassObject() = default;
  virtual uint32_t class_id() const = 0;
  // One method (byte address >= fmt::mthd::HOST_METHOD_END) and its data.
  [[nodiscard]] virtual MethodOutcome method(ChannelContext& ctx, uint32_t mthd, uint32_t data) = 0;
  // The same method once per word of `data` (a non-incrementing run),
  // done at once where the object can with the outcome of doing it word
  // by word and no engine work; nullopt, with nothing done: deliver the
  // words one by one. A launch's arguments are a dozen such words, each
  // a trip through PFIFO and the MMU (230 ns a word on the H100 host).
  [[nodiscard]] virtual std::optional<MethodOutcome> method_words(ChannelContext&, uint32_t /*mthd*/,
                                                                  std::span<const uint32_t> /*data*/) {
    return std::nullopt;
  }
  // Whether the method may return engine work: PFIFO looks for the fence
  // that follows such a method only (ChannelContext::following_release).
  virtual bool may_start_work(uint32_t /*mthd*/) const { return true; }
  // Migration (docs/migration.md M4, object_image.cc): the state the
  // object's methods latched, in one fixed field order. nullopt: the object
  // holds state the image cannot carry yet (a loaded PTX module).
  virtual std::optional<std::vector<uint8_t>> save_state() const { return std::nullopt; }
  // Takes saved state into a new object: the whole of it or, refused
  // (false, nothing changed), bytes that are cut, left over, or hold a value
  // no method of the class could have latched.
  [[nodiscard]] virtual bool restore_state(std::span<const uint8_t> /*bytes*/) { return false; }
  // Divided work of method `mthd` in a migration image: why this object
  // refuses it (a kind it does not make, a cut or long state, a launch its
  // methods would have refused, progress past the end), or nullopt.
  [[nodiscard]] virtual std::optional<std::string> check_work(uint32_t /*mthd*/, const WorkState& /*work*/) const {
    return "its class has no divided work that travels";
  }
  // The work, checked by check_work, made again on the channel's context
  // (the slice fields as PFIFO sets them for a method); it goes on with
  // the next piece (`divided`, on its engine).
  [[nodiscard]] virtual std::optional<EngineWork> restore_work(const ChannelContext& /*ctx*/, uint32_t /*mthd*/,
                                                               const WorkState& /*work*/) {
    return std::nullopt;
  }
};

// Factories; nullptr for a class the device does not have.
std::unique_ptr<ClassObject> make_class_object(uint32_t class_id);

// Write a semaphore release: one word (payload) or four words
// (payload, 0, 64-bit timestamp). Shared by the host, copy and compute classes.
[[nodiscard]] MethodDone release_semaphore(ChannelContext& ctx, uint64_t va, uint32_t payload, bool four_words,
                                           uint32_t method);

}  // namespace vgpu::gpu
