// SPDX-License-Identifier: GPL-2.0-or-later
// A PFIFO channel in two parts: the slot (channel-table registers and
// status, guarded by the model lock, seen by MMIO) and the run state
// (loaded context, push-buffer decoder, bound objects), owned by the PFIFO
// thread alone.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "gpu/engines/class_object.h"
#include "gpu/pushbuf.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {

struct ChannelSlot {
  // Registers.
  uint32_t inst = 0;   // CHAN_INST
  uint32_t state = 0;  // CHAN_STATE writable bits (runnable, engine)
  uint32_t error = 0;  // CHAN_ERROR code
  uint32_t error_method = 0;
  uint32_t error_addr_lo = 0;
  uint32_t error_addr_hi = 0;
  // Scheduling.
  uint64_t epoch = 0;    // bumped on bind and reset: the run state must be reloaded
  bool stopped = false;  // stopped by an error until rebound
  // Mirrors of the run state, for CHAN_STATE and wait_idle.
  bool acquire_pending = false;
  bool busy = false;  // work fetched, executing, or blocked
  bool loaded = false;
  uint64_t userd = 0;
  uint32_t gp_get = 0;
  // Engine work in flight, and its result once the engine thread posts it.
  bool engine_outstanding = false;
  uint64_t engine_epoch = 0;
  std::optional<MethodDone> engine_result;
  // Kernel slicing (CHAN_SLICE): a mirror of the run's hold at a slice
  // boundary, and whether GP_PUT was written since.
  bool held = false;
  bool resume = false;
};

struct ChannelRun {
  uint64_t epoch = ~uint64_t{0};  // the slot epoch this state was loaded for
  bool loaded = false;

  // Loaded from the instance block and RAMFC.
  uint64_t inst = 0;
  uint64_t userd = 0;
  uint64_t gp_base = 0;
  uint32_t gp_entries = 0;
  uint32_t gp_get = 0;
  uint32_t acquire = 0;  // RAMFC ACQUIRE
  std::unique_ptr<ChannelContext> ctx;
  std::array<std::unique_ptr<ClassObject>, regs::NUM_SUBCHANNELS> objects;

  // The segment being executed: its length, the next word, the command in
  // progress. Its words are fetched in windows of at most
  // Pfifo::SEGMENT_WINDOW_WORDS, so a channel holds a bounded amount of
  // host memory whatever the entry's length (up to 8 MiB).
  bool in_segment = false;
  uint64_t segment_va = 0;
  uint32_t segment_words = 0;
  std::vector<uint32_t> window;
  uint32_t window_start = 0;  // segment word index of window[0]
  uint32_t pos = 0;
  std::optional<pushbuf::Command> command;
  uint32_t command_done = 0;    // methods of the command already executed
  uint64_t command_va = 0;      // VA of its header
  uint32_t command_header = 0;  // its header word, as fetched (a migration image carries it)

  // Host-class (906F) method state.
  uint32_t sem_a = 0;
  uint32_t sem_b = 0;
  uint32_t sem_c = 0;
  uint32_t mem_op_a = 0;

  // Blocked in a semaphore acquire.
  bool parked = false;
  uint64_t parked_since_ns = 0;
  uint64_t parked_sem_epoch = 0;
  uint64_t parked_poll_round = 0;

  // Waiting for engine work of the current method.
  bool engine_wait = false;
  // The release after that work, which its engine was asked to write from
  // the GPU (FollowingRelease), and, once the work is done, the one it
  // wrote: the release itself then writes nothing.
  std::optional<FollowingRelease> following;
  std::optional<FollowingRelease> released_early;
  // The current method's divided engine work with pieces left (§10.5):
  // `held` at a slice boundary until GP_PUT is written, else `next_piece`
  // waits for PFIFO's next turn of the channel.
  std::shared_ptr<DividedWork> divided;
  EngineId divided_engine = EngineId::compute;
  bool held = false;
  bool next_piece = false;
  // Divided work restored from a migration image (channel_image.h) before
  // the channel was loaded: its object makes it again at the load.
  std::optional<WorkState> restored_work;
  // Engine time of the current operation, all its pieces (CHAN_WATCHDOG).
  uint64_t op_engine_ns = 0;

  // Busy period, for the idle event.
  bool busy = false;
  uint64_t busy_start_ns = 0;
};

}  // namespace vgpu::gpu
