// SPDX-License-Identifier: GPL-2.0-or-later
// Guest-sized workloads: the GPU work runs on the host's model at full
// speed, so sizes are those of a small benchmark; the guest CPU (emulated)
// only prepares inputs and checks results against gpu/kernels/reference.h
// on a sample (row slices for sgemm) or on the whole output where cheap.
// Each prints its figures as an indented note under its PASS line.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "conformance.h"
#include "gpu/kernels/reference.h"
#include "gpu_env.h"
#include "harness.h"

namespace vgpu::guest {
namespace {

namespace ref = gpu::kernels::reference;
using driver::Buffer;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// C = A * B for 256 x 256 x 256; four 4-row slices checked against the reference.
Status wl_sgemm_256() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  driver::Context& ctx = *g->ctx;
  const uint32_t m = 256, n = 256, k = 256;
  auto a = random_floats(m * k, 31), b = random_floats(k * n, 32);
  auto ba = upload_new(ctx, a), bb = upload_new(ctx, b);
  auto bc = ctx.alloc(size_t{m} * n * sizeof(float));
  if (!ba || !bb || !bc) return std::unexpected(!ba ? ba.error() : !bb ? bb.error() : bc.error());
  const auto t0 = Clock::now();
  if (auto ok = finish(ctx, ctx.sgemm({*ba, *bb, *bc, m, n, k, 1.0f, 0.0f}), "sgemm 256^3"); !ok) return ok;
  const double s = seconds_since(t0);
  auto c = download_all(ctx, *bc, size_t{m} * n);
  if (!c) return std::unexpected(c.error());
  const uint32_t slice = 4;
  for (uint32_t row : {0u, 84u, 168u, m - slice}) {
    std::vector<float> want(size_t{slice} * n);
    ref::sgemm(cls::SgemmArgs{0, 0, 0, slice, n, k, 1.0f, 0.0f, 0}, a.data() + size_t{row} * k, b.data(), want.data());
    const std::span<const float> got(c->data() + size_t{row} * n, want.size());
    if (auto ok = compare(got, want, 1e-4f, ("sgemm rows " + std::to_string(row)).c_str()); !ok) return ok;
  }
  note("sgemm 256x256x256: " + fixed(s * 1e3, 2) + " ms launch to fence, " + fixed(2.0 * m * n * k / s / 1e9, 2) +
       " GFLOP/s as the guest sees it");
  return {};
}

// One 3x3 convolution layer, 8 -> 16 channels on 32 x 32, all outputs checked.
Status wl_conv2d_small() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  driver::Context& ctx = *g->ctx;
  const cls::Conv2dArgs args{0, 0, 0, 1, 8, 32, 32, 16, 3, 3, 1, 1, 1, 1, 0};
  auto in = random_floats(size_t{1} * 8 * 32 * 32, 33), filt = random_floats(size_t{16} * 8 * 3 * 3, 34);
  const size_t out_n = size_t{16} * 32 * 32;
  auto bi = upload_new(ctx, in), bf = upload_new(ctx, filt);
  auto bo = ctx.alloc(out_n * sizeof(float));
  if (!bi || !bf || !bo) return std::unexpected(!bi ? bi.error() : !bf ? bf.error() : bo.error());
  driver::Conv2dParams p{*bi,    *bf,    *bo,    args.n,     args.c,     args.h,        args.w,
                         args.k, args.r, args.s, args.pad_h, args.pad_w, args.stride_h, args.stride_w};
  const auto t0 = Clock::now();
  if (auto ok = finish(ctx, ctx.conv2d(p), "conv2d"); !ok) return ok;
  const double s = seconds_since(t0);
  std::vector<float> want(out_n);
  ref::conv2d(args, in.data(), filt.data(), want.data());
  auto got = download_all(ctx, *bo, out_n);
  if (!got) return std::unexpected(got.error());
  note("conv2d 1x8x32x32 * 16x8x3x3: " + fixed(s * 1e3, 2) + " ms launch to fence");
  return compare(*got, want, 1e-4f, "conv2d");
}

