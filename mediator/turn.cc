// SPDX-License-Identifier: GPL-2.0-or-later
// A turn, top to bottom: start, pieces, ringing ahead, the hold, the end
// and its accounting (mediator/turn.h).
#include "mediator/turn.h"

#include <algorithm>
#include <utility>

#include "mediator/lock.h"

namespace vgpu::mediator {

// The dispatcher's seam: whatever goes wrong here must not leave the
// submission in flight, or the GPU is lost to every VM. The observer
// hears of the turn before its work is on the GPU, so that the turn's end
// (possibly on another thread) comes after its start.
void Turn::start(const sched::Submission& s) {
  bool told = false;
  try {
    std::shared_ptr<TurnChannels> v = deps_.find(s.vm);
    if (v && config_.on_turn) {
      config_.on_turn({.vm = s.vm, .start = true});
      told = true;
    }
    // The host's work for the VM before its first piece (its shadow sync)
    // is bounded by the turn: what is left goes on in its next turn, and
    // this one is charged for it.
    const uint64_t start_ns = deps_.now_ns();
    const auto got = v ? v->dispatch(s.channel, s.seq, slice_.length(s.turn_ns)) : TurnChannels::Dispatch::nothing;
    if (got == TurnChannels::Dispatch::ran)
      started_.fetch_add(1);
    else if (got == TurnChannels::Dispatch::host_work_left)
      end({s.vm, s.channel, s.seq}, start_ns, deps_.now_ns(), &host_work_, TurnEnd::out_of_time);
    else  // nothing to run (or the VM went away while its work was queued): the turn is over at once
      end_empty(s, told);
  } catch (const std::exception& e) {
    deps_.internal_failure("starting a submission", e.what());
    end_empty(s, told);
  }
}

void Turn::piece_ran(TurnChannels& v, uint32_t vm, uint32_t gchid, uint64_t start_ns, uint64_t end_ns, bool at_slice) {
  const auto flight = dispatcher_->in_flight();
  // A piece of an earlier turn (a parked piece, released; or one whose end
  // is handled after its turn ended and the channel's next submission is
  // in flight but not yet dispatched): the rest waits for the scheduler.
  if (!flight || flight->submission.vm != vm || flight->submission.channel != gchid ||
      !v.in_turn_of(gchid, flight->submission.seq)) {
    v.piece_done(gchid);
    return;
  }
  const uint64_t seq = flight->submission.seq;
  const uint64_t turn_start = slice_.piece_ran(vm, seq, start_ns);
  // An unbounded turn goes on through a launch's slices (it ends when the
  // channel is idle); a bounded one while its time lasts.
  const uint64_t length = flight->submission.turn_ns;  // the scheduler's length for this turn
  const bool go_on = (at_slice && !slice_.bounded()) || slice_.has_time(turn_start, end_ns, length);
  bool holding = false, host_left = false;
  {
    MediatorLock hold(hold_mutex_);
    // An entry rung ahead after this piece's end: the turn goes on, and
    // that entry's end decides it.
    if (!at_slice && v.piece_pending(gchid)) return;
    if (!at_slice) think_[vm].ran_dry(end_ns);
    if (go_on) {
      const auto got = v.continue_turn(gchid, budget_ns(turn_start, end_ns, length));
      if (got == TurnChannels::Dispatch::ran) return;
      host_left = got == TurnChannels::Dispatch::host_work_left;  // the turn's time went on the host's work
    }
    // Dry with time left while another VM waits: hold the turn for this
    // VM's next launch (with no one waiting, ending it costs nothing: the
    // next launch is dispatched at once).
    holding = go_on && !host_left && !at_slice && config_.hold_ns > 0 && config_.real_clock &&
              dispatcher_->any_queued();
    if (holding)
      held_ = Held{vm, gchid, seq, turn_start, std::min(turn_start + slice_.length(length), end_ns + hold_for(vm))};
    else
      ending_ = sched::Dispatcher::Match{vm, gchid, seq};
  }
  if (host_left) {
    end({vm, gchid, seq}, turn_start, deps_.now_ns(), &host_work_, TurnEnd::out_of_time);
  } else if (!holding) {
    end({vm, gchid, seq}, turn_start, end_ns, go_on ? &dry_ : &out_of_time_,
        go_on ? TurnEnd::drained : TurnEnd::out_of_time);
  }
  if (!holding) return;
  deps_.wake_watchdog();  // it times the hold's end
}

void Turn::rung_in_turn(uint32_t vm, uint32_t gchid) {
  Held h;
  {
    MediatorLock hold(hold_mutex_);
    if (!held_ || held_->vm != vm || held_->gchid != gchid) return ring_ahead(vm, gchid);
    h = *std::exchange(held_, std::nullopt);
    std::shared_ptr<TurnChannels> v = deps_.find(vm);
    const uint64_t now = deps_.now_ns();
    think_[vm].came_back(now, think_cap_ns());
    const uint64_t left = h.until_ns > now ? h.until_ns - now : 1;
    if (v && v->continue_turn(gchid, slice_.bounded() ? left : 0) == TurnChannels::Dispatch::ran) {
      holds_kept_.fetch_add(1);
      return;
    }
    ending_ = sched::Dispatcher::Match{h.vm, h.gchid, h.seq};
  }
  end({h.vm, h.gchid, h.seq}, h.turn_start_ns, deps_.now_ns(), nullptr, TurnEnd::drained);
}

// The turn of the submission in flight is this channel's, nothing decided
// to end it, its slice has time (counted from the dispatch, before its
// first piece started) and no other VM waits: ring the next entry now. A
// VM that arrives after this waits for that entry too: the bound on its
// wait grows by one entry (docs/scheduler.md).
void Turn::ring_ahead(uint32_t vm, uint32_t gchid) {
  if (!config_.ring_ahead || !slice_.bounded()) return;
  const auto flight = dispatcher_->in_flight();
  if (!flight || flight->submission.vm != vm || flight->submission.channel != gchid) return;
  if (ending_ && ending_->vm == vm && ending_->channel == gchid && ending_->seq == flight->submission.seq) return;
  const uint64_t length = flight->submission.turn_ns;
  if (!slice_.has_time(flight->dispatched_ns, deps_.now_ns(), length) || dispatcher_->any_queued()) return;
  if (std::shared_ptr<TurnChannels> v = deps_.find(vm))
    (void)v->ring_ahead(gchid, budget_ns(flight->dispatched_ns, deps_.now_ns(), length));
}

uint64_t Turn::budget_ns(uint64_t start_ns, uint64_t now_ns, uint64_t length_ns) const {
  if (!slice_.bounded()) return 0;
  const uint64_t used = now_ns > start_ns ? now_ns - start_ns : 0;
  const uint64_t length = slice_.length(length_ns);
  return used < length ? length - used : 1;
}

// The GPU stayed with the held turn's VM until now: that time is its.
void Turn::check_held() {
  Held h;
  {
    std::lock_guard hold(hold_mutex_);
    if (!held_ || deps_.now_ns() < held_->until_ns) return;
    h = *std::exchange(held_, std::nullopt);
    ending_ = sched::Dispatcher::Match{h.vm, h.gchid, h.seq};
    holds_expired_.fetch_add(1);
  }
  end({h.vm, h.gchid, h.seq}, h.turn_start_ns, deps_.now_ns(), nullptr, TurnEnd::drained);
}

uint64_t Turn::hold_for(uint32_t vm) const {
  const auto it = think_.find(vm);
  return it == think_.end() ? config_.hold_ns : it->second.hold_ns(config_.hold_ns, config_.hold_max_ns);
}

void Turn::came_back(uint32_t vm) {
  std::lock_guard hold(hold_mutex_);
  if (const auto it = think_.find(vm); it != think_.end()) it->second.came_back(deps_.now_ns(), think_cap_ns());
}

void Turn::forget(uint32_t vm) {
  std::lock_guard hold(hold_mutex_);
  think_.erase(vm);
}

Turn::Think Turn::think(uint32_t vm) {
  std::lock_guard hold(hold_mutex_);
  const auto it = think_.find(vm);
  if (it == think_.end()) return {.hold_ns = config_.hold_ns};
  const ThinkTime& t = it->second;
  return {t.mean_ns(), t.deviation_ns(), t.samples(), hold_for(vm)};
}

std::optional<uint64_t> Turn::hold_deadline_ns() {
  std::lock_guard hold(hold_mutex_);
  if (!held_) return std::nullopt;
  return held_->until_ns;
}

// The dispatcher charges the turn to its VM, the VM's channel requeues
// what it has left, and only then does the dispatcher pick the next turn:
// that pick may run another VM's host work on this thread for a whole
// turn, and then pick again, so a requeue after it left this VM out of
// those picks (a victim waited three turns of another VM's shadow sync).
//
// The callbacks capture one pointer (to `c`): a std::function holds that
// in place, where three references each cost it an allocation and a free
// on every turn's end.
void Turn::end(const sched::Dispatcher::Match& m, std::optional<uint64_t> start_ns, uint64_t end_ns,
               std::atomic<uint64_t>* why, TurnEnd reason) {
  const struct {
    const Turn& turn;
    const sched::Dispatcher::Match& m;
    std::atomic<uint64_t>* why;
    TurnEnd reason;
  } c{*this, m, why, reason};
  const auto tell = [&c](uint64_t gpu_ns) {
    c.turn.config_.on_turn({.vm = c.m.vm, .end = c.reason, .gpu_ns = gpu_ns});
  };
  const auto requeue = [&c] {
    if (c.why) c.why->fetch_add(1);
    if (std::shared_ptr<TurnChannels> v = c.turn.deps_.find(c.m.vm)) v->end_turn(c.m.channel);
  };
  if (!dispatcher_->complete_if(m, start_ns, end_ns, config_.on_turn ? tell : sched::Dispatcher::Ended{}, requeue)) {
    // That turn was ended meanwhile by another path (the watchdog, an
    // unbind): this end is the one that requeues what the channel has
    // left, or nothing would.
    if (std::shared_ptr<TurnChannels> v = deps_.find(m.vm)) v->piece_done(m.channel);
    return;
  }
}

// The dispatch found nothing to run: the turn ends at once (told: its start was).
void Turn::end_empty(const sched::Submission& s, bool told) {
  const uint64_t now = deps_.now_ns();
  const auto tell = [&](uint64_t) { config_.on_turn({.vm = s.vm, .end = TurnEnd::empty}); };
  (void)dispatcher_->complete_if({s.vm, s.channel, s.seq}, now, now, told ? tell : sched::Dispatcher::Ended{});
}

TurnCounts Turn::counts() const {
  return {started_.load(),    out_of_time_.load(),   dry_.load(),
          holds_kept_.load(), holds_expired_.load(), host_work_.load()};
}

}  // namespace vgpu::mediator
