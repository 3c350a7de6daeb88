// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/kernel_launch.h"

#include "gpu/engines/engine_deadline.h"

#include "gpu/engines/device_work.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "gpu/engines/engine_limits.h"
#include "gpu/engines/method_table.h"
#include "gpu/kernels/kernels.h"
#include "vgpu/formats.h"

namespace vgpu::gpu {

namespace {

using kernels::CostModel;
using kernels::KernelFootprint;

// One buffer as the kernel sees it: a host view of GPU memory, or, where
// the host could not map a window, a bounce copy written back afterwards.
struct MappedBuffer {
  kernels::BufferUse use;
  HostView view;
  std::vector<std::byte> bounce;
  std::byte* data = nullptr;
};

// The buffers of one launch, found by their argument field name.
class Buffers {
 public:
  explicit Buffers(std::vector<MappedBuffer>& b) : buffers_(b) {}
  float* f32(std::string_view name) const {
    auto it = std::ranges::find_if(buffers_, [name](const MappedBuffer& m) { return name == m.use.name; });
    return it == buffers_.end() ? nullptr : reinterpret_cast<float*>(it->data);
  }
  std::span<float> span(std::string_view name) const {
    auto it = std::ranges::find_if(buffers_, [name](const MappedBuffer& m) { return name == m.use.name; });
    if (it == buffers_.end() || it->data == nullptr) return {};
    return {reinterpret_cast<float*>(it->data), it->use.bytes / sizeof(float)};
  }