// Upload and download `bytes` with the driver's default threshold; checks
// the data and which path carried them; prints MiB/s each way.
Status bandwidth(uint64_t bytes, bool expect_direct) {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  driver::Context& ctx = *g->ctx;
  std::vector<std::byte> src(bytes), dst(bytes);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>((i * 131 + 7) >> 3);
  auto b = ctx.alloc(bytes);
  if (!b) return std::unexpected(b.error());
  auto t0 = Clock::now();
  if (auto ok = ctx.upload(*b, 0, src); !ok) return ok;
  const double up = seconds_since(t0);
  t0 = Clock::now();
  if (auto ok = ctx.download(*b, 0, dst); !ok) return ok;
  const double down = seconds_since(t0);
  if (auto ok = check(std::memcmp(src.data(), dst.data(), bytes) == 0, "downloaded bytes differ"); !ok) return ok;
  const driver::TransferStats& st = ctx.transfer_stats();
  const uint64_t path_bytes = expect_direct ? st.direct_bytes : st.staged_bytes;
  if (auto ok = check(path_bytes == 2 * bytes,
                      std::string("expected the ") + (expect_direct ? "BAR1 path" : "copy engine") + " to carry " +
                          std::to_string(2 * bytes) + " bytes, it carried " + std::to_string(path_bytes));
      !ok)
    return ok;
  const double mib = static_cast<double>(bytes) / static_cast<double>(MiB);
  note(fixed(mib, 1) + " MiB via " + (expect_direct ? "BAR1 direct" : "copy engine") + ": upload " +
       fixed(mib / up, 1) + " MiB/s, download " + fixed(mib / down, 1) + " MiB/s");
  return {};
}

Status wl_bandwidth_bar1_64kib() { return bandwidth(64 * KiB, true); }
Status wl_bandwidth_ce_4mib() { return bandwidth(4 * MiB, false); }

// LOOP: 20 spins of 5 ms queued back to back, then one synchronize; the
// GPU timer must cover them all.
Status wl_loop_spins() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  const uint64_t each = 5'000'000, count = 20;
  const uint64_t t0 = g->dev->time_ns();
  const auto w0 = Clock::now();
  for (uint64_t i = 0; i < count; ++i) {
    if (auto f = g->ctx->spin({each}); !f) return std::unexpected(f.error().context("spin " + std::to_string(i)));
  }
  if (auto ok = g->ctx->synchronize(); !ok) return ok;
  const uint64_t gpu_ns = g->dev->time_ns() - t0;
  note(std::to_string(count) + " spins of 5 ms: " + fixed(static_cast<double>(gpu_ns) / 1e6, 1) + " ms GPU time, " +
       fixed(seconds_since(w0) * 1e3, 1) + " ms guest time");
  return check(gpu_ns >= each * count, "20 spins of 5 ms finished after " + std::to_string(gpu_ns) + " ns of GPU time");
}

