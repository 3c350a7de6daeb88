// SPDX-License-Identifier: GPL-2.0-or-later
// Where a launch's time goes, from the guest driver's call to its fence
// wait's return: named phases marked with the host's monotonic clock along
// the whole path (driver, PFIFO, engine thread, device work, semaphore,
// interrupt), collected per waited launch as offsets from its doorbell.
// Off unless enabled (then a mark is one relaxed load); meant for one
// launch in flight at a time, as `vgpu-bench workloads --trace-launches`
// runs them (docs/benchmarks.md, "Launch phases").
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

namespace vgpu {

enum class LaunchPhase : uint8_t {
  api_entry,      // the driver's kernel launch call began (before the doorbell: negative)
  doorbell,       // GP_PUT written: the origin of every offset
  doorbell_seen,  // PFIFO was told of it (fv modes: the mediator's physical ring, inside the trap: negative)
  pfifo_busy,    // at the physical ring PFIFO was not waiting for work (in a slice or a delivery): samples = such rings
  pfifo_idle,    // PFIFO's loop ran out of work, engines idle (its last slice delivered); kept from the call on
  pfifo_pass,    // PFIFO's loop began a pass, the first time since doorbell_seen
  pfifo_woke,    // PFIFO's loop picked a channel, the first time since doorbell_seen
  gpfifo_fetch,  // PFIFO fetched a GPFIFO entry
  launch_read,   // a method that may start work: its words read from the push buffer, the operation begun
  launch_built,  // that method's object returned engine work (a user launch checked and built)
  job_queued,    // PFIFO handed engine work to an engine thread
  job_started,   // the engine thread took it
  device_prepared,  // device work: buffers placed and made device-valid
  device_launched,  // the library call or kernel launch returned
  device_synced,    // the stream synchronize returned
  job_done,         // the engine work's result is ready for PFIFO
  result_seen,      // PFIFO took the result
  release,          // a host semaphore release was written
  interrupt,        // a non-stall interrupt was raised
  delivered,        // PFIFO delivered a slice's interrupts and events (GpuModel::notify returned)
  wait_return,      // the fence wait returned
  count,
};

struct LaunchPhaseFigures {
  std::string_view name;
  uint64_t samples = 0;
  double p10_us = 0, p50_us = 0, p90_us = 0;  // offsets from the doorbell
};

class LaunchTrace {
 public:
  static void enable(bool on);
  static bool enabled() { return enabled_.load(std::memory_order_relaxed); }
  static void mark(LaunchPhase p) {
    if (enabled()) stamp(p);
  }
  // Marks p only the first time after `after` was marked (a loop that
  // passes p many times a launch: the first pass is the one that answers).
  static void mark_first_after(LaunchPhase p, LaunchPhase after) {
    if (enabled()) stamp_first_after(p, after);
  }
  // The fence wait returned: keeps this launch's offsets if it was a
  // kernel launch (a driver launch call, then the doorbell, then engine
  // work; the driver's own copies and waits for no work are not kept), up
  // to the first 100,000 launches since the last reset.
  static void launch_waited();
  static std::array<LaunchPhaseFigures, static_cast<size_t>(LaunchPhase::count)> figures();
  static uint64_t launches();
  static void reset();
  static std::string_view name(LaunchPhase p);

 private:
  static void stamp(LaunchPhase p);
  static void stamp_first_after(LaunchPhase p, LaunchPhase after);
  static std::atomic<bool> enabled_;
};

}  // namespace vgpu
