// SPDX-License-Identifier: GPL-2.0-or-later
// The costs GPUvm found dominant under full virtualization, as workloads of
// their own: opening the device (bring-up: BAR tables, PFIFO), creating and
// destroying a context (address space, channel), and map/unmap churn
// (buffers of mixed sizes allocated, used, freed). Each checks the device
// still computes correctly afterwards (a fill, downloaded and compared).
#include <array>

#include "common/text.h"
#include "testbed/workloads/suite.h"
#include "testbed/workloads/support.h"

namespace vgpu::testbed::workloads {
namespace {

constexpr uint32_t CHECK_FLOATS = 4096;

// A fill through `c`, downloaded: true when every element is `value`.
Result<bool> fill_check(driver::Context& c, float value, std::vector<float>& out) {
  auto b = c.alloc(CHECK_FLOATS * sizeof(float));
  if (!b) return std::unexpected(b.error());
  auto f = c.fill({*b, CHECK_FLOATS, value});
  if (!f) return std::unexpected(f.error());
  if (auto s = c.wait(*f); !s) return std::unexpected(s.error());
  out.assign(CHECK_FLOATS, 0.f);
  if (auto s = c.download(*b, std::span<float>(out)); !s) return std::unexpected(s.error());
  if (auto s = c.free(*b); !s) return std::unexpected(s.error());
  for (float x : out)
    if (x != value) return false;
  return true;
}

// A new context of `dev` runs a checked fill of `value` (untimed); ok
// stays true while every fill is right.
Status fill_after(driver::Device& dev, float value, std::vector<float>& out, bool& ok) {
  auto ctx = dev.create_context();
  if (!ctx) return std::unexpected(ctx.error());
  auto good = fill_check(**ctx, value, out);
  if (!good) return std::unexpected(good.error());
  ok = ok && *good;
  return {};
}

// The timed part of open and ctx: o.runs runs of `run()`, each timed alone,
// then (untimed) a checked fill of `first + i` in a new context of the
// device the run opened, closed after it, or of the VM's device where the
// run opened none (nullptr). r's times, runs, correct and checksum are
// filled.
template <typename Run>
Status timed_then_filled(Vm& vm, const WorkloadOptions& o, float first, WorkloadResult& r, Run run) {
  std::vector<float> out;
  bool ok = true;
  std::unique_ptr<driver::Device> opened;
  const Status timed = timed_runs(
      o, r,
      [&](uint32_t) -> Result<uint32_t> {
        Result<std::unique_ptr<driver::Device>> dev = run();
        if (!dev) return std::unexpected(dev.error());
        opened = std::move(*dev);
        return 0u;
      },
      [&](uint32_t i) {
        const Status st = fill_after(opened ? *opened : vm.device, first + static_cast<float>(i), out, ok);
        opened.reset();
        return st;
      });
  if (!timed) return timed;
  r.correct = ok;
  r.checksum = hash_of(std::span<const float>(out));
  return {};
}

}  // namespace

// open: Device::open on the VM's port, timed; each opened device is closed
// before the next. The VM's own device (the runner's) is left behind by the
// first reopen and not used again.
Result<WorkloadResult> device_open(Vm& vm, const WorkloadOptions& o) {
  WorkloadResult r;
  const Status timed = timed_then_filled(vm, o, 1.5f, r,
                                         [&] { return driver::Device::open(vm.port, vm.device.options()); });
  if (!timed) return std::unexpected(timed.error());
  r.work_per_run = 1;
  r.work_unit = "open";
  r.detail = strfmt("device open median %.3f ms; a fill after each open %s", median(r.seconds) * 1e3,
                    r.correct ? "correct" : "WRONG");
  return r;
}

// ctx: CONTEXTS context create+destroy pairs per run, timed together; the
// last context of each run also runs a checked fill (untimed).
Result<WorkloadResult> context_churn(Vm& vm, const WorkloadOptions& o) {
  const uint32_t contexts = o.reduced ? 5 : 20;
  WorkloadResult r;
  const Status timed = timed_then_filled(vm, o, 2.5f, r, [&]() -> Result<std::unique_ptr<driver::Device>> {
    for (uint32_t j = 0; j < contexts; ++j) {
      auto ctx = vm.device.create_context();
      if (!ctx) return std::unexpected(ctx.error());
    }
    return nullptr;  // the fill on the VM's device
  });
  if (!timed) return std::unexpected(timed.error());
  r.work_per_run = contexts;
  r.work_unit = "context";
  r.detail = strfmt("%u context create+destroy per run, %.3f ms each; fill after %s", contexts,
                    median(r.seconds) * 1e3 / contexts, r.correct ? "correct" : "WRONG");
  return r;
}

// churn: per run, BUFFERS buffers of mixed sizes allocated (each mapped in
// the context's address space), one fill in every 16th (so the GPU uses
// the new mappings: a lazy shadow syncs then), waited, all freed (each
// unmapped). Checked: every filled buffer's first and last word.
Result<WorkloadResult> map_churn(Vm& vm, const WorkloadOptions& o) {
  constexpr std::array<uint64_t, 5> SIZES{4 * KiB, 64 * KiB, 128 * KiB, 260 * KiB, 1 * MiB};
  const uint32_t buffers = o.reduced ? 16 : 64;
  auto ctx = vm.device.create_context();
  if (!ctx) return std::unexpected(ctx.error());
  driver::Context& c = **ctx;
  WorkloadResult r;
  bool ok = true;
  std::vector<float> seen;
  std::vector<driver::Buffer> bufs;                         // a run's
  std::vector<std::pair<driver::Buffer, uint32_t>> filled;  // a run's, with their floats
  const Status timed = timed_runs(
      o, r,
      [&](uint32_t i) -> Result<uint32_t> {
        std::optional<driver::Fence> last;
        for (uint32_t j = 0; j < buffers; ++j) {
          const uint64_t bytes = SIZES[(j * 7 + i) % SIZES.size()];
          auto b = c.alloc(bytes);
          if (!b) return std::unexpected(b.error());
          bufs.push_back(*b);
          if (j % 16 == 15) {
            const auto count = static_cast<uint32_t>(bytes / sizeof(float));
            auto f = c.fill({*b, count, static_cast<float>(j + i)});
            if (!f) return std::unexpected(f.error());
            last = *f;
            filled.emplace_back(*b, count);
          }
        }
        if (last)
          if (auto s = c.wait(*last); !s) return std::unexpected(s.error());
        // Checked before the frees (outside the time would need the buffers
        // kept; the check reads two words through the driver's transfer path).
        for (auto [b, count] : filled) {
          float first = 0, end = 0;
          if (auto s = c.download(b, 0, std::as_writable_bytes(std::span(&first, 1))); !s)
            return std::unexpected(s.error());
          if (auto s = c.download(b, (count - 1) * sizeof(float), std::as_writable_bytes(std::span(&end, 1))); !s)
            return std::unexpected(s.error());
          seen.push_back(first);
          seen.push_back(end);
        }
        for (auto b : bufs)
          if (auto s = c.free(b); !s) return std::unexpected(s.error());
        return static_cast<uint32_t>(filled.size());  // the fills
      },
      [&](uint32_t i) -> Status {
        for (size_t k = 0; k < filled.size(); ++k) {
          const float want = static_cast<float>(16 * k + 15 + i);
          ok = ok && seen[seen.size() - 2 * filled.size() + 2 * k] == want &&
               seen[seen.size() - 2 * filled.size() + 2 * k + 1] == want;
        }
        bufs.clear();
        filled.clear();
        return {};
      });
  if (!timed) return std::unexpected(timed.error());
  r.correct = ok;
  r.checksum = hash_of(std::span<const float>(seen));
  r.work_per_run = buffers;
  r.work_unit = "buffer";
  r.detail = strfmt("%u buffers of 4 KiB..1 MiB mapped, %u filled, unmapped per run; %.1f us per buffer; %s", buffers,
                    buffers / 16, median(r.seconds) * 1e6 / buffers, ok ? "fills correct" : "FILLS WRONG");
  return r;
}

}  // namespace vgpu::testbed::workloads
