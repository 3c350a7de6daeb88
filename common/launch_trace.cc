// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/launch_trace.h"

#include <algorithm>
#include <chrono>
#include <mutex>

namespace vgpu {

namespace {

constexpr size_t PHASES = static_cast<size_t>(LaunchPhase::count);
// The first this many launches are kept (16 offsets of 8 bytes each: 13 MB).
constexpr uint64_t MAX_KEPT_LAUNCHES = 100'000;

constexpr std::array<std::string_view, PHASES> NAMES = {
    "api_entry",     "doorbell",    "doorbell_seen", "pfifo_busy", "pfifo_idle",  "pfifo_pass",      "pfifo_woke",
    "gpfifo_fetch",  "launch_read", "launch_built",  "job_queued", "job_started", "device_prepared", "device_launched",
    "device_synced", "job_done",    "result_seen",   "release",    "interrupt",   "delivered",       "wait_return",
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The last time each phase was marked, and the kept offsets.
std::array<std::atomic<int64_t>, PHASES> last{};
std::mutex kept_mutex;
std::array<std::vector<int64_t>, PHASES> kept;
uint64_t kept_launches = 0;

size_t at(LaunchPhase p) { return static_cast<size_t>(p); }

double percentile_us(const std::vector<int64_t>& sorted, size_t num, size_t den) {
  return static_cast<double>(sorted[sorted.size() * num / den]) / 1e3;
}

}  // namespace

std::atomic<bool> LaunchTrace::enabled_{false};

void LaunchTrace::enable(bool on) { enabled_.store(on, std::memory_order_relaxed); }

void LaunchTrace::stamp(LaunchPhase p) { last[at(p)].store(now_ns(), std::memory_order_relaxed); }

void LaunchTrace::stamp_first_after(LaunchPhase p, LaunchPhase after) {
  if (last[at(p)].load(std::memory_order_relaxed) < last[at(after)].load(std::memory_order_relaxed)) stamp(p);
}

void LaunchTrace::launch_waited() {
  if (!enabled()) return;
  stamp(LaunchPhase::wait_return);
  const int64_t origin = last[at(LaunchPhase::doorbell)].load(std::memory_order_relaxed);
  // A kernel launch: the driver's launch call, then its doorbell, then
  // engine work (copies the driver makes on its own are not kept). The
  // call's mark is used once.
  const int64_t call = last[at(LaunchPhase::api_entry)].exchange(0, std::memory_order_relaxed);
  if (origin == 0 || call == 0 || call > origin) return;
  if (last[at(LaunchPhase::job_started)].load(std::memory_order_relaxed) < origin) return;
  std::lock_guard l(kept_mutex);
  if (kept_launches == MAX_KEPT_LAUNCHES) return;
  ++kept_launches;
  for (size_t i = 0; i < PHASES; ++i) {
    // Every phase but the call follows the doorbell (an older mark is
    // another launch's), except PFIFO's doorbell_seen: the physical ring,
    // which a trapped doorbell makes before its own write returns, so it
    // is kept from the call on (negative: the guest's hop split in two),
    // and PFIFO's wake-up after it, which may come before the write returns,
    // and PFIFO's running out of work (the last launch's tail: before the
    // ring if PFIFO waited for it, after if it was still busy), and what
    // PFIFO's loop did around the ring.
    const int64_t t = i == at(LaunchPhase::api_entry) ? call : last[i].load(std::memory_order_relaxed);
    const bool from_call = i >= at(LaunchPhase::doorbell_seen) && i <= at(LaunchPhase::pfifo_woke);
    const int64_t since = from_call ? call : origin;
    if (i == at(LaunchPhase::api_entry) || t >= since) kept[i].push_back(t - origin);
  }
}

std::array<LaunchPhaseFigures, PHASES> LaunchTrace::figures() {
  std::array<LaunchPhaseFigures, PHASES> out{};
  std::lock_guard l(kept_mutex);
  for (size_t i = 0; i < PHASES; ++i) {
    out[i].name = NAMES[i];
    std::vector<int64_t> v = kept[i];
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    out[i].samples = v.size();
    out[i].p10_us = percentile_us(v, 1, 10);
    out[i].p50_us = percentile_us(v, 1, 2);
    out[i].p90_us = percentile_us(v, 9, 10);
  }
  return out;
}

uint64_t LaunchTrace::launches() {
  std::lock_guard l(kept_mutex);
  return kept_launches;
}

void LaunchTrace::reset() {
  std::lock_guard l(kept_mutex);
  for (auto& v : kept) v.clear();
  for (auto& t : last) t.store(0, std::memory_order_relaxed);
  kept_launches = 0;
}

std::string_view LaunchTrace::name(LaunchPhase p) { return NAMES[at(p)]; }

}  // namespace vgpu