// launch: a fill of one element launched and waited for, one at a time,
// after a warm-up; p50 and p99 of launch to fence, and how the port waits
// (VFIO interrupts or libpciaccess polling).
Status wl_launch_latency() {
  constexpr uint32_t WARM_UP = 50, LAUNCHES = 1000;
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  driver::Context& ctx = *g->ctx;
  auto buf = ctx.alloc(sizeof(float));
  if (!buf) return std::unexpected(buf.error());
  std::vector<double> us;
  for (uint32_t i = 0; i < WARM_UP + LAUNCHES; ++i) {
    const auto t0 = Clock::now();
    if (auto ok = finish(ctx, ctx.fill({*buf, 1, static_cast<float>(i)}), "fill"); !ok) return ok;
    if (i >= WARM_UP) us.push_back(seconds_since(t0) * 1e6);
  }
  std::sort(us.begin(), us.end());
  auto port = gpu_port();
  note(std::to_string(LAUNCHES) + " launches of a 1-element fill: p50 " + fixed(us[us.size() / 2], 1) + " us, p99 " +
       fixed(us[us.size() * 99 / 100], 1) + " us; port " + (port ? (*port)->name() : std::string("?")));
  float last = -1;
  if (auto ok = ctx.download(*buf, std::span(&last, 1)); !ok) return ok;
  return check(last == static_cast<float>(WARM_UP + LAUNCHES - 1), "the last fill's value is missing");
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// A 300 ms spin, waited for: with interrupts (VFIO) the waiting thread
// sleeps until the fence's message, so it uses (almost) no CPU and the
// non-stall count moves; on the libpciaccess fallback it polls, and its CPU
// share is a figure only (docs/runtime.md).
Status wl_idle_wait() {
  constexpr uint64_t SPIN_NS = 300'000'000;
  // Of the wait, when waiting on interrupts: measured 0.4-0.5% (one run under
  // load 6%); polling the same wait takes about 37%.
  constexpr double MAX_CPU_SHARE = 0.15;
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  auto port = gpu_port();
  if (!port) return std::unexpected(port.error());
  const bool irq = (*port)->has_interrupts();
  const IrqCounts before = (*port)->interrupt_counts();
  auto f = g->ctx->spin({SPIN_NS});
  if (!f) return std::unexpected(f.error());
  const double cpu0 = thread_cpu_seconds();
  const auto t0 = Clock::now();
  if (auto ok = g->ctx->wait(*f); !ok) return ok;
  const double wall = seconds_since(t0), share = (thread_cpu_seconds() - cpu0) / wall;
  const uint64_t messages = irq_count((*port)->interrupt_counts(), regs::pci::MsiVector::nonstall) -
                            irq_count(before, regs::pci::MsiVector::nonstall);
  note("wait " + fixed(wall * 1e3, 1) + " ms, CPU " + fixed(share * 100, 2) + "% of it, " + std::to_string(messages) +
       " non-stall message(s); " + (irq ? "interrupts" : "polling (no interrupt path: figure only)"));
  if (!irq) return {};
  if (auto ok = check(messages >= 1, "no non-stall message arrived during the wait"); !ok) return ok;
  return check(share <= MAX_CPU_SHARE, "the waiting thread used " + fixed(share * 100, 2) + "% of a CPU");
}

// Spin kernels of vgpu_spin_ms (default 1) back to back, one outstanding,
// for vgpu_spin_s seconds (default 25): a VM of the scheduler's share
// experiments (scripts/bench daemon-guests). A figure, not a check.
Status bench_spin_stream() {
  auto env = [](const char* name, double dflt) {
    const char* v = std::getenv(name);
    return v ? std::atof(v) : dflt;
  };
  const double ms = env("vgpu_spin_ms", 1), seconds = env("vgpu_spin_s", 25);
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  const auto w0 = Clock::now();
  uint64_t kernels = 0;
  while (seconds_since(w0) < seconds) {
    auto f = g->ctx->spin({static_cast<uint64_t>(ms * 1e6)});
    if (!f) return std::unexpected(f.error());
    if (auto ok = g->ctx->wait(*f); !ok) return ok;
    ++kernels;
  }
  note(std::to_string(kernels) + " spins of " + fixed(ms, 1) + " ms in " + fixed(seconds_since(w0), 1) + " s");
  return {};
}

constexpr TestCase TESTS[] = {
    {"wl_sgemm_256", Group::workload, wl_sgemm_256},
    {"wl_conv2d_small", Group::workload, wl_conv2d_small},
    {"wl_bandwidth_bar1_64kib", Group::workload, wl_bandwidth_bar1_64kib},
    {"wl_bandwidth_ce_4mib", Group::workload, wl_bandwidth_ce_4mib},
    {"wl_loop_spins", Group::workload, wl_loop_spins},
    {"wl_launch_latency", Group::workload, wl_launch_latency},
    {"wl_idle_wait", Group::workload, wl_idle_wait},
    {"bench_spin_stream", Group::bench, bench_spin_stream},
};

}  // namespace

std::span<const TestCase> workload_tests() { return TESTS; }

}  // namespace vgpu::guest
