// SPDX-License-Identifier: GPL-2.0-or-later
#include "testbed/workloads/kernel_io.h"

#include <algorithm>
#include <cstring>

#include "common/enum_names.h"
#include "common/text.h"
#include "testbed/workloads/support.h"
#include "vgpu/bits.h"
#include "vgpu/formats.h"

namespace vgpu::testbed::workloads {
namespace {

constexpr EnumName<InputPath> PATH_NAMES[] = {
    {InputPath::resident, "resident"},
    {InputPath::pageable, "pageable"},
    {InputPath::pinned, "pinned"},
};

}  // namespace

const char* input_path_name(InputPath p) { return name_of(PATH_NAMES, p); }

Result<InputPath> parse_input_path(std::string_view name) {
  if (auto p = value_named(PATH_NAMES, name)) return *p;
  return fail(Errc::invalid_argument, strfmt("'%.*s' is not an input path (resident, pageable, pinned)",
                                             static_cast<int>(name.size()), name.data()));
}

Result<KernelIo> KernelIo::create(driver::Context& ctx, const driver::DeviceOptions& device, InputPath path,
                                  std::vector<std::span<const float>> inputs, size_t out_floats) {
  KernelIo io(ctx, device, path);
  const auto side = [&](std::span<const float> host, uint64_t bytes, const std::string& what) -> Result<Side> {
    Side s;
    s.host = host;
    s.bytes = bytes;
    auto dev = ctx.alloc(bytes);
    if (!dev) return std::unexpected(dev.error().context(what));
    s.device = *dev;
    if (path != InputPath::pinned) return s;
    auto pinned = ctx.alloc_host(bytes);
    if (!pinned) return std::unexpected(pinned.error().context(what));
    s.pinned = *pinned;
    auto view = ctx.host_data(*pinned);
    if (!view) return std::unexpected(view.error().context(what));
    s.pinned_view = *view;
    // Written once here, so no run's DMA is the first touch of its pages.
    if (host.empty())
      std::memset(s.pinned_view.data(), 0, bytes);
    else
      std::memcpy(s.pinned_view.data(), host.data(), bytes);
    return s;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto s = side(inputs[i], inputs[i].size_bytes(), strfmt("input %zu", i));
    if (!s) return std::unexpected(s.error());
    io.inputs_.push_back(*s);
  }
  auto out = side({}, out_floats * sizeof(float), "output");
  if (!out) return std::unexpected(out.error());
  io.output_ = *out;
  if (path == InputPath::pageable) io.out_host_.resize(out_floats);
  // The inputs in VRAM before the first timed run, by the path itself.
  for (const Side& in : io.inputs_) {
    const Status st = path == InputPath::pinned ? ctx.upload_pinned(in.device, 0, in.pinned, 0, in.bytes)
                                                : ctx.upload(in.device, 0, std::as_bytes(in.host));
    if (!st) return std::unexpected(st.error().context("input upload"));
  }
  return io;
}

Status KernelIo::before_launch() {
  const double t0 = now_s();
  for (const Side& in : inputs_) {
    if (path_ == InputPath::pageable) {
      if (auto st = ctx_->upload(in.device, 0, std::as_bytes(in.host)); !st) return st;
    } else if (path_ == InputPath::pinned) {
      if (auto st = ctx_->upload_pinned(in.device, 0, in.pinned, 0, in.bytes); !st) return st;
    }
  }
  in_s_ = now_s() - t0;
  return {};
}

Status KernelIo::after_wait() {
  const double t0 = now_s();
  Status st;
  if (path_ == InputPath::pageable)
    st = ctx_->download(output_.device, 0, std::as_writable_bytes(std::span<float>(out_host_)));
  else if (path_ == InputPath::pinned)
    st = ctx_->download_pinned(output_.pinned, 0, output_.device, 0, output_.bytes);
  transfer_s_.push_back(in_s_ + (now_s() - t0));
  return st;
}

uint64_t KernelIo::launches_for(uint64_t bytes) const {
  if (path_ == InputPath::pinned) return 1;            // one copy-engine copy
  if (bytes <= device_.direct_transfer_max) return 0;  // BAR1: the CPU's stores
  const uint64_t chunk = align_up(std::max<uint64_t>(device_.staging_bytes, fmt::SMALL_PAGE), fmt::SMALL_PAGE);
  return (bytes + chunk - 1) / chunk;  // one staged copy per chunk
}

uint64_t KernelIo::transfer_launches_per_run() const {
  if (path_ == InputPath::resident) return 0;
  uint64_t n = launches_for(output_.bytes);
  for (const Side& in : inputs_) n += launches_for(in.bytes);
  return n;
}

Result<std::vector<float>> KernelIo::result() {
  std::vector<float> out(output_.bytes / sizeof(float));
  if (path_ == InputPath::pageable) return out_host_;
  if (path_ == InputPath::pinned) {
    std::memcpy(out.data(), output_.pinned_view.data(), output_.bytes);
    return out;
  }
  if (auto st = ctx_->download(output_.device, std::span<float>(out)); !st) return std::unexpected(st.error());
  return out;
}

std::string KernelIo::describe() const {
  if (path_ == InputPath::resident) return "inputs resident in VRAM";
  uint64_t in = 0;
  for (const Side& s : inputs_) in += s.bytes;
  return strfmt(
      "inputs in and output out each run through %s host memory (%.2f MiB in, %.2f MiB out; "
      "transfers %.3f ms a run, median)",
      input_path_name(path_), static_cast<double>(in) / static_cast<double>(MiB),
      static_cast<double>(output_.bytes) / static_cast<double>(MiB), median(transfer_s_) * 1e3);
}

}  // namespace vgpu::testbed::workloads
