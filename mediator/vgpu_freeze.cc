// SPDX-License-Identifier: GPL-2.0-or-later
// Quiescing a vGPU for migration (docs/migration.md §4): at a fence
// boundary, with only what the spec has. Nothing here changes what the
// guest sees: the guest's CHAN_STATE, GP_PUT and records stay as they
// are, and a thaw puts the physical channels back as the guest set them.
#include <chrono>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "gpu/device/residency.h"
#include "gpu/gpu.h"
#include "mediator/host.h"
#include "mediator/vgpu.h"

namespace vgpu::mediator {
namespace {

namespace pf = regs::pfifo;
using std::chrono::steady_clock;
constexpr auto POLL = std::chrono::microseconds(100);

}  // namespace

std::optional<uint32_t> Vgpu::busy_channel(bool turns) {
  for (uint32_t c = 0; c < config_.channels; ++c) {
    if (!channels_.bound(c)) continue;
    const uint32_t state = physical_.state(pchid_of(c));
    if (turns) {
      // A piece on the GPU, or rung for it. One parked in a semaphore
      // acquire, or held between two slices of a launch, is at a method
      // boundary and stays there.
      const bool running = channels_.in_turn(c) || channels_.piece_pending(c);
      const bool at_boundary = pf::ChanStateAcquirePending::get(state) || pf::ChanStateSliceHeld::get(state);
      if (running && !at_boundary) return c;
    } else if (pf::ChanStateEngineOutstanding::get(state)) {
      return c;
    }
  }
  return std::nullopt;
}

Status Vgpu::freeze(uint64_t timeout_ns) {
  const auto deadline = steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  {
    MediatorLock lock(mutex_);
    if (frozen_) return {};
    frozen_ = true;  // from here no dispatch, turn or ring ahead starts a piece
  }
  // Polls until no channel is busy in the given sense, or the deadline.
  auto settle = [&](bool turns) -> std::optional<uint32_t> {
    for (;;) {
      std::optional<uint32_t> busy;
      {
        MediatorLock lock(mutex_);
        busy = busy_channel(turns);
      }
      if (!busy || steady_clock::now() >= deadline) return busy;
      std::this_thread::sleep_for(POLL);
    }
  };
  // A launch cut on demand stops at its next slice boundary only when
  // the host asks for the engines: ask while the freeze waits for one.
  struct YieldHold {  // given back also when settle throws
    Host& host;
    explicit YieldHold(Host& h) : host(h) { host.hold_slice_yield(true); }
    ~YieldHold() { host.hold_slice_yield(false); }
  };
  std::optional<uint32_t> busy;
  {
    const YieldHold hold(host_);
    busy = settle(true);
  }
  std::vector<uint32_t> stopped;  // guest channels
  if (!busy) {
    // No piece left to end: stop the physical channels, so that a parked
    // acquire satisfied meanwhile runs nothing, then wait for the engines.
    MediatorLock lock(mutex_);
    for (uint32_t c = 0; c < config_.channels; ++c) {
      if (!channels_.bound(c)) continue;
      physical_.set_runnable(pchid_of(c), false);
      stopped.push_back(c);
    }
  }
  // PFIFO may still be in a stopped channel's slice: its methods (a
  // semaphore release writes guest memory) must be done before QEMU's
  // last RAM sync, and before the engine work they start is waited for.
  for (uint32_t c : stopped) {
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - steady_clock::now());
    if (left.count() <= 0 || !physical_.wait_stopped(pchid_of(c), static_cast<uint64_t>(left.count()))) {
      busy = c;
      break;
    }
  }
  if (!busy) busy = settle(false);
  if (!busy) {
    // Engines idle: what they left on the device alone comes home now,
    // bounded by what they wrote since the last pre-copy write-back.
    (void)write_back(std::numeric_limits<uint64_t>::max());
    return {};
  }
  thaw();
  return fail(Errc::timeout, "vgpu " + config_.name + ": channel " + std::to_string(*busy) +
                                 " still running after the freeze's " + std::to_string(timeout_ns / 1'000'000) +
                                 " ms; the VM runs on");
}

gpu::WriteBack Vgpu::write_back(uint64_t budget) {
  gpu::ResidencyTracker* r = host_.gpu().residency();
  if (!r) return {};
  const shadow::Partition& p = partition();
  return r->write_back(p.base, p.size, budget);
}

uint64_t Vgpu::device_only_bytes() {
  gpu::ResidencyTracker* r = host_.gpu().residency();
  return r ? r->device_only_bytes(partition().base, partition().size) : 0;
}

bool Vgpu::Physical::wait_stopped(uint32_t pchid, uint64_t timeout_ns) {
  return host_.gpu().wait_stopped(pchid, timeout_ns);
}

void Vgpu::thaw() {
  locked([&] {
    if (!frozen_) return;
    frozen_ = false;
    for (uint32_t c = 0; c < config_.channels; ++c) {
      if (!channels_.bound(c)) continue;
      physical_.set_runnable(pchid_of(c), channels_.guest_runnable(c));
      // Work left (entries past GP_PUT given, a launch held between
      // slices) goes back to the scheduler.
      if (!channels_.in_turn(c)) channels_.end_turn(c);
    }
  });
}

bool Vgpu::frozen() const {
  MediatorLock lock(mutex_);
  return frozen_;
}

}  // namespace vgpu::mediator
