// SPDX-License-Identifier: GPL-2.0-or-later
// A built-in kernel launch as the compute engine runs it: the argument
// block, the buffers it touches (from kernels::footprint) and the work
// itself, which maps every buffer, runs the kernel and charges its cost.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <expected>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "gpu/engines/class_object.h"
#include "gpu/kernels/footprint.h"
#include "vgpu/classes.h"

namespace vgpu::gpu {

// ext: the longest spin kernel a launch may ask for. A longer one is
// bad_argument: engines are not preemptive, so this bounds how long one
// launch can hold the compute engine by request.
using cls::MAX_SPIN_NS;  // the contract's limit (vgpu/classes.h)

struct KernelLaunch {
  static constexpr size_t MAX_ARG_BYTES = sizeof(cls::MriqArgs);  // the largest argument block

  cls::Kernel kernel;
  std::array<std::byte, MAX_ARG_BYTES> args{};
  size_t arg_bytes = 0;
  kernels::KernelFootprint footprint;
  uint64_t blocks = 1;  // thread blocks of the grid (x * y * z), >= 1

  std::span<const std::byte> arg_span() const { return {args.data(), arg_bytes}; }
};

// A kernel's argument block as its struct (cls::FillArgs, ...); the caller
// has checked its size (the launch's arg_bytes).
template <typename Args>
[[nodiscard]] Args decode_args(std::span<const std::byte> bytes) {
  Args a;
  std::memcpy(&a, bytes.data(), sizeof(a));
  return a;
}

// A launch's buffers found by their argument field name (the footprint's
// names), for whichever back end runs it: each B has `use` (its
// kernels::BufferUse) and `data` (its bytes as the kernel sees them: a
// host view, a bounce copy, device memory; null when it has none).
template <typename B>
class NamedBuffers {
 public:
  explicit NamedBuffers(std::span<const B> buffers) : buffers_(buffers) {}
  float* f32(std::string_view name) const {
    const B* b = find(name);
    return b == nullptr ? nullptr : reinterpret_cast<float*>(b->data);
  }
  uint64_t count(std::string_view name) const {
    const B* b = find(name);
    return b == nullptr || b->data == nullptr ? 0 : b->use.bytes / sizeof(float);
  }
  std::span<float> span(std::string_view name) const { return {f32(name), count(name)}; }

