// SPDX-License-Identifier: GPL-2.0-or-later
// The guest's side of the live migration test (scripts/migration-test,
// docs/migration.md §12): a chain of GPU jobs that runs for a while, so
// that the VM moves to another QEMU while it runs, and checks afterwards
// that no job was lost or run twice and that the device still works.
//
// Job k is one saxpy, y = 1 * x + y with x all ones: it reads job k-1's
// output, and after k jobs every y[i] is exactly k (floats are exact up to
// 2^24). Beside each batch a fill writes the batch number into every float
// of a VRAM buffer of vgpu_chain_mib MiB (default 16), so that pre-copy
// has device-written pages to send again. After each batch the guest waits
// for it and checks all of y and one float per 4 KiB page of the fill
// buffer. With vgpu_chain_spin_ms each batch also spins that long (a
// launch the GPU runs in slices; a stop between two slices is refused, as
// the image cannot carry it yet). It prints a heartbeat line per second of
// guest time (per vgpu_chain_beat_ms: scripts/migration-bench times the
// lines' arrival on the host for the longest stall the guest saw), and runs
// vgpu_chain_s seconds (default 20); jobs submitted after the move are the
// destination's own launches. migration_idle is the figures' idle guest:
// the fill buffer written once, no GPU work while the VM moves, then the
// buffer checked and one batch run; with vgpu_chain_beat_ms it prints a
// heartbeat that often while idle.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "conformance.h"
#include "gpu_env.h"
#include "harness.h"