 private:
  std::vector<MappedBuffer>& buffers_;
};

// One row per built-in kernel: how to run it on mapped buffers and what it
// costs in virtual time. Spin has no body: its cost is its duration.
struct KernelRow {
  cls::Kernel id;
  const char* name;
  void (*run)(std::span<const std::byte> args, const Buffers& b);
  uint64_t (*cost)(const CostModel& m, std::span<const std::byte> args, const KernelFootprint& fp);
};

uint64_t stream_cost(const CostModel& m, std::span<const std::byte>, const KernelFootprint& fp) {
  return kernels::stream_cost_ns(m, fp.traffic_bytes());
}

constexpr KernelRow KERNELS[] = {
    {cls::Kernel::fill, "fill",
     [](std::span<const std::byte> args, const Buffers& b) {
       kernels::fill(b.span("dst"), decode_args<cls::FillArgs>(args).value);
     },
     &stream_cost},
    {cls::Kernel::saxpy, "saxpy",
     [](std::span<const std::byte> args, const Buffers& b) {
       kernels::saxpy(decode_args<cls::SaxpyArgs>(args).a, b.span("x"), b.span("y"));
     },
     &stream_cost},
    {cls::Kernel::madd, "madd",
     [](std::span<const std::byte>, const Buffers& b) { kernels::madd(b.span("a"), b.span("b"), b.span("c")); },
     &stream_cost},
    {cls::Kernel::sgemm, "sgemm",
     [](std::span<const std::byte> args, const Buffers& b) {
       kernels::sgemm(decode_args<cls::SgemmArgs>(args), b.f32("a"), b.f32("b"), b.f32("c"));
     },
     [](const CostModel& m, std::span<const std::byte> args, const KernelFootprint&) {
       return kernels::sgemm_cost_ns(m, decode_args<cls::SgemmArgs>(args));
     }},
    {cls::Kernel::conv2d, "conv2d",
     [](std::span<const std::byte> args, const Buffers& b) {
       kernels::conv2d(decode_args<cls::Conv2dArgs>(args), b.f32("input"), b.f32("filter"), b.f32("output"));
     },
     [](const CostModel& m, std::span<const std::byte> args, const KernelFootprint&) {
       return kernels::conv2d_cost_ns(m, decode_args<cls::Conv2dArgs>(args));
     }},
    {cls::Kernel::mriq, "mriq",
     [](std::span<const std::byte> args, const Buffers& b) {
       const auto a = decode_args<cls::MriqArgs>(args);
       kernels::mriq(a.num_k, a.num_x, b.f32("kx"), b.f32("ky"), b.f32("kz"), b.f32("phi_mag"), b.f32("x"), b.f32("y"),
                     b.f32("z"), b.f32("qr"), b.f32("qi"));
     },
     [](const CostModel& m, std::span<const std::byte> args, const KernelFootprint&) {
       const auto a = decode_args<cls::MriqArgs>(args);
       return kernels::mriq_cost_ns(m, a.num_k, a.num_x);
     }},
    {cls::Kernel::spin, "spin", nullptr, nullptr},
};

const KernelRow* find_kernel(cls::Kernel k) {
  const auto* row = std::ranges::find(KERNELS, k, &KernelRow::id);
  return row == std::end(KERNELS) ? nullptr : row;
}

// Every buffer is an array of float32.
constexpr uint64_t ELEMENT_ALIGN = alignof(float);

}  // namespace

bool kernel_known(cls::Kernel kernel) { return find_kernel(kernel) != nullptr; }

uint64_t kernel_cost_ns(const kernels::CostModel& m, const KernelLaunch& launch) {
  const KernelRow* row = find_kernel(launch.kernel);
  return row != nullptr && row->cost != nullptr ? row->cost(m, launch.arg_span(), launch.footprint) : 0;
}

std::expected<void, uint64_t> check_launch(const KernelLaunch& launch) {
  for (const kernels::BufferUse& b : launch.footprint.buffers()) {
    if (b.bytes == 0) continue;
    if (b.va % ELEMENT_ALIGN != 0) return std::unexpected(b.va);
    if (b.va > fmt::VA_LIMIT || b.bytes > fmt::VA_LIMIT - b.va) return std::unexpected(b.va);
  }
  if (launch.kernel == cls::Kernel::spin && decode_args<cls::SpinArgs>(launch.arg_span()).duration_ns > MAX_SPIN_NS)
    return std::unexpected(uint64_t{0});
  return {};
}

MethodDone run_kernel(ChannelContext& ctx, const KernelLaunch& launch, uint32_t mthd) {
  const KernelRow* row = find_kernel(launch.kernel);
  if (row == nullptr) return channel_fault(regs::ChannelError::bad_program, mthd);
  if (ctx.device != nullptr && !launch_touches_system_memory(ctx, launch))
    return run_kernel_on_device(ctx, launch, mthd);
  const uint64_t start = ctx.clock.now_ns();
  EngineDeadline deadline(ctx, start);

  if (launch.kernel == cls::Kernel::spin) {
    if (!deadline.sleep(start, decode_args<cls::SpinArgs>(launch.arg_span()).duration_ns))
      return channel_fault(regs::ChannelError::timeout, mthd);
    return {};
  }

  std::vector<MappedBuffer> mapped;
  mapped.reserve(launch.footprint.count);
  uint64_t bounced = 0;
  for (const kernels::BufferUse& use : launch.footprint.buffers()) {
    MappedBuffer& m = mapped.emplace_back(MappedBuffer{.use = use, .view = {}, .bounce = {}});
    if (use.bytes == 0) continue;
    auto view = ctx.mmu.map_range(ctx.as, use.va, use.bytes, use.writable());
    if (!view) return mmu_channel_fault(mthd, view.error());
    m.view = std::move(*view);
    m.data = m.view.data();
    if (m.data == nullptr) {
      // No view (a range scattered over too many runs, or mmap failed):
      // a copy, within the launch's bounce budget.
      if (use.bytes > MAX_BOUNCE_BYTES - bounced) return channel_fault(regs::ChannelError::bad_argument, mthd, use.va);
      bounced += use.bytes;
      m.bounce.resize(use.bytes);
      if (auto r = ctx.mmu.read(ctx.as, use.va, m.bounce.data(), use.bytes); !r)
        return mmu_channel_fault(mthd, r.error());
      m.data = m.bounce.data();
    }
  }

  row->run(launch.arg_span(), Buffers(mapped));

  for (const MappedBuffer& m : mapped) {
    if (m.bounce.empty() || !m.use.writable()) continue;
    if (auto r = ctx.mmu.write(ctx.as, m.use.va, m.bounce.data(), m.use.bytes); !r)
      return mmu_channel_fault(mthd, r.error());
  }
  if (!deadline.charge(start, kernel_cost_ns(ctx.cost, launch)))
    return channel_fault(regs::ChannelError::timeout, mthd);
  return {};
}

}  // namespace vgpu::gpu
