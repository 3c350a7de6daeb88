// SPDX-License-Identifier: GPL-2.0-or-later
// PTX modules of a context (docs/spec/vgpu.md §10.6): load a module's text
// into a slot of the channel's compute object, launch its entries, read
// the device's report. The guest library (cuda/) parses the text itself
// for the parameter layout; the driver only carries bytes.
#include <algorithm>
#include <cstring>

#include "common/launch_trace.h"
#include "driver/msg.h"
#include "driver/runtime.h"

namespace vgpu::driver {

namespace {
namespace k = cls::compute;
// The module area: the parameter constant buffer, then the report.
constexpr uint64_t PARAMS_OFFSET = 0;
constexpr uint64_t REPORT_OFFSET = k::MAX_PARAM_BYTES;
constexpr uint64_t MODULE_AREA_BYTES = REPORT_OFFSET + sizeof(cls::PtxReport);

PtxReport decode(const cls::PtxReport& r) {
  PtxReport out;
  out.status = static_cast<cls::PtxStatus>(r.status);
  out.line = r.line;
  out.addr = r.addr;
  out.data_bytes = r.data_bytes;
  out.entries = r.entries;
  out.message.assign(r.message, strnlen(r.message, sizeof(r.message)));
  return out;
}
}  // namespace

Status Context::ensure_module_area() {
  if (module_area_.id != 0) return {};
  auto area = alloc(MODULE_AREA_BYTES);
  if (!area) return std::unexpected(area.error().context("module area"));
  module_area_ = *area;
  module_area_va_ = buffers_.at(area->id).va;
  return {};
}

Result<PtxReport> Context::module_report() {
  if (module_area_.id == 0) return fail(Errc::not_found, "no module was loaded in this context");
  // Through the area's BAR1 mapping, without waiting for the channel: after
  // a channel error the device wrote the report before it raised the error.
  cls::PtxReport raw{};
  if (auto r = direct(buffers_.at(module_area_.id), REPORT_OFFSET, {}, std::as_writable_bytes(std::span(&raw, 1))); !r)
    return std::unexpected(r.error());
  return decode(raw);
}

Result<LoadedModule> Context::load_module(std::string_view ptx, uint64_t data_bytes) {
  if (ptx.empty() || ptx.size() > k::MAX_MODULE_BYTES)
    return fail(Errc::invalid_argument, msg("module of {} bytes (1 to {} bytes)", ptx.size(), k::MAX_MODULE_BYTES));
  if (data_bytes > UINT32_MAX) return fail(Errc::invalid_argument, msg("module data of {} bytes", data_bytes));
  const auto* free_slot = std::ranges::find(module_slot_used_, false);
  if (free_slot == module_slot_used_.end())
    return fail(Errc::out_of_memory, msg("all {} module slots of the context are in use", k::MAX_MODULE_SLOTS));
  const auto slot = static_cast<uint32_t>(free_slot - module_slot_used_.begin());
  if (auto ok = ensure_module_area(); !ok) return std::unexpected(ok.error());

  auto text = alloc(ptx.size());
  if (!text) return std::unexpected(text.error().context("module text"));
  LoadedModule m{.slot = slot};
  const auto drop = [&] {
    (void)free(*text);
    if (m.data.id != 0) (void)free(m.data);
  };
  if (data_bytes > 0) {
    auto data = alloc_compute(data_bytes);  // kernels reach it: in the compute aperture
    if (!data) {
      drop();
      return std::unexpected(data.error().context("module data"));
    }
    m.data = *data;
    m.data_va = buffers_.at(data->id).va;
  }
  if (auto up = upload(*text, 0, std::as_bytes(std::span(ptx.data(), ptx.size()))); !up) {
    drop();
    return std::unexpected(up.error());
  }
  PushBuffer pb;
  emit_load_module(pb, {.source_va = buffers_.at(text->id).va,
                        .source_bytes = static_cast<uint32_t>(ptx.size()),
                        .data_va = m.data_va,
                        .data_bytes = static_cast<uint32_t>(data_bytes),
                        .report_va = module_area_va_ + REPORT_OFFSET,
                        .slot = slot});
  auto f = submit(pb);
  Status waited = f ? wait(*f) : Status(std::unexpected(f.error()));
  if (!waited) {
    drop();
    return std::unexpected(waited.error().context("module load"));
  }
  auto report = module_report();
  (void)free(*text);
  if (!report || report->status != cls::PtxStatus::ok) {
    if (m.data.id != 0) (void)free(m.data);
    if (!report) return std::unexpected(report.error());
    return fail(Errc::invalid_argument, report->line ? msg("module refused: line {}: {}", report->line, report->message)
                                                     : msg("module refused: {}", report->message));
  }
  module_slot_used_[slot] = true;
  return m;
}

Status Context::unload_module(const LoadedModule& m) {
  if (m.slot >= module_slot_used_.size() || !module_slot_used_[m.slot])
    return fail(Errc::not_found, msg("no module in slot {}", m.slot));
  PushBuffer pb;
  pb.method(subch::COMPUTE, k::UNLOAD_MODULE, m.slot);
  auto f = submit(pb);
  if (!f) return std::unexpected(f.error());
  if (auto ok = wait(*f); !ok) return ok;  // launches of the module are done: its data may go
  module_slot_used_[m.slot] = false;
  if (m.data.id != 0) return free(m.data);
  return {};
}

Result<Fence> Context::launch_module(const ModuleLaunch& l) {
  LaunchTrace::mark(LaunchPhase::api_entry);
  if (l.slot >= module_slot_used_.size() || !module_slot_used_[l.slot])
    return fail(Errc::not_found, msg("no module in slot {}", l.slot));
  if (l.params.size() > k::MAX_PARAM_BYTES)
    return fail(Errc::invalid_argument, msg("{} parameter bytes (at most {})", l.params.size(), k::MAX_PARAM_BYTES));
  std::array<uint32_t, k::MAX_PARAM_BYTES / 4> words{};
  std::memcpy(words.data(), l.params.data(), l.params.size());
  const size_t n = (l.params.size() + 3) / 4;
  PushBuffer pb;
  (l.by_descriptor ? emit_user_launch : emit_user_launch_words)(pb,
                                                                {.code_va = consts_va_,
                                                                 .cb_va = module_area_va_ + PARAMS_OFFSET,
                                                                 .cb_bytes = static_cast<uint32_t>(n * 4),
                                                                 .report_va = module_area_va_ + REPORT_OFFSET,
                                                                 .slot = l.slot,
                                                                 .entry = l.entry,
                                                                 .shared_bytes = l.shared_bytes,
                                                                 .params = std::span<const uint32_t>(words).first(n),
                                                                 .shape = l.shape});
  return submit(pb);
}

}  // namespace vgpu::driver