namespace vgpu::guest {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t CHAIN_N = 16384;  // floats of y (and x)
constexpr uint32_t JOBS_PER_BATCH = 32;
constexpr uint32_t PAGE_FLOATS = 4096 / sizeof(float);
constexpr uint32_t CHECK_CHUNK_FLOATS = (4u << 20) / sizeof(float);  // the fill buffer read back 4 MiB at a time
constexpr uint32_t DEFAULT_SECONDS = 20;
constexpr uint32_t DEFAULT_FILL_MIB = 16;
constexpr uint32_t DEFAULT_BEAT_MS = 1000;

uint32_t env_or(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const unsigned long n = std::strtoul(v, &end, 10);
  return *end == '\0' && n > 0 ? static_cast<uint32_t>(n) : fallback;
}

struct ChainState {
  driver::Buffer x{}, y{}, fill{};
  uint32_t fill_floats = 0;
  uint64_t jobs = 0;     // submitted and checked
  uint64_t spin_ns = 0;  // vgpu_chain_spin_ms: a spin per batch (a launch the GPU runs in slices)
};

// x all ones, y all zeros, and the fill buffer of vgpu_chain_mib MiB.
Status open_chain(driver::Context& ctx, ChainState& c) {
  c.fill_floats = env_or("vgpu_chain_mib", DEFAULT_FILL_MIB) * (1u << 20) / sizeof(float);
  if (std::getenv("vgpu_chain_spin_ms") != nullptr) c.spin_ns = uint64_t{env_or("vgpu_chain_spin_ms", 0)} * 1'000'000;
  auto x = upload_new(ctx, std::vector<float>(CHAIN_N, 1.0f));
  auto y = upload_new(ctx, std::vector<float>(CHAIN_N, 0.0f));
  auto fill = ctx.alloc(uint64_t{c.fill_floats} * sizeof(float));
  if (!x || !y || !fill) return std::unexpected(!x ? x.error() : !y ? y.error() : fill.error());
  c.x = *x;
  c.y = *y;
  c.fill = *fill;
  return {};
}

// The fill buffer holds mark in one float of every 4 KiB page: read back
// in chunks (the buffer may be larger than the guest's RAM).
Status check_fill(driver::Context& ctx, const ChainState& c, float mark, const std::string& when) {
  std::vector<float> chunk(CHECK_CHUNK_FLOATS);
  for (uint32_t at = 0; at < c.fill_floats; at += CHECK_CHUNK_FLOATS) {
    const uint32_t n = std::min(CHECK_CHUNK_FLOATS, c.fill_floats - at);
    const std::span<float> part(chunk.data(), n);
    if (Status s = ctx.download(c.fill, uint64_t{at} * sizeof(float), std::as_writable_bytes(part)); !s) return s;
    for (uint32_t i = 0; i < n; i += PAGE_FLOATS)
      if (chunk[i] != mark)
        return check(false, when + ": the fill buffer's page " + std::to_string((at + i) / PAGE_FLOATS) + " holds " +
                                fixed(chunk[i], 1) + ", not " + fixed(mark, 1));
  }
  return {};
}

// One batch: JOBS_PER_BATCH chained saxpys and a fill of the big buffer
// with the batch's number, then the check of both.
Status run_batch(driver::Context& ctx, ChainState& c, uint32_t batch) {
  for (uint32_t j = 0; j < JOBS_PER_BATCH; ++j)
    if (auto f = ctx.saxpy({c.x, c.y, CHAIN_N, 1.0f}); !f) return std::unexpected(f.error().context("saxpy"));
  if (c.spin_ns > 0)
    if (auto f = ctx.spin({c.spin_ns}); !f) return std::unexpected(f.error().context("spin"));
  const float mark = static_cast<float>(batch);
  if (auto f = ctx.fill({c.fill, c.fill_floats, mark}); !f) return std::unexpected(f.error().context("fill"));
  if (Status s = ctx.synchronize(); !s) return s;
  c.jobs += JOBS_PER_BATCH;
  auto y = download_all(ctx, c.y, CHAIN_N);
  if (!y) return std::unexpected(y.error());
  for (uint32_t i = 0; i < CHAIN_N; ++i)
    if ((*y)[i] != static_cast<float>(c.jobs))
      return check(false, "after " + std::to_string(c.jobs) + " jobs y[" + std::to_string(i) +
                              "] = " + fixed((*y)[i], 1) + " (a job lost or run twice)");
  return check_fill(ctx, c, mark, "batch " + std::to_string(batch));
}

Status migration_chain() {
  const uint32_t seconds = env_or("vgpu_chain_s", DEFAULT_SECONDS);
  const auto beat_every = std::chrono::milliseconds(env_or("vgpu_chain_beat_ms", DEFAULT_BEAT_MS));
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  ChainState c;
  if (Status s = open_chain(*g->ctx, c); !s) return s;
  const auto start = Clock::now();
  auto beat = start;
  for (uint32_t batch = 1; Clock::now() - start < std::chrono::seconds(seconds); ++batch) {
    if (Status s = run_batch(*g->ctx, c, batch); !s)
      return std::unexpected(s.error().context("batch " + std::to_string(batch)));
    if (Clock::now() - beat >= beat_every) {
      beat = Clock::now();
      note("chain: " + std::to_string(c.jobs) + " jobs checked");
    }
  }
  note("chain: " + std::to_string(c.jobs) + " jobs in " + std::to_string(seconds) + " s, every result checked");
  return check(c.jobs > 0, "no batch ran");
}

// The idle guest of the figures: the fill buffer written once, then no
// GPU work for vgpu_chain_s seconds (the VM moves meanwhile), then the
// buffer checked and one batch run on whichever QEMU the VM is in now.
Status migration_idle() {
  constexpr float IDLE_MARK = 7.0f;
  const uint32_t seconds = env_or("vgpu_chain_s", DEFAULT_SECONDS);
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  driver::Context& ctx = *g->ctx;
  ChainState c;
  if (Status s = open_chain(ctx, c); !s) return s;
  if (auto f = finish(ctx, ctx.fill({c.fill, c.fill_floats, IDLE_MARK}), "fill"); !f) return f;
  note("idle: " + std::to_string(uint64_t{c.fill_floats} * sizeof(float) >> 20) + " MiB written, idle for " +
       std::to_string(seconds) + " s");
  const uint32_t beat_ms = env_or("vgpu_chain_beat_ms", 0);  // 0: no heartbeat while idle
  const uint32_t nap_ms = beat_ms != 0 ? std::min(beat_ms, DEFAULT_BEAT_MS) : DEFAULT_BEAT_MS;
  const auto start = Clock::now();
  while (Clock::now() - start < std::chrono::seconds(seconds)) {
    struct timespec nap = {nap_ms / 1000, static_cast<long>(nap_ms % 1000) * 1000000};
    nanosleep(&nap, nullptr);
    if (beat_ms != 0) note("idle: beat");
  }
  if (Status s = check_fill(ctx, c, IDLE_MARK, "after the idle time"); !s) return s;
  return run_batch(ctx, c, 1);
}

const TestCase TESTS[] = {
    {"migration_chain", Group::named, migration_chain},
    {"migration_idle", Group::named, migration_idle},
};

}  // namespace

std::span<const TestCase> migration_tests() { return TESTS; }

}  // namespace vgpu::guest
