// SPDX-License-Identifier: GPL-2.0-or-later
// A VM's turn on the GPU, from the scheduler's pick to its end, in one
// place (docs/scheduler.md, "Bounded turns"). The dispatcher picks a
// submission and calls start(); the turn gives the VM's channel its first
// piece (one GPFIFO entry when turns are bounded, a slice of a launch when
// launches are sliced); each time the GPU reports that piece done,
// piece_ran() goes on with the next piece while the turn has time, holds
// the turn open for the VM's next launch, or ends it; a doorbell during
// the turn (rung_in_turn) continues a held turn or rings the next entry
// ahead; stop() ends it from outside (an unbind, a channel error, a
// parked channel). An ended turn is charged to the VM (the dispatcher's
// accounting) and whatever its channel has left is requeued.
//
// The turn decides; the channels act (channels/shadow_channels.h: they
// ring pieces, resume a launch held between slices and requeue). The host
// owns the GPU and routes its reports here; its watchdog calls
// check_held() when hold_deadline_ns() is due.
//
// Threads: any thread may call in, holding no vGPU lock. Lock order: the
// hold's mutex, then a vGPU's (it is taken through MediatorLock where a
// vGPU is called under it: a channel event that a physical ring flushes
// must wait until it is released, since its handler, piece_ran, takes it).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "mediator/think_time.h"
#include "mediator/turn_slice.h"
#include "scheduler/dispatcher.h"

namespace vgpu::mediator {

// A VM's turn on the GPU began or ended (HostConfig::on_turn). Why it
// ended: its channel ran dry (its held turn included), its slice ran out
// with work left (that work is requeued), the channel stopped (unbound,
// parked in a semaphore acquire), a channel error, or the dispatch found
// nothing to run.
enum class TurnEnd { drained, out_of_time, stopped, error, empty };
struct TurnEvent {
  uint32_t vm = 0;
  bool start = false;
  TurnEnd end = TurnEnd::drained;  // ends only
  uint64_t gpu_ns = 0;             // ends only: the GPU time the turn was charged
};

// How turns went (docs/scheduler.md, "Turn hold"): turns started, and of
// the ends, those at the slice's end and those of a turn that ran dry with
// nothing held for it (no other VM waiting, or holds off); held turns a
// launch went on with, and held turns that ran out. Other ends: a stopped
// or parked channel.
struct TurnCounts {
  uint64_t started = 0, out_of_time = 0, dry = 0;
  uint64_t holds_kept = 0, holds_expired = 0;
  // Turns that ended at their bound in the host's work for the VM (its
  // shadow sync) before the next piece could run, charged to it.
  uint64_t host_work = 0;
};

// What a turn does to one VM's channels (a vGPU, under its lock; a fake
// in the turn's tests). ShadowChannels documents each.
class TurnChannels {
 public:
  // What a dispatch did: rang the channel's first piece, found nothing to
  // run, or ran out of its host budget (host_budget_ns of the host's own
  // work for the VM, its shadow sync: 0, no bound) before it could ring;
  // the rest of that work goes on at its next dispatch.
  enum class Dispatch { ran, nothing, host_work_left };
  virtual Dispatch dispatch(uint32_t gchid, uint64_t seq, uint64_t host_budget_ns) = 0;
  virtual Dispatch continue_turn(uint32_t gchid, uint64_t host_budget_ns) = 0;
  virtual bool ring_ahead(uint32_t gchid, uint64_t host_budget_ns) = 0;
  virtual bool piece_pending(uint32_t gchid) const = 0;
  virtual bool in_turn_of(uint32_t gchid, uint64_t seq) const = 0;
  virtual void end_turn(uint32_t gchid) = 0;
  virtual void piece_done(uint32_t gchid) = 0;

 protected:
  ~TurnChannels() = default;
};

class Turn final : public sched::Engine {
 public:
  struct Config {
    uint64_t turn_ns = 0;                           // HostConfig::turn_ns (0: a turn runs up to GP_PUT)
    uint64_t hold_ns = 0;                           // HostConfig::turn_hold_ns (0: no hold)
    uint64_t hold_max_ns = 0;                       // HostConfig::turn_hold_max_ns
    bool ring_ahead = false;                        // HostConfig::ring_ahead
    bool real_clock = false;                        // holds need real time
    std::function<void(const TurnEvent&)> on_turn;  // HostConfig::on_turn
  };
  // Who else a turn needs: the VMs' channels by VM id (null: gone), the
  // clock, the host's watchdog (a hold's end was set), the host's log.
  struct Deps {
    std::function<std::shared_ptr<TurnChannels>(uint32_t vm)> find;
    std::function<uint64_t()> now_ns;
    std::function<void()> wake_watchdog;
    std::function<void(const char* doing, const char* what)> internal_failure;
  };
  Turn(Config config, Deps deps) : config_(std::move(config)), deps_(std::move(deps)), slice_(config_.turn_ns) {}

