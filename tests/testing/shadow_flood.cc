// SPDX-License-Identifier: GPL-2.0-or-later
#include "tests/testing/shadow_flood.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "driver/runtime.h"
#include "tests/testing/guest_attacker.h"

namespace vgpu::mediator::attack {
namespace {

constexpr uint32_t FILL_FLOATS = 64;

uint64_t since_ns(std::chrono::steady_clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

struct TimedFill {
  uint64_t total_ns = 0;
  WorstFill split;
};

// A fill from launch to fence, in ns, split at the fill call's return;
// `host` (if given) counts the turns that started meanwhile.
Result<TimedFill> timed_fill(driver::Context& ctx, driver::Buffer buf, const Host* host = nullptr) {
  const TurnCounts before = host ? host->turn_counts() : TurnCounts{};
  const auto t0 = std::chrono::steady_clock::now();
  auto f = ctx.fill({buf, FILL_FLOATS, 1.f});
  if (!f) return std::unexpected(f.error());
  const uint64_t launch_ns = since_ns(t0);
  if (Status s = ctx.wait(*f); !s) return std::unexpected(s.error());
  TimedFill out{.total_ns = since_ns(t0), .split = {.launch_ns = launch_ns}};
  out.split.wait_ns = out.total_ns - launch_ns;
  if (host) {
    const TurnCounts after = host->turn_counts();
    out.split.turns_started = after.started - before.started;
    out.split.host_work_turns = after.host_work - before.host_work;
  }
  return out;
}

// Every directory entry of `ctx`'s space past its ring's names the ring's
// small-page table, whose empty entries first get the ring's own PTE: the
// sync then has a valid entry to check and shadow in every one of the
// millions it reads (a scan skips runs of empty entries).
void flood_directory(driver::Port& port, driver::Context& ctx) {
  GuestAttacker raw(port);
  const uint64_t pd = ctx.address_space().vmm().pd_addr();
  const uint64_t ring_va = ctx.channel().gpfifo_va();
  const uint64_t spt = fmt::pde::spt_addr(raw.vram64(GuestAttacker::pde_addr(pd, ring_va)));
  const uint64_t ring_pte = raw.vram64(spt + fmt::SPT.index(ring_va) * fmt::SPT.entry_bytes);
  for (uint64_t e = 0; e < fmt::SPT.entries(); ++e)
    if (raw.vram64(spt + e * fmt::SPT.entry_bytes) == 0) raw.set_vram64(spt + e * fmt::SPT.entry_bytes, ring_pte);
  for (uint32_t i = static_cast<uint32_t>(fmt::PD.index(ring_va)) + 1; i < fmt::PD.entries(); ++i)
    raw.set_vram64(pd + uint64_t{i} * fmt::PD.entry_bytes, fmt::pde::make(spt, 0));
  raw.invalidate(pd);
}

}  // namespace

Result<FloodResult> shadow_flood(const testbed::TestbedConfig& tc) {
  auto tb = testbed::Testbed::create(tc);
  if (!tb) return std::unexpected(tb.error());
  auto dev_a = driver::Device::open((*tb)->port(0));
  auto dev_b = driver::Device::open((*tb)->port(1));
  if (!dev_a || !dev_b) return fail(Errc::device_error, "flood: a device did not open");
  auto ctx_a = (*dev_a)->create_context();
  auto ctx_b = (*dev_b)->create_context();
  if (!ctx_a || !ctx_b) return fail(Errc::device_error, "flood: a context was not created");
  auto a_buf = (*ctx_a)->alloc(fmt::SMALL_PAGE);
  auto b_buf = (*ctx_b)->alloc(FILL_FLOATS * sizeof(float));
  if (!a_buf || !b_buf) return fail(Errc::out_of_memory, "flood: buffers");
  if (auto warm = timed_fill(**ctx_b, *b_buf); !warm) return std::unexpected(warm.error());
  const uint64_t scanned_before = (*tb)->vgpu(0)->counters().entries_scanned;
  flood_directory((*tb)->port(0), **ctx_a);

  FloodResult out;
  std::atomic<bool> done{false};
  Status b_status;
  std::thread b([&] {
    while (!done.load()) {
      auto waited = timed_fill(**ctx_b, *b_buf, (*tb)->host());
      if (!waited) {
        b_status = std::unexpected(waited.error());
        return;
      }
      if (waited->total_ns > out.worst_wait_ns) {
        out.worst_wait_ns = waited->total_ns;
        out.worst = waited->split;
      }
      ++out.fills;
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto f = (*ctx_a)->fill({*a_buf, 16, 1.f});  // its dispatch syncs the flooded directory
  // Its tables past its shadow budget fault: the launch's result does not matter.
  if (f) (void)(*ctx_a)->wait(*f);
  out.flood_ns = since_ns(t0);
  done.store(true);
  b.join();
  if (!f) return std::unexpected(f.error());
  if (!b_status) return std::unexpected(b_status.error());
  out.turns = (*tb)->host()->turn_counts();
  out.entries_scanned = (*tb)->vgpu(0)->counters().entries_scanned - scanned_before;
  out.slice_ns = (*tb)->host()->slice_ns();
  return out;
}

}  // namespace vgpu::mediator::attack
