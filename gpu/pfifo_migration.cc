// SPDX-License-Identifier: GPL-2.0-or-later
// A channel's run state out of PFIFO and back, for migration
// (docs/migration.md M4; the image itself is channel_image.h).
#include <chrono>
#include <string>
#include <utility>

#include "gpu/pfifo.h"

namespace vgpu::gpu {
namespace {

constexpr auto SERVICE_END_WAIT = std::chrono::seconds(1);
constexpr auto SERVICE_POLL = std::chrono::milliseconds(1);
constexpr uint64_t NS_PER_US = 1000;
constexpr uint64_t NS_PER_MS = 1'000'000;

}  // namespace

// The channel is idle for the PFIFO thread: it may not pick it (not
// runnable), is not in it, and no engine runs its work; runs_[chid] is then
// read and written here under the model lock, which the thread takes before
// it picks a channel.
Result<ChannelImage> Pfifo::save_channel(uint32_t chid) {
  if (chid >= regs::NUM_CHANNELS) return vgpu::fail(Errc::invalid_argument, "vgpu: no channel " + std::to_string(chid));
  std::unique_lock l(d_.mutex);
  wait_out_of_service(l, chid, std::chrono::steady_clock::now() + SERVICE_END_WAIT);
  const ChannelSlot& s = channels_[chid];
  if (channels_.ready(chid) || servicing_ == chid || s.engine_outstanding)
    return vgpu::fail(Errc::invalid_argument,
                      "vgpu: migration of channel " + std::to_string(chid) + ": it is not stopped");
  // A run of an older bind has nothing to carry; one restored into this
  // bind and not loaded yet (a destination moved on before it ran) is
  // carried as restored.
  const ChannelRun& run = runs_[chid];
  if (run.epoch != s.epoch) return ChannelImage{};
  return save_channel_run(chid, run);
}

// A channel made unrunnable may still be in the slice the thread was
// running: that slice ends within SLICE_METHODS methods (host methods such
// as a semaphore release, which writes memory, run in it), and the thread
// does not pick the channel again.
bool Pfifo::wait_out_of_service(std::unique_lock<std::mutex>& l, uint32_t chid,
                                std::chrono::steady_clock::time_point deadline) {
  while (servicing_ == chid && !channels_.ready(chid) && std::chrono::steady_clock::now() < deadline)
    idle_cv_.wait_for(l, SERVICE_POLL);
  return servicing_ != chid;
}

bool Pfifo::wait_stopped(uint32_t chid, uint64_t timeout_ns) {
  if (chid >= regs::NUM_CHANNELS) return false;
  std::unique_lock l(d_.mutex);
  return !channels_.ready(chid) &&
         wait_out_of_service(l, chid, std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns));
}

Status Pfifo::restore_channel(uint32_t chid, const ChannelImage& image) {
  if (chid >= regs::NUM_CHANNELS) return vgpu::fail(Errc::invalid_argument, "vgpu: no channel " + std::to_string(chid));
  std::lock_guard l(d_.mutex);
  const ChannelSlot& s = channels_[chid];
  ChannelRun& run = runs_[chid];
  if (channels_.ready(chid) || servicing_ == chid || s.engine_outstanding || (run.loaded && run.epoch == s.epoch))
    return vgpu::fail(Errc::invalid_argument,
                      "vgpu: migration of channel " + std::to_string(chid) + ": it has run since its bind");
  ChannelRun next;
  next.epoch = s.epoch;
  if (Status r = restore_channel_run(chid, next, image); !r) return r;
  if (next.restored_work) {
    // This channel's CHAN_SLICE decides, as at a slice boundary here: held
    // for the host (the mediator's thaw gives it a turn) or the next piece
    // at PFIFO's next turn of it.
    const bool hold = regs::pfifo::ChanSliceHold::get(chan_slice_[chid].load()) != 0;
    next.held = hold;
    next.next_piece = !hold;
    ChannelSlot& slot = channels_[chid];
    slot.held = hold;
    slot.resume = false;
  }
  run = std::move(next);
  return {};
}

// The method's context as begin_operation sets it (this channel's
// CHAN_SLICE and watchdog; the work's own slice travels in its state),
// without starting a new operation: the watchdog goes on counting.
Pfifo::Ran Pfifo::take_up_restored(uint32_t chid, ChannelRun& run) {
  run.busy = true;
  run.busy_start_ns = d_.clock.now_ns();
  if (!run.restored_work) return {};
  const WorkState work = *std::exchange(run.restored_work, std::nullopt);
  const pushbuf::Command cmd = *run.command;  // restore_channel_run checked both
  const uint32_t mthd = pushbuf::method_of(cmd, run.command_done);
  ClassObject* object = run.objects[cmd.subch].get();
  const uint32_t slice = chan_slice_[chid].load();
  const bool timed = regs::pfifo::ChanSliceTimed::get(slice);
  run.ctx->slice_blocks = timed ? 0 : regs::pfifo::ChanSliceBlocks::get(slice);
  run.ctx->slice_ns = timed ? uint64_t{regs::pfifo::ChanSliceBlocks::get(slice)} * NS_PER_US : 0;
  run.ctx->slice_yield = timed && regs::pfifo::ChanSliceOnDemand::get(slice) ? &slice_yield_ : nullptr;
  run.ctx->watchdog_ns = uint64_t{chan_watchdog_[chid].load()} * NS_PER_MS;
  std::optional<EngineWork> made = object ? object->restore_work(*run.ctx, mthd, work) : std::nullopt;
  if (!made || !made->divided)
    return std::unexpected(ChannelFault{regs::ChannelError::bad_program, mthd, cmd.subch, run.command_va, {}});
  run.divided = std::move(made->divided);
  run.divided_engine = made->engine;
  return {};
}

}  // namespace vgpu::gpu