  // The dispatcher whose engine this is (before its first dispatch).
  void attach(sched::Dispatcher& dispatcher) { dispatcher_ = &dispatcher; }

  bool bounded() const { return slice_.bounded(); }

  // sched::Engine: the scheduler picked `s`; its first piece goes to the GPU.
  void start(const sched::Submission& s) override;
  // A piece of the turn on the GPU ran (the channel went idle, or a launch
  // stopped at a slice boundary): ring the next one while the turn's
  // slice lasts, hold the turn, or end it.
  void piece_ran(TurnChannels& vm, uint32_t vm_id, uint32_t gchid, uint64_t start_ns, uint64_t end_ns, bool at_slice);
  // A doorbell of `vm`'s channel brought work during its turn: a turn
  // held open for it goes on with that work; a turn whose piece is still
  // on the GPU may ring the next entry behind it (Config::ring_ahead).
  void rung_in_turn(uint32_t vm, uint32_t gchid);
  // Ends the turn of the submission on the GPU if it matches `m` (an
  // unbind, a channel error, a channel parked in an acquire).
  void stop(const sched::Dispatcher::Match& m, std::optional<uint64_t> start_ns, uint64_t end_ns,
            TurnEnd reason = TurnEnd::stopped) {
    end(m, start_ns, end_ns, nullptr, reason);
  }
  // A turn held open after its channel ran dry ends when its time is up;
  // when that is (the watchdog's next wake), if one is held.
  void check_held();
  std::optional<uint64_t> hold_deadline_ns();

  // A VM's new submission arrived (the host's submit, before the
  // scheduler has it): if its channel had run dry, one think-time gap.
  void came_back(uint32_t vm);
  // The VM is gone: its think time too.
  void forget(uint32_t vm);
  // What the turn hold knows of a VM's think time (docs/scheduler.md).
  struct Think {
    uint64_t mean_ns = 0, deviation_ns = 0, samples = 0, hold_ns = 0;
  };
  Think think(uint32_t vm);

  TurnCounts counts() const;

 private:
  void end_empty(const sched::Submission& s, bool told);
  // The host time a turn that started at start_ns has left at now_ns (0:
  // no bound, the turn is unbounded; at least 1 ns otherwise).
  uint64_t budget_ns(uint64_t start_ns, uint64_t now_ns, uint64_t length_ns) const;
  // rung_in_turn with no held turn (hold_mutex_ held, so that piece_ran
  // decides the same turn before or after, never during).
  void ring_ahead(uint32_t vm, uint32_t gchid);
  // Ends the turn of the submission on the GPU if it matches `m`; the VM
  // requeues what its channel has left. why: the count of the reason it
  // ends, when it ends the turn in flight.
  void end(const sched::Dispatcher::Match& m, std::optional<uint64_t> start_ns, uint64_t end_ns,
           std::atomic<uint64_t>* why, TurnEnd reason);

  const Config config_;
  const Deps deps_;
  sched::Dispatcher* dispatcher_ = nullptr;
  TurnSlice slice_;  // the event-handling thread's
  // The turn held open for its VM's next launch, if any. A held turn goes
  // on (continue_turn) under hold_mutex_, so that a doorbell either finds
  // the hold or its work is seen by piece_ran.
  struct Held {
    uint32_t vm, gchid;
    uint64_t seq, turn_start_ns, until_ns;
  };
  std::mutex hold_mutex_;
  std::optional<Held> held_;
  // Each VM's think time, from its channels' dry ends to its next launch
  // (under hold_mutex_); a hold lasts about that long.
  std::unordered_map<uint32_t, ThinkTime> think_;
  uint64_t hold_for(uint32_t vm) const;  // hold_mutex_ held
  // The longest gap a think time counts (a longer one counts as this).
  uint64_t think_cap_ns() const { return 2 * config_.hold_max_ns; }
  // The turn that piece_ran or the held turn's end decided to end, until
  // the scheduler has it: no entry is rung ahead for it meanwhile.
  std::optional<sched::Dispatcher::Match> ending_;
  std::atomic<uint64_t> started_{0}, out_of_time_{0}, dry_{0}, holds_kept_{0}, holds_expired_{0}, host_work_{0};
};

}  // namespace vgpu::mediator
