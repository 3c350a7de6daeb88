// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/compute.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "vgpu/bits.h"

namespace vgpu::driver {

namespace k = cls::compute;

uint32_t program_offset(cls::Kernel kernel) {
  uint32_t i = 0;
  for (cls::Kernel each : KERNELS) {
    if (each == kernel) break;
    ++i;
  }
  return i * static_cast<uint32_t>(sizeof(cls::ProgramDescriptor));
}

cls::ProgramDescriptor program_descriptor(cls::Kernel kernel) {
  return {cls::PROGRAM_MAGIC, cls::PROGRAM_VERSION, static_cast<uint32_t>(kernel), 0};
}

void emit_compute_bind(PushBuffer& pb, uint64_t code_va) {
  pb.inc(subch::COMPUTE, cls::host::SET_OBJECT, {cls::host::SetObjectClass::make(cls::COMPUTE)});
  pb.inc(subch::COMPUTE, k::SET_PROGRAM_REGION_A, {hi32(code_va), lo32(code_va)});
}

namespace {
// The grid and block, then LAUNCH: the end of every launch.
void emit_shape_and_launch(PushBuffer& pb, const LaunchShape& shape) {
  const unsigned s = subch::COMPUTE;
  pb.method(s, k::SET_CTA_THREAD_COUNT, shape.block.x * shape.block.y * shape.block.z);
  pb.inc(s, k::SET_CTA_THREAD_DIMENSION_A,
         {k::DimLo::make(shape.block.x) | k::DimHi::make(shape.block.y), k::DimLo::make(shape.block.z)});
  pb.inc(s, k::SET_CTA_RASTER_SIZE_A,
         {k::DimLo::make(shape.grid.x) | k::DimHi::make(shape.grid.y), k::DimLo::make(shape.grid.z)});
  pb.method(s, k::LAUNCH, 0);
}
}  // namespace

void emit_launch(PushBuffer& pb, cls::Kernel kernel, uint64_t cb_va, std::span<const uint32_t> args,
                 LaunchShape shape) {
  const unsigned s = subch::COMPUTE;
  pb.inc(s, k::SET_CONSTANT_BUFFER_SELECTOR_A, {k::CbSize::make(ARG_CB_BYTES), hi32(cb_va), lo32(cb_va)});
  pb.method(s, k::LOAD_CONSTANT_BUFFER_OFFSET, 0);
  pb.non_inc(s, k::LOAD_CONSTANT_BUFFER, args);
  pb.method(s, k::BIND_CONSTANT_BUFFER, k::BindValid::mask | k::BindSlot::make(k::ARG_CB_SLOT));
  pb.method(s, k::SET_CTA_PROGRAM_START, program_offset(kernel));
  emit_shape_and_launch(pb, shape);
}

namespace {
// Words into the constant buffer at va (size bytes) from offset 0, in
// method runs the header's count holds.
void emit_cb_upload(PushBuffer& pb, uint64_t va, uint32_t size, std::span<const uint32_t> words) {
  constexpr size_t RUN = 1024;
  const unsigned s = subch::COMPUTE;
  pb.inc(s, k::SET_CONSTANT_BUFFER_SELECTOR_A, {k::CbSize::make(size), hi32(va), lo32(va)});
  pb.method(s, k::LOAD_CONSTANT_BUFFER_OFFSET, 0);
  for (size_t i = 0; i < words.size(); i += RUN)
    pb.non_inc(s, k::LOAD_CONSTANT_BUFFER, words.subspan(i, std::min(RUN, words.size() - i)));
}
}  // namespace

void emit_load_module(PushBuffer& pb, const ModuleLoadMethods& m) {
  const unsigned s = subch::COMPUTE;
  pb.inc(s, k::SET_MODULE_SOURCE_A, {hi32(m.source_va), lo32(m.source_va), m.source_bytes});
  pb.inc(s, k::SET_MODULE_DATA_A, {hi32(m.data_va), lo32(m.data_va), m.data_bytes});
  pb.inc(s, k::SET_PTX_REPORT_A, {hi32(m.report_va), lo32(m.report_va)});
  pb.method(s, k::LOAD_MODULE, m.slot);
}

void emit_user_launch(PushBuffer& pb, const UserLaunchMethods& m) {
  const unsigned s = subch::COMPUTE;
  const cls::ProgramDescriptor pd{cls::PROGRAM_MAGIC, cls::PROGRAM_VERSION, static_cast<uint32_t>(cls::Kernel::user),
                                  k::EntryModule::make(m.slot) | k::EntryIndex::make(m.entry)};
  const uint32_t desc[4] = {pd.magic, pd.version, pd.kernel, pd.entry};
  emit_cb_upload(pb, m.code_va + USER_PROGRAM_OFFSET, sizeof(desc), desc);
  emit_cb_upload(pb, m.cb_va, m.cb_bytes, m.params);
  pb.method(s, k::BIND_CONSTANT_BUFFER, k::BindValid::mask | k::BindSlot::make(k::ARG_CB_SLOT));
  pb.inc(s, k::SET_PTX_REPORT_A, {hi32(m.report_va), lo32(m.report_va)});
  pb.method(s, k::SET_SHADER_SHARED_MEMORY_SIZE, m.shared_bytes);
  pb.method(s, k::SET_CTA_PROGRAM_START, USER_PROGRAM_OFFSET);
  emit_shape_and_launch(pb, m.shape);
}

void emit_user_launch_words(PushBuffer& pb, const UserLaunchMethods& m) {
  const cls::UserLaunchWords w{
      .entry = k::EntryModule::make(m.slot) | k::EntryIndex::make(m.entry),
      .grid_xy = k::DimLo::make(m.shape.grid.x) | k::DimHi::make(m.shape.grid.y),
      .grid_z = k::DimLo::make(m.shape.grid.z),
      .block_xy = k::DimLo::make(m.shape.block.x) | k::DimHi::make(m.shape.block.y),
      .block_z = k::DimLo::make(m.shape.block.z),
      .shared_bytes = m.shared_bytes,
      .report_a = hi32(m.report_va),
      .report_b = lo32(m.report_va),
  };
  std::array<uint32_t, cls::USER_LAUNCH_HEADER_WORDS + k::MAX_PARAM_BYTES / sizeof(uint32_t)> words{};
  std::memcpy(words.data(), &w, sizeof w);
  const size_t n = std::min(m.params.size(), words.size() - cls::USER_LAUNCH_HEADER_WORDS);
  std::copy_n(m.params.begin(), n, words.begin() + cls::USER_LAUNCH_HEADER_WORDS);
  pb.non_inc(subch::COMPUTE, k::LAUNCH_USER, std::span<const uint32_t>(words).first(cls::USER_LAUNCH_HEADER_WORDS + n));
}

}  // namespace vgpu::driver
