// SPDX-License-Identifier: GPL-2.0-or-later
// Host <-> VRAM bandwidth through the driver's three transfer paths: a
// BAR1 mapping of the buffer itself (memcpy on a direct mapping, or 32-bit
// accesses where the port gives none), the copy engine through the
// context's staging buffer, and the copy engine straight from/to pinned
// host memory (DMA through sysmem PTEs; the host span is a pinned buffer,
// as cudaMemcpy from cudaMallocHost memory). Copy-engine rows also time a
// host memcpy of the same size (the ceiling for any host<->VRAM copy) and
// the same bytes copied through one staging-sized bounce buffer (the CPU
// alone doing what the staged path does). Each row forces its path with
// DeviceOptions::direct_transfer_max; the workload checks from the
// context's transfer statistics that its timed transfers took that path.
// Timed: each run's upload() or download() call, after one untimed
// transfer of the same kind (its time is in the detail). Checked: the
// bytes round-trip unchanged.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "common/text.h"
#include "testbed/workloads/suite.h"
#include "testbed/workloads/support.h"

namespace vgpu::testbed::workloads {
namespace {

constexpr int64_t ALWAYS_DIRECT = int64_t{256} * 1024 * 1024;  // BAR1's size: every transfer direct
constexpr int64_t NEVER_DIRECT = 0;                            // every transfer through the copy engine

const char* path_name(Path p) {
  switch (p) {
    case Path::bar1: return "BAR1";
    case Path::copy_engine: return "copy engine";
    case Path::pinned: return "copy engine from/to pinned memory";
  }
  return "?";
}

// Host copies of `bytes` between distinct buffers, median seconds of
// `runs` (at least 3) each: one memcpy, and the same bytes through one
// `bounce`-byte buffer, chunk by chunk (source -> bounce -> destination:
// the CPU-only shape of the staged path, whose bounce stays in cache).
struct HostCopy {
  double memcpy_s;
  double bounced_s;
};
HostCopy host_copy_seconds(uint64_t bytes, uint64_t bounce, uint32_t runs) {
  std::vector<std::byte> a(bytes, std::byte{1}), b(bytes), mid(bounce);
  std::memset(b.data(), 0, bytes);
  std::vector<double> direct, bounced;
  for (uint32_t i = 0; i < std::max(runs, 3u); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    direct.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    t0 = std::chrono::steady_clock::now();
    for (uint64_t done = 0; done < bytes; done += bounce) {
      const uint64_t n = std::min(bounce, bytes - done);
      std::memcpy(mid.data(), a.data() + done, n);
      std::memcpy(b.data() + done, mid.data(), n);
    }
    bounced.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return {median(direct), median(bounced)};
}

uint64_t transfer_bytes(const WorkloadOptions& o) {
  if (o.bandwidth_bytes != 0) return o.bandwidth_bytes;
  return o.reduced ? 4 * MiB : 64 * MiB;
}

// The host's own copies of the same bytes beside the engine's (copy
// engine and pinned paths): memcpy, and a copy through a staging-sized bounce.
std::string host_copy_detail(uint64_t bytes, uint64_t staging_bytes, Path path, double med, uint32_t runs) {
  const uint64_t chunk = std::max<uint64_t>(staging_bytes, 4096);
  const HostCopy hc = host_copy_seconds(bytes, chunk, runs);
  const double gbs = static_cast<double>(bytes) * 1e-9;
  std::string d;
  if (path == Path::pinned)
    d = strfmt("; host memcpy %.2f GB/s, pinned/memcpy %.2f", gbs / hc.memcpy_s, med > 0 ? hc.memcpy_s / med : 0.0);
  else
    d = strfmt("; %lu chunks of %lu B, %.1f us each; host memcpy %.2f GB/s", (bytes + chunk - 1) / chunk, chunk,
               med / static_cast<double>((bytes + chunk - 1) / chunk) * 1e6, gbs / hc.memcpy_s);
  return d + strfmt("; host copy through a %lu B bounce %.2f GB/s (bounce/memcpy time %.2f)", chunk, gbs / hc.bounced_s,
                    hc.bounced_s / hc.memcpy_s);
}

Result<WorkloadResult> run_bandwidth(Vm& vm, const WorkloadOptions& o, Dir dir, Path path) {
  const uint64_t bytes = transfer_bytes(o) & ~uint64_t{3};
  auto ctx = vm.device.create_context();
  if (!ctx) return std::unexpected(ctx.error());
  driver::Context& c = **ctx;
  const auto data = random_floats(bytes / sizeof(float), o.seed);
  const auto src = std::as_bytes(std::span<const float>(data));
  std::vector<std::byte> back_vec;
  std::span<std::byte> back;
  std::span<const std::byte> from = src;
  if (path == Path::pinned) {  // the host side is pinned memory
    auto p = c.alloc_host(bytes);
    if (!p) return std::unexpected(p.error().context("bandwidth pinned buffer"));
    auto host = c.host_data(*p);
    if (!host) return std::unexpected(host.error());
    back = *host;
    std::memcpy(back.data(), src.data(), bytes);
    from = back;
  } else {
    back_vec.resize(bytes);
    back = back_vec;
  }
  auto buf = c.alloc(bytes);
  if (!buf) return std::unexpected(buf.error().context("bandwidth buffer"));
  if (dir == Dir::d2h)
    if (auto st = c.upload(*buf, 0, src); !st) return std::unexpected(st.error());
  const auto transfer = [&] { return dir == Dir::h2d ? c.upload(*buf, 0, from) : c.download(*buf, 0, back); };
  // One untimed transfer of the timed kind first, as seed 000 times copies
  // between buffers already in use: the first touch of the buffer's VRAM
  // pages (host page faults behind the model's VRAM) and, in fv modes, the
  // shadowing of the buffers' new mappings at the first doorbell after
  // them are allocation costs, reported beside the figure, not in it.
  const double w0 = now_s();
  if (auto st = transfer(); !st) return std::unexpected(st.error().context("untimed first transfer"));
  const double first_s = now_s() - w0;

  WorkloadResult r;
  const driver::TransferStats before = c.transfer_stats();
  bool all_equal = true;
  const Status ran = timed_runs(
      o, r,
      [&](uint32_t) -> Result<uint32_t> {
        if (Status st = transfer(); !st) return std::unexpected(st.error());
        return 0u;  // a transfer's copies are counted by the driver's statistics, not as launches
      },
      [&](uint32_t) -> Status {
        if (dir == Dir::d2h) all_equal = all_equal && std::memcmp(back.data(), src.data(), bytes) == 0;
        return {};
      });
  if (!ran) return std::unexpected(ran.error());
  const driver::TransferStats after = c.transfer_stats();
  const uint64_t direct = after.direct_bytes - before.direct_bytes;
  const uint64_t staged = after.staged_bytes - before.staged_bytes;
  const uint64_t pinned = after.pinned_bytes - before.pinned_bytes;
  const uint64_t timed = bytes * o.runs;
  const bool path_ok = path == Path::bar1          ? direct == timed && staged == 0 && pinned == 0
                       : path == Path::copy_engine ? staged == timed && direct == 0 && pinned == 0
                                                   : pinned == timed && direct == 0 && staged == 0;

  if (dir == Dir::h2d) {
    if (path == Path::pinned) std::memset(back.data(), 0, bytes);
    if (auto st = c.download(*buf, 0, back); !st) return std::unexpected(st.error());
    all_equal = std::memcmp(back.data(), src.data(), bytes) == 0;
  }
  r.correct = all_equal && path_ok;
  r.checksum = hash_bytes(back);
  r.work_per_run = static_cast<double>(bytes);
  r.work_unit = "byte";
  const double med = median(r.seconds);
  r.detail = strfmt("%.1f MiB %s via %s, %.2f GB/s; %s; path %s (direct %lu B, staged %lu B, pinned %lu B)",
                    static_cast<double>(bytes) / static_cast<double>(MiB),
                    dir == Dir::h2d ? "host->VRAM" : "VRAM->host", path_name(path),
                    med > 0 ? static_cast<double>(bytes) / med * 1e-9 : 0.0,
                    all_equal ? "bytes round-trip" : "BYTES DIFFER", path_ok ? "ok" : "WRONG", direct, staged, pinned);
  r.detail += strfmt("; untimed first transfer %.2f ms", first_s * 1e3);
  if (path != Path::bar1) r.detail += host_copy_detail(bytes, vm.device.options().staging_bytes, path, med, o.runs);
  return r;
}

}  // namespace

WorkloadSpec bandwidth(std::string_view name, Dir dir, Path path, uint32_t runs, std::string_view what) {
  return {name, [dir, path](Vm& vm, const WorkloadOptions& o) { return run_bandwidth(vm, o, dir, path); }, runs,
          std::string(what), path == Path::bar1 ? ALWAYS_DIRECT : NEVER_DIRECT};
}

}  // namespace vgpu::testbed::workloads
