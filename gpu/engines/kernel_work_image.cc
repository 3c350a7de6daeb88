// SPDX-License-Identifier: GPL-2.0-or-later
// A sliced built-in launch between pieces in the migration image
// (docs/migration.md §2, "Divided launch between pieces"): its one codec.
// The destination takes nothing on trust: the launch is checked as the
// compute object's LAUNCH checks it, and the progress against the launch.
#include <cstring>
#include <string>

#include "common/text.h"
#include "common/wire_codec.h"
#include "gpu/engines/kernel_launch.h"
#include "gpu/kernels/footprint.h"

namespace vgpu::gpu {
namespace {

constexpr uint64_t NS_PER_US = 1000;
constexpr uint64_t MAX_SLICE_BLOCKS = regs::pfifo::ChanSliceBlocks::mask;  // CHAN_SLICE's field
constexpr uint64_t MAX_SLICE_NS = MAX_SLICE_BLOCKS * NS_PER_US;            // the same field, timed (in us)
constexpr uint64_t MAX_BLOCKS = uint64_t{cls::compute::MAX_GRID_DIM} * cls::compute::MAX_GRID_DIM *
                                cls::compute::MAX_GRID_DIM;

std::unexpected<std::string> bad(const std::string& what) { return std::unexpected("sliced launch " + what); }

}  // namespace

WorkState encode_kernel_progress(const KernelProgress& p) {
  Writer w;
  w.u32(static_cast<uint32_t>(p.launch.kernel));
  w.bytes({reinterpret_cast<const uint8_t*>(p.launch.args.data()), p.launch.arg_bytes});
  w.u64(p.launch.blocks);
  w.boolean(p.timed);
  w.boolean(p.on_demand);
  w.u64(p.slice);
  w.u64(p.next);
  return {KERNEL_WORK_KIND, w.take()};
}

std::expected<KernelProgress, std::string> decode_kernel_progress(const WorkState& work) {
  if (work.kind != KERNEL_WORK_KIND) return bad("of kind " + std::to_string(work.kind) + ", not a built-in kernel's");
  if (work.bytes.size() > KERNEL_WORK_MAX_BYTES)
    return bad("state of " + std::to_string(work.bytes.size()) + " bytes (at most " +
               std::to_string(KERNEL_WORK_MAX_BYTES) + ")");
  Reader r(work.bytes);
  KernelProgress p;
  p.launch.kernel = static_cast<cls::Kernel>(r.u32());
  const std::span<const uint8_t> args = r.bytes();
  p.launch.blocks = r.u64();
  p.timed = r.boolean();
  p.on_demand = r.boolean();
  p.slice = r.u64();
  p.next = r.u64();
  if (!r.ok() || !r.at_end())
    return bad("state of " + std::to_string(work.bytes.size()) + " bytes is cut or has bytes left over");
  const cls::Kernel k = p.launch.kernel;
  if (k == cls::Kernel::user || !kernel_known(k))
    return bad("of kernel " + std::to_string(static_cast<uint32_t>(k)) + ", which the device does not have");
  if (args.size() != kernels::args_size(k) || args.size() > p.launch.args.size())
    return bad("has " + std::to_string(args.size()) + " argument bytes, its kernel takes " +
               std::to_string(kernels::args_size(k)));
  std::memcpy(p.launch.args.data(), args.data(), args.size());
  p.launch.arg_bytes = args.size();
  auto footprint = kernels::footprint(k, p.launch.arg_span());
  if (!footprint) return bad("has arguments its kernel refuses");
  p.launch.footprint = *footprint;
  if (auto ok = check_launch(p.launch); !ok) return bad("has a buffer its launch would refuse at " + hex(ok.error()));
  if (p.launch.blocks == 0 || p.launch.blocks > MAX_BLOCKS)
    return bad("has a grid of " + std::to_string(p.launch.blocks) + " blocks");
  const uint64_t max_slice = p.timed ? MAX_SLICE_NS : MAX_SLICE_BLOCKS;
  if (p.slice == 0 || p.slice > max_slice || (!p.timed && p.on_demand))
    return bad("has a slice of " + std::to_string(p.slice) + (p.timed ? " ns" : " blocks") + " (1 to " +
               std::to_string(max_slice) + (p.on_demand && !p.timed ? ", on demand only when timed)" : ")"));
  const uint64_t end = p.timed ? kernel_units(p.launch) : p.launch.blocks;
  if (p.next == 0 || p.next >= end)
    return bad("goes on at " + std::string(p.timed ? "unit " : "block ") + std::to_string(p.next) + " of " +
               std::to_string(end) + " (between pieces: past the first, before the end)");
  return p;
}

}  // namespace vgpu::gpu
