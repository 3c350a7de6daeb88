// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/compute_object.h"

#include <cstring>
#include <string>

#include "gpu/engines/kernel_launch.h"
#include "gpu/kernels/footprint.h"
#include "vgpu/bits.h"

namespace vgpu::gpu {

namespace {

using namespace cls::compute;
using regs::ChannelError;

// The channel's address space as the compute engine's accesses fault in it.
AccessContext engine_space(const ChannelContext& ctx) {
  AccessContext as = ctx.as;
  as.unit = regs::FaultUnit::pgraph;
  return as;
}

// The compute engine's view of the channel: its faults name PGRAPH.
ChannelContext engine_context(const ChannelContext& ctx) {
  ChannelContext e = ctx;
  e.as = engine_space(ctx);
  return e;
}

// The constant buffer SET_CONSTANT_BUFFER_SELECTOR_A..C selected.
uint64_t selected_cb_va(const ComputeObject::State& s) {
  return join64(VaUpper::get(s.cb_selector_upper), s.cb_selector_lower);
}

// Whether `bytes` more fit the selected buffer at its load offset.
bool cb_load_fits(const ComputeObject::State& s, uint64_t bytes) {
  const uint32_t size = CbSize::get(s.cb_selector_size);
  return s.cb_load_offset <= size && size - s.cb_load_offset >= bytes;
}

bool dims_valid(const ComputeObject::Dim3& grid, const ComputeObject::Dim3& block) {
  const auto positive = [](const ComputeObject::Dim3& d) { return d.x != 0 && d.y != 0 && d.z != 0; };
  if (!positive(grid) || !positive(block)) return false;
  if (grid.x > MAX_GRID_DIM || grid.y > MAX_GRID_DIM || grid.z > MAX_GRID_DIM) return false;
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  return threads <= MAX_THREADS_PER_BLOCK;
}

}  // namespace

std::span<const ComputeObject::Record> ComputeObject::methods() {
  static constexpr Record TABLE[] = {
      {"SET_SHADER_SHARED_MEMORY_WINDOW", SET_SHADER_SHARED_MEMORY_WINDOW, 1, &ignore},
      {"SET_CTA_RASTER_SIZE_A", SET_CTA_RASTER_SIZE_A, 1, &dim_xy<&State::grid>},
      {"SET_CTA_RASTER_SIZE_B", SET_CTA_RASTER_SIZE_B, 1, &dim_z<&State::grid>},
      {"SET_SHADER_SHARED_MEMORY_SIZE", SET_SHADER_SHARED_MEMORY_SIZE, 1, &store<&State::shared_bytes>},
      {"SET_CTA_THREAD_COUNT", SET_CTA_THREAD_COUNT, 1, &store<&State::thread_count>},
      {"SET_CTA_BARRIER_COUNT", SET_CTA_BARRIER_COUNT, 1, &ignore},
      {"BEGIN_GRID", BEGIN_GRID, 1, &ignore},
      {"SET_CTA_REGISTER_COUNT", SET_CTA_REGISTER_COUNT, 1, &ignore},
      {"SET_L1_CONFIGURATION", SET_L1_CONFIGURATION, 1, &ignore},
      {"WAIT_REF_COUNT", WAIT_REF_COUNT, 1, &ignore},
      {"LAUNCH", LAUNCH, 1, &launch, true},
      {"SET_LAUNCH_ID", SET_LAUNCH_ID, 1, &ignore},
      {"SET_CTA_THREAD_DIMENSION_A", SET_CTA_THREAD_DIMENSION_A, 1, &dim_xy<&State::block>},
      {"SET_CTA_THREAD_DIMENSION_B", SET_CTA_THREAD_DIMENSION_B, 1, &dim_z<&State::block>},
      {"SET_CTA_PROGRAM_START", SET_CTA_PROGRAM_START, 1, &store<&State::program_start>},
      {"SET_GRID_PARAM", SET_GRID_PARAM, 1, &ignore},
      {"END_GRID", END_GRID, 1, &ignore},
      {"SET_LAUNCH_SIZE", SET_LAUNCH_SIZE, 1, &ignore},
      {"SET_PROGRAM_REGION_A", SET_PROGRAM_REGION_A, 1, &store<&State::program_region_a>},
      {"SET_PROGRAM_REGION_B", SET_PROGRAM_REGION_B, 1, &store<&State::program_region_b>},
      {"BIND_CONSTANT_BUFFER", BIND_CONSTANT_BUFFER, 1, &bind_cb},
      {"INVALIDATE_SHADER_CACHES_NO_WFI", INVALIDATE_SHADER_CACHES_NO_WFI, 1, &ignore},
      {"SET_REPORT_SEMAPHORE_A", SET_REPORT_SEMAPHORE_A, 1, &store<&State::report_a>},
      {"SET_REPORT_SEMAPHORE_B", SET_REPORT_SEMAPHORE_B, 1, &store<&State::report_b>},
      {"SET_REPORT_SEMAPHORE_C", SET_REPORT_SEMAPHORE_C, 1, &store<&State::report_payload>},
      {"SET_REPORT_SEMAPHORE_D", SET_REPORT_SEMAPHORE_D, 1, &report_d},
      {"SET_CONSTANT_BUFFER_SELECTOR_A", SET_CONSTANT_BUFFER_SELECTOR_A, 1, &store<&State::cb_selector_size>},
      {"SET_CONSTANT_BUFFER_SELECTOR_B", SET_CONSTANT_BUFFER_SELECTOR_B, 1, &store<&State::cb_selector_upper>},
      {"SET_CONSTANT_BUFFER_SELECTOR_C", SET_CONSTANT_BUFFER_SELECTOR_C, 1, &store<&State::cb_selector_lower>},
      {"LOAD_CONSTANT_BUFFER_OFFSET", LOAD_CONSTANT_BUFFER_OFFSET, 1, &store<&State::cb_load_offset>},
      {"LOAD_CONSTANT_BUFFER", LOAD_CONSTANT_BUFFER, LOAD_CONSTANT_BUFFER_WORDS, &load_cb},
      {"SET_MODULE_SOURCE_A", SET_MODULE_SOURCE_A, 1, &store<&State::module_source_a>},
      {"SET_MODULE_SOURCE_B", SET_MODULE_SOURCE_B, 1, &store<&State::module_source_b>},
      {"SET_MODULE_SOURCE_SIZE", SET_MODULE_SOURCE_SIZE, 1, &store<&State::module_source_size>},
      {"SET_MODULE_DATA_A", SET_MODULE_DATA_A, 1, &store<&State::module_data_a>},
      {"SET_MODULE_DATA_B", SET_MODULE_DATA_B, 1, &store<&State::module_data_b>},
      {"SET_MODULE_DATA_SIZE", SET_MODULE_DATA_SIZE, 1, &store<&State::module_data_size>},
      {"SET_PTX_REPORT_A", SET_PTX_REPORT_A, 1, &store<&State::ptx_report_a>},
      {"SET_PTX_REPORT_B", SET_PTX_REPORT_B, 1, &store<&State::ptx_report_b>},
      {"LOAD_MODULE", LOAD_MODULE, 1, &load_module, true},
      {"UNLOAD_MODULE", UNLOAD_MODULE, 1, &unload_module},
      {"LAUNCH_USER", LAUNCH_USER, 1, &launch_user_word, true},
  };
  return TABLE;
}

std::optional<MethodOutcome> ComputeObject::method_words(ChannelContext& ctx, uint32_t mthd,
                                                         std::span<const uint32_t> data) {
  if (mthd == LAUNCH_USER) return launch_user_words(ctx, mthd, data);
  if (mthd != LOAD_CONSTANT_BUFFER || data.empty()) return std::nullopt;
  State& s = state_;
  const uint64_t bytes = data.size_bytes();
  if (!cb_load_fits(s, bytes)) return std::nullopt;  // a word faults
  const uint64_t va = selected_cb_va(s) + s.cb_load_offset;
  if (va / fmt::SMALL_PAGE != (va + bytes - 1) / fmt::SMALL_PAGE) return std::nullopt;  // a later page may fault
  if (auto r = ctx.mmu.write(engine_space(ctx), va, data.data(), bytes); !r) return mmu_channel_fault(mthd, r.error());
  s.cb_load_offset += static_cast<uint32_t>(bytes);
  return method_done();
}

template <ComputeObject::Dim3 ComputeObject::State::*Dim>
MethodOutcome ComputeObject::dim_xy(ComputeObject& self, ChannelContext&, uint32_t, uint32_t data) {
  (self.state_.*Dim).x = DimLo::get(data);
  (self.state_.*Dim).y = DimHi::get(data);
  return method_done();
}

template <ComputeObject::Dim3 ComputeObject::State::*Dim>
MethodOutcome ComputeObject::dim_z(ComputeObject& self, ChannelContext&, uint32_t, uint32_t data) {
  (self.state_.*Dim).z = DimLo::get(data);
  return method_done();
}

// One inline word into the selected constant buffer, at the load offset.
MethodOutcome ComputeObject::load_cb(ComputeObject& self, ChannelContext& ctx, uint32_t mthd, uint32_t data) {
  State& s = self.state_;
  const uint64_t va = selected_cb_va(s) + s.cb_load_offset;
  if (!cb_load_fits(s, sizeof(uint32_t))) return channel_fault(ChannelError::bad_argument, mthd, va);
  if (auto r = ctx.mmu.write32(engine_space(ctx), va, data); !r) return mmu_channel_fault(mthd, r.error());
  s.cb_load_offset += static_cast<uint32_t>(sizeof(uint32_t));
  return method_done();
}

MethodOutcome ComputeObject::bind_cb(ComputeObject& self, ChannelContext&, uint32_t mthd, uint32_t data) {
  State& s = self.state_;
  const uint32_t slot = BindSlot::get(data);
  if (slot >= NUM_CB_SLOTS) return channel_fault(ChannelError::bad_argument, mthd);
  s.bound[slot] = BindValid::get(data)
                      ? ConstantBuffer{.va = selected_cb_va(s), .size = CbSize::get(s.cb_selector_size), .valid = true}
                      : ConstantBuffer{};
  return method_done();
}

// The channel delivers no method before the previous one's engine work has
// retired, so the preceding launch is complete when this runs.
MethodOutcome ComputeObject::report_d(ComputeObject& self, ChannelContext& ctx, uint32_t mthd, uint32_t data) {
  const State& s = self.state_;
  if (static_cast<ReportOp>(ReportOperation::get(data)) != ReportOp::release)
    return channel_fault(ChannelError::illegal_method, mthd);
  ChannelContext e = engine_context(ctx);
  const uint64_t va = join64(VaUpper::get(s.report_a), s.report_b);
  if (auto r = release_semaphore(e, va, s.report_payload, ReportSize4::get(data) == 0, mthd); !r)
    return std::unexpected(r.error());
  if (ReportAwaken::get(data) && e.nonstall) e.nonstall();
  return method_done();
}

MethodOutcome ComputeObject::launch(ComputeObject& self, ChannelContext& ctx, uint32_t mthd, uint32_t) {
  const State& s = self.state_;
  ChannelContext e = engine_context(ctx);

  // The program: a descriptor naming a built-in kernel.
  const uint64_t desc_va = join64(VaUpper::get(s.program_region_a), s.program_region_b) + s.program_start;
  cls::ProgramDescriptor desc{};
  if (auto r = e.mmu.read(e.as, desc_va, &desc, sizeof(desc)); !r) return mmu_channel_fault(mthd, r.error());
  const auto kernel = static_cast<cls::Kernel>(desc.kernel);
  const bool valid = desc.magic == cls::PROGRAM_MAGIC && desc.version == cls::PROGRAM_VERSION;
  if (valid && kernel == cls::Kernel::user)
    return self.launch_user(ctx, mthd,
                            UserRequest{.entry = desc.entry,
                                        .grid = s.grid,
                                        .block = s.block,
                                        .shared_bytes = s.shared_bytes,
                                        .report_va = join64(VaUpper::get(s.ptx_report_a), s.ptx_report_b),
                                        .program_va = desc_va});
  if (!valid || !kernel_known(kernel)) return channel_fault(ChannelError::bad_program, mthd, desc_va);

  if (!dims_valid(s.grid, s.block)) return channel_fault(ChannelError::bad_argument, mthd);

  // The arguments: the kernel's struct at the start of constant buffer ARG_CB_SLOT.
  KernelLaunch launch{.kernel = kernel, .arg_bytes = kernels::args_size(kernel)};
  const ConstantBuffer& cb = s.bound[ARG_CB_SLOT];
  if (!cb.valid || cb.size < launch.arg_bytes || launch.arg_bytes > launch.args.size())
    return channel_fault(ChannelError::bad_argument, mthd, cb.va);
  if (auto r = e.mmu.read(e.as, cb.va, launch.args.data(), launch.arg_bytes); !r)
    return mmu_channel_fault(mthd, r.error());

  auto footprint = kernels::footprint(kernel, launch.arg_span());
  if (!footprint) return channel_fault(ChannelError::bad_argument, mthd, cb.va);
  launch.footprint = *footprint;
  if (auto ok = check_launch(launch); !ok) return channel_fault(ChannelError::bad_argument, mthd, ok.error());

  launch.blocks = uint64_t{s.grid.x} * s.grid.y * s.grid.z;

  // Sliced (§10.5) on the model's engines; a device runs a launch whole.
  if (e.slice_blocks != 0 && launch.blocks > e.slice_blocks && e.device == nullptr)
    return std::optional<EngineWork>{
        EngineWork{.engine = EngineId::compute, .run = {}, .divided = slice_kernel(e, launch, mthd, e.slice_blocks)}};
  // A spin's cost is its duration, charged while it runs (0 in the table).
  const bool brief = e.device == nullptr && kernel != cls::Kernel::spin &&
                     kernel_cost_ns(e.cost, launch) <= e.cost.launch_ns + BRIEF_WORK_NS;
  // Timed slicing (§10.5): any launch that is not brief is divisible work,
  // in pieces of the slice's time (a spin only when it is longer).
  const uint64_t units = kernel_units(launch);
  const bool timed = e.slice_ns != 0 && e.device == nullptr && !brief && units > 1 &&
                     (kernel != cls::Kernel::spin || units > e.slice_ns);
  if (timed)
    return std::optional<EngineWork>{EngineWork{.engine = EngineId::compute,
                                                .run = {},
                                                .divided = slice_kernel_timed(e, launch, mthd, self.slices_)}};
  return std::optional<EngineWork>{EngineWork{
      .engine = EngineId::compute,
      .run = [e = std::move(e), launch = std::move(launch), mthd]() mutable { return run_kernel(e, launch, mthd); },
      .brief = brief,
  }};
}

namespace {
uint64_t report_va(const ComputeObject::State& s) { return join64(VaUpper::get(s.ptx_report_a), s.ptx_report_b); }
}  // namespace

MethodOutcome ComputeObject::load_module(ComputeObject& self, ChannelContext& ctx, uint32_t mthd, uint32_t data) {
  const State& s = self.state_;
  const ModuleLoad load{
      .source_va = join64(VaUpper::get(s.module_source_a), s.module_source_b),
      .source_bytes = s.module_source_size,
      .data_va = join64(VaUpper::get(s.module_data_a), s.module_data_b),
      .data_bytes = s.module_data_size,
      .report_va = report_va(s),
      .slot = data,
  };
  return std::optional<EngineWork>{load_module_work(engine_context(ctx), self.modules_, load, mthd)};
}

MethodOutcome ComputeObject::unload_module(ComputeObject& self, ChannelContext&, uint32_t mthd, uint32_t data) {
  ModuleSlots& m = *self.modules_;
  if (data >= m.slots.size()) return channel_fault(ChannelError::bad_argument, mthd);
  m.source_bytes -= m.slots[data].source_bytes;
  m.slots[data] = ModuleSlot{};
  return method_done();
}

// LAUNCH_USER delivered word by word (an incrementing or immediate
// command, or a run of one word): its descriptor must come in one run.
MethodOutcome ComputeObject::launch_user_word(ComputeObject&, ChannelContext&, uint32_t mthd, uint32_t) {
  return channel_fault(ChannelError::bad_argument, mthd);
}

// LAUNCH_USER's run: the header (cls::UserLaunchWords), then the
// parameters; nothing of the object's state is read or changed.
MethodOutcome ComputeObject::launch_user_words(ChannelContext& ctx, uint32_t mthd, std::span<const uint32_t> data) {
  if (data.size() < cls::USER_LAUNCH_HEADER_WORDS ||
      data.size() - cls::USER_LAUNCH_HEADER_WORDS > MAX_PARAM_BYTES / sizeof(uint32_t))
    return channel_fault(ChannelError::bad_argument, mthd);
  cls::UserLaunchWords w{};
  std::memcpy(&w, data.data(), sizeof w);
  return launch_user(ctx, mthd,
                     UserRequest{.entry = w.entry,
                                 .grid = {DimLo::get(w.grid_xy), DimHi::get(w.grid_xy), DimLo::get(w.grid_z)},
                                 .block = {DimLo::get(w.block_xy), DimHi::get(w.block_xy), DimLo::get(w.block_z)},
                                 .shared_bytes = w.shared_bytes,
                                 .report_va = join64(VaUpper::get(w.report_a), w.report_b),
                                 .program_va = 0,
                                 .params = data.subspan(cls::USER_LAUNCH_HEADER_WORDS)});
}

// A user launch's checks, on PFIFO's thread: the slot and entry (else
// bad_program at the descriptor), the geometry, shared memory and the
// parameter buffer (else bad_argument); each refusal is also reported.
MethodOutcome ComputeObject::launch_user(ChannelContext& ctx, uint32_t mthd, const UserRequest& r) {
  ChannelContext e = engine_context(ctx);
  const uint64_t rva = r.report_va;
  const auto refuse = [&](ChannelError code, cls::PtxStatus st, std::string_view why, uint64_t addr) -> MethodOutcome {
    if (auto w = write_report(e, rva, make_report(st, 0, addr, why), *modules_, mthd); !w)
      return std::unexpected(w.error());
    return channel_fault(code, mthd, addr);
  };
  const uint32_t slot = EntryModule::get(r.entry);
  const uint32_t index = EntryIndex::get(r.entry);
  if (slot >= modules_->slots.size() || modules_->slots[slot].module == nullptr)
    return refuse(ChannelError::bad_program, cls::PtxStatus::bad_slot, "no module in the slot", r.program_va);
  const ModuleSlot& m = modules_->slots[slot];
  if (index >= m.module->entries().size())
    return refuse(ChannelError::bad_program, cls::PtxStatus::bad_slot, "no such entry in the module", r.program_va);
  const ptx::EntryInfo& entry = m.module->entries()[index];
  if (!dims_valid(r.grid, r.block))
    return refuse(ChannelError::bad_argument, cls::PtxStatus::resource, "grid or block size out of range", 0);
  if (uint64_t{entry.static_shared_bytes} + r.shared_bytes > MAX_SHARED_BYTES)
    return refuse(ChannelError::bad_argument, cls::PtxStatus::resource, "shared memory above 48 KiB", 0);
  const ConstantBuffer& cb = state_.bound[ARG_CB_SLOT];
  if (r.params && entry.param_bytes > r.params->size_bytes())
    return refuse(ChannelError::bad_argument, cls::PtxStatus::resource, "fewer parameter words than the entry's", 0);
  if (!r.params &&
      (entry.param_bytes > MAX_PARAM_BYTES || (entry.param_bytes > 0 && (!cb.valid || cb.size < entry.param_bytes))))
    return refuse(ChannelError::bad_argument, cls::PtxStatus::resource, "parameter buffer missing or too small", cb.va);
  UserLaunch launch{
      .module = m.module,
      .slot = slot,
      .entry = index,
      .grid = {r.grid.x, r.grid.y, r.grid.z},
      .block = {r.block.x, r.block.y, r.block.z},
      .shared_bytes = r.shared_bytes,
      .params = std::vector<std::byte>(entry.param_bytes),
      .data_va = m.data_va,
      .report_va = rva,
      .slots = modules_,
  };
  if (r.params && entry.param_bytes > 0)
    std::memcpy(launch.params.data(), r.params->data(), entry.param_bytes);
  else if (entry.param_bytes > 0)
    if (auto rd = e.mmu.read(e.as, cb.va, launch.params.data(), entry.param_bytes); !rd)
      return mmu_channel_fault(mthd, rd.error());
  return std::optional<EngineWork>{user_launch_work(e, std::move(launch), mthd, e.slice_blocks)};
}

}  // namespace vgpu::gpu

namespace vgpu::gpu {

// A built-in launch (LAUNCH) between slices travels; a user launch keeps a
// resident thread block between its pieces and does not (save_progress).
std::optional<std::string> ComputeObject::check_work(uint32_t mthd, const WorkState& work) const {
  if (mthd != cls::compute::LAUNCH) return "divided work of method " + std::to_string(mthd) + ", which is not LAUNCH";
  auto p = decode_kernel_progress(work);
  if (!p) return p.error();
  return std::nullopt;
}

std::optional<EngineWork> ComputeObject::restore_work(const ChannelContext& ctx, uint32_t mthd, const WorkState& work) {
  auto p = decode_kernel_progress(work);
  if (mthd != cls::compute::LAUNCH || !p) return std::nullopt;
  return EngineWork{.engine = EngineId::compute,
                    .run = {},
                    .divided = resume_kernel_work(engine_context(ctx), *p, mthd, slices_)};
}

}  // namespace vgpu::gpu
