// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/pitch_copy.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "gpu/engines/engine_limits.h"

namespace vgpu::gpu {

namespace {

Walk<std::vector<PhysRun>> phys_runs(Mmu& mmu, const AccessContext& as, uint64_t va, uint64_t len, bool write) {
  std::vector<PhysRun> out;
  auto walked = mmu.for_each_phys_run(as, va, len, write, [&out](const PhysRun& run) { out.push_back(run); });
  if (!walked) return std::unexpected(walked.error());
  return out;
}

// Do the two views share VRAM? Direct views are pointers into one mapping
// of VRAM, where memmove sees any overlap itself; a window is a second
// mapping of the same pages, where it cannot. Runs are compared within
// their aperture (runs_overlap): should the tables have changed since the
// views were made and a range now reach system memory, a bus address is
// not taken for the VRAM address of the same number.
Walk<bool> views_alias(Mmu& mmu, const AccessContext& as, uint64_t src, uint64_t dst, uint64_t len) {
  auto s = phys_runs(mmu, as, src, len, false);
  if (!s) return std::unexpected(s.error());
  auto d = phys_runs(mmu, as, dst, len, true);
  if (!d) return std::unexpected(d.error());
  return runs_overlap(std::move(*s), std::move(*d));
}

// Copy one piece (at most COPY_PIECE_BYTES) through host views of both ranges.
Walk<void> copy_piece(Mmu& mmu, const AccessContext& as, uint64_t src, uint64_t dst, uint64_t len) {
  auto in = mmu.map_range(as, src, len, false);
  if (!in) return std::unexpected(in.error());
  auto out = mmu.map_range(as, dst, len, true);
  if (!out) return std::unexpected(out.error());

  // System memory on one side: one DMA per run, straight between VRAM
  // (the other side's view) and system memory; no alias is possible.
  if (in->data() != nullptr && out->sysmem()) return mmu.write(as, dst, in->data(), len);
  if (out->data() != nullptr && in->sysmem()) return mmu.read(as, src, out->data(), len);
  if (in->data() == nullptr || out->data() == nullptr) {
    // The host could not map a window: a bounce copy of the piece.
    std::vector<std::byte> bounce(len);
    if (auto r = mmu.read(as, src, bounce.data(), len); !r) return r;
    return mmu.write(as, dst, bounce.data(), len);
  }
  if (!in->windowed() && !out->windowed()) {
    std::memmove(out->data(), in->data(), len);
    return {};
  }
  auto alias = views_alias(mmu, as, src, dst, len);
  if (!alias) return std::unexpected(alias.error());
  if (*alias) {
    std::vector<std::byte> bounce(in->data(), in->data() + len);
    std::memcpy(out->data(), bounce.data(), len);
  } else {
    std::memcpy(out->data(), in->data(), len);
  }
  return {};
}

}  // namespace

Walk<void> pitch_copy(Mmu& mmu, const AccessContext& as, const PitchCopy& copy) {
  auto r = pitch_copy_until(mmu, as, copy, {});
  if (!r) return std::unexpected(r.error());
  return {};
}

Walk<bool> pitch_copy_until(Mmu& mmu, const AccessContext& as, const PitchCopy& copy,
                            const std::function<bool()>& expired) {
  CopyCursor at;
  return pitch_copy_from(mmu, as, copy, at, expired);
}

Walk<bool> pitch_copy_from(Mmu& mmu, const AccessContext& as, const PitchCopy& copy, CopyCursor& at,
                           const std::function<bool()>& stop) {
  if (copy.lines == 0 || copy.line_bytes == 0) {
    at.line = copy.lines;
    return true;
  }
  const bool overlap = copy.src < copy.dst + copy.dst_extent() && copy.dst < copy.src + copy.src_extent();
  const bool backwards = overlap && copy.dst > copy.src;
  const uint64_t pieces = (copy.line_bytes + COPY_PIECE_BYTES - 1) / COPY_PIECE_BYTES;
  for (; at.line < copy.lines; ++at.line, at.piece = 0) {
    // Lines, and a line's pieces, last first when `backwards`, so that an
    // overlapping copy whose destination starts above its source copies as
    // memmove would.
    const uint64_t line = backwards ? copy.lines - 1 - at.line : at.line;
    const uint64_t src = copy.src + line * copy.pitch_in;
    const uint64_t dst = copy.dst + line * copy.pitch_out;
    for (; at.piece < pieces; ++at.piece) {
      if (stop && stop()) return false;
      const uint64_t off = (backwards ? pieces - 1 - at.piece : at.piece) * COPY_PIECE_BYTES;
      const uint64_t len = std::min(COPY_PIECE_BYTES, copy.line_bytes - off);
      if (auto r = copy_piece(mmu, as, src + off, dst + off, len); !r) return std::unexpected(r.error());
      at.bytes += len;
    }
  }
  return true;
}

}  // namespace vgpu::gpu