 private:
  const B* find(std::string_view name) const {
    for (const B& b : buffers_)
      if (name == b.use.name) return &b;
    return nullptr;
  }
  std::span<const B> buffers_;
};

// Is this a kernel the device has?
[[nodiscard]] bool kernel_known(cls::Kernel kernel);

// The launch's modeled cost in ns (the kernel table's cost row; a spin's
// cost is its duration, charged by whoever runs it: 0 here). Whichever
// engine back end runs the work charges this.
[[nodiscard]] uint64_t kernel_cost_ns(const kernels::CostModel& m, const KernelLaunch& launch);

// Checks what the footprint cannot: each buffer inside the VA space and
// aligned for its element type, a spin within MAX_SPIN_NS. Returns the
// offending address (or 0) on failure.
[[nodiscard]] std::expected<void, uint64_t> check_launch(const KernelLaunch& launch);

// The launch's work units (docs/spec/vgpu.md §10.5): elements (fill,
// saxpy, madd), tiles of C (sgemm), tiles of the output (conv2d:
// kernels::conv2d_tiles),
// points (mriq), nanoseconds (spin). The grid's thread blocks divide them
// evenly: blocks [first, end) of B do units [first*U/B, end*U/B).
[[nodiscard]] uint64_t kernel_units(const KernelLaunch& launch);

// Thread blocks [first, end) of a launch.
struct BlockRange {
  uint64_t first;
  uint64_t end;
};

// Runs blocks of the launch on the engine: maps each buffer (faults become
// mmu_fault at `mthd`), runs the kernel on the blocks' units, charges
// their modeled cost (the launch's cost in proportion to the units, plus
// the fixed launch cost for each part: slicing costs a launch per slice;
// spin: sleeps for its part of the duration).
[[nodiscard]] MethodDone run_kernel_blocks(ChannelContext& ctx, const KernelLaunch& launch, uint32_t mthd,
                                           BlockRange blocks);
// The whole launch: on the context's device where it has one, else the model.
[[nodiscard]] MethodDone run_kernel(ChannelContext& ctx, const KernelLaunch& launch, uint32_t mthd);

// The launch as divided work in slices of slice_blocks thread blocks
// (SliVER's way: each slice is the launch with a block offset).
[[nodiscard]] std::shared_ptr<DividedWork> slice_kernel(const ChannelContext& ctx, const KernelLaunch& launch,
                                                        uint32_t mthd, uint32_t slice_blocks);
// What timed slicing learned of a channel's launches (kept by its compute
// object): for the last launch of each built-in kernel, its units and the
// units a piece of it ran, so that the next such launch starts there
// instead of measuring from one block again.
struct SliceMemory {
  struct Learned {
    uint64_t units = 0;
    uint64_t piece_units = 0;
    uint64_t target_ns = 0;
  };
  std::array<Learned, 16> by_kernel{};
};

// The launch as divided work in pieces of about ctx.slice_ns of engine time
// each (a timed CHAN_SLICE, §10.5): its units in chunks sized from their
// measured speed; a spin in slices of that many nanoseconds.
// A piece whose first chunk (one block's units) took t runs at least
// MIN_PIECE_PER_CHUNK * t (the kernel's own floor, where it has one),
// at most half the piece budget: a kernel whose every chunk has a large
// fixed cost is then sliced coarsely enough that slicing costs it a few
// percent. sgemm's units are tiles of C (kernels::SGEMM_TILE_ROWS x
// SGEMM_TILE_COLS), each reading only its rows of A and columns of B, and
// conv2d's are tiles of its output (kernels::conv2d_tiles), each building
// only its band's im2col columns: they have no floor, and their pieces
// are near the slice. Their tiles run side by side on the tile pool
// (gpu/kernels/tile_pool.h), so their piece is not cut into chunks: it is
// one job of the pool, whose threads take tiles until the piece's time is
// up (a chunk, each a job ending at a barrier of all tile threads, left
// them idle; a piece runs past its time by at most one tile).
inline constexpr uint64_t MIN_PIECE_PER_CHUNK = 32;
[[nodiscard]] std::shared_ptr<DividedWork> slice_kernel_timed(const ChannelContext& ctx, const KernelLaunch& launch,
                                                              uint32_t mthd, std::shared_ptr<SliceMemory> memory);

// A sliced built-in launch between two pieces, as a migration image
// carries it (docs/migration.md §2; one codec, kernel_work_image.cc): the
// launch as the channel had it (kernel, argument block, grid blocks; the
// footprint is found again from the arguments), how it is divided, and
// where the next piece starts.
struct KernelProgress {
  KernelLaunch launch;
  bool timed = false;      // pieces of `slice` ns (slice_kernel_timed), else slices of `slice` blocks
  uint64_t slice = 0;      // blocks a slice, or ns a piece
  bool on_demand = false;  // timed pieces that end only when the host asks for the engine
  uint64_t next = 0;       // the next block, or (timed) the next unit
};
// The WorkState kind of a KernelProgress.
inline constexpr uint32_t KERNEL_WORK_KIND = 1;
// The most state bytes a KernelProgress takes (every field at its widest).
inline constexpr size_t KERNEL_WORK_MAX_BYTES = 4 + 4 + KernelLaunch::MAX_ARG_BYTES + 8 + 1 + 1 + 8 + 8;

[[nodiscard]] WorkState encode_kernel_progress(const KernelProgress& p);
// Refuses, naming the field: another kind, cut or long bytes, a kernel the
// device does not have, an argument block of the wrong size or one a
// launch would have refused (check_launch), a grid past MAX_GRID_DIM in
// each dimension, a slice of 0 or past CHAN_SLICE's field, and a next piece
// at or past the end (between pieces, at least one ran and one is left).
[[nodiscard]] std::expected<KernelProgress, std::string> decode_kernel_progress(const WorkState& work);

// The divided work of `p` on `ctx` (its slice_yield is kept only for
// on-demand pieces), going on at p.next.
[[nodiscard]] std::shared_ptr<DividedWork> resume_kernel_work(const ChannelContext& ctx, const KernelProgress& p,
                                                              uint32_t mthd, std::shared_ptr<SliceMemory> memory);

}  // namespace vgpu::gpu
