// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/copy_object.h"

#include <memory>
#include <optional>

#include "gpu/engines/device_work.h"
#include "gpu/engines/engine_deadline.h"
#include "gpu/engines/pitch_copy.h"
#include "vgpu/bits.h"
#include "vgpu/formats.h"

namespace vgpu::gpu {

namespace {

using namespace cls::copy;
using regs::ChannelError;

// Everything LAUNCH_DMA hands to the copy engine, captured by value: the
// work may run after the object has taken further methods.
struct CopyLaunch {
  ChannelContext ctx;  // the channel's, with the fault unit of the copy engine
  uint32_t mthd;
  std::optional<PitchCopy> copy;  // none: DATA_TRANSFER_TYPE NONE
  SemRelease semaphore;
  uint64_t semaphore_va;
  uint32_t payload;
  bool interrupt;
};

// What LAUNCH_DMA does after its data: the semaphore and the interrupt.
MethodDone finish_launch(CopyLaunch& l) {
  if (l.semaphore != SemRelease::none) {
    auto r = release_semaphore(l.ctx, l.semaphore_va, l.payload, l.semaphore == SemRelease::four_words, l.mthd);
    if (!r) return r;
  }
  if (l.interrupt && l.ctx.nonstall) l.ctx.nonstall();
  return {};
}

// Traffic: every byte is read once and written once.
uint64_t copy_cost_ns(const kernels::CostModel& m, uint64_t bytes) { return kernels::stream_cost_ns(m, bytes * 2); }

MethodDone run_launch(CopyLaunch& l) {
  std::optional<MethodDone> on_device;
  if (l.copy && l.ctx.device != nullptr) on_device = pitch_copy_on_device(l.ctx, *l.copy, l.mthd);
  if (on_device) {
    if (!*on_device) return *on_device;
  } else if (l.copy) {
    const uint64_t start = l.ctx.clock.now_ns();
    EngineDeadline deadline(l.ctx, start);
    auto r = pitch_copy_until(l.ctx.mmu, l.ctx.as, *l.copy, [&] { return deadline.expired(); });
    if (!r) return mmu_channel_fault(l.mthd, r.error());
    if (!*r || !deadline.charge(start, copy_cost_ns(l.ctx.cost, l.copy->total_bytes())))
      return channel_fault(ChannelError::timeout, l.mthd);
  }
  return finish_launch(l);
}

// A copy in resumable pieces (a timed CHAN_SLICE, §10.5): each piece
// moves 4 MiB pieces of lines until it has taken the slice time (the
// clock in real time, read every CLOCK_POLL_PIECES pieces or
// CLOCK_POLL_BYTES, stopping when one more such step would reach the
// slice; the cost model in virtual time); the next piece goes on where it
// stopped. The semaphore and interrupt follow the last piece.
class CopyPieces final : public DividedWork {
 public:
  static constexpr uint32_t CLOCK_POLL_PIECES = 64;
  static constexpr uint64_t CLOCK_POLL_BYTES = 1 * MiB;

  explicit CopyPieces(CopyLaunch launch) : l_(std::move(launch)) {}

  MethodDone run_piece(std::optional<uint64_t> budget_ns) override {
    l_.ctx.engine_budget_ns = budget_ns;
    const uint64_t start = l_.ctx.clock.now_ns();
    EngineDeadline deadline(l_.ctx, start);
    const bool modeled = l_.ctx.clock.kind() == ClockKind::virtual_time;
    const uint64_t first = at_.bytes;
    uint64_t polled = first;
    uint64_t polled_at = start;
    uint32_t polls = 0;
    bool expired = false;
    const double slice_bytes = static_cast<double>(l_.ctx.slice_ns) * l_.ctx.cost.bytes_per_ns / 2;  // read + write
    auto stop = [&] {
      if (at_.bytes == first) return false;  // every piece makes progress
      if (modeled) return static_cast<double>(at_.bytes - first) >= slice_bytes;
      if (++polls < CLOCK_POLL_PIECES && at_.bytes - polled < CLOCK_POLL_BYTES) return false;
      // Stop a step early rather than late: when one more step like the
      // last would reach the slice.
      const uint64_t now = l_.ctx.clock.now_ns();
      const uint64_t step = now - polled_at;
      polls = 0;
      polled = at_.bytes;
      polled_at = now;
      expired = deadline.expired();
      return expired || now - start + step >= l_.ctx.slice_ns;
    };
    auto r = pitch_copy_from(l_.ctx.mmu, l_.ctx.as, *l_.copy, at_, stop);
    if (!r) {
      at_.line = l_.copy->lines;  // a fault ends the copy
      return mmu_channel_fault(l_.mthd, r.error());
    }
    if (expired || !deadline.charge(start, copy_cost_ns(l_.ctx.cost, at_.bytes - first)))
      return channel_fault(ChannelError::timeout, l_.mthd);
    if (!finished()) return {};
    return finish_launch(l_);
  }
  bool finished() const override { return at_.finished(*l_.copy); }

 private:
  CopyLaunch l_;
  CopyCursor at_;
};

// A range is usable if it lies inside the 40-bit GPU VA space.
bool fits_va(uint64_t va, uint64_t extent) { return va <= fmt::VA_LIMIT && extent <= fmt::VA_LIMIT - va; }

}  // namespace

std::span<const CopyObject::Record> CopyObject::methods() {
  static constexpr Record TABLE[] = {
      {"NOP", NOP, 1, &ignore},
      {"SET_SEMAPHORE_A", SET_SEMAPHORE_A, 1, &store<&State::semaphore_a>},
      {"SET_SEMAPHORE_B", SET_SEMAPHORE_B, 1, &store<&State::semaphore_b>},
      {"SET_SEMAPHORE_PAYLOAD", SET_SEMAPHORE_PAYLOAD, 1, &store<&State::semaphore_payload>},
      {"ADDRESSING_MODE", ADDRESSING_MODE, 1, &store<&State::addressing_mode>},
      {"LAUNCH_DMA", LAUNCH_DMA, 1, &launch_dma, true},
      {"OFFSET_IN_UPPER", OFFSET_IN_UPPER, 1, &store<&State::offset_in_upper>},
      {"OFFSET_IN_LOWER", OFFSET_IN_LOWER, 1, &store<&State::offset_in_lower>},
      {"OFFSET_OUT_UPPER", OFFSET_OUT_UPPER, 1, &store<&State::offset_out_upper>},
      {"OFFSET_OUT_LOWER", OFFSET_OUT_LOWER, 1, &store<&State::offset_out_lower>},
      {"PITCH_IN", PITCH_IN, 1, &store<&State::pitch_in>},
      {"PITCH_OUT", PITCH_OUT, 1, &store<&State::pitch_out>},
      {"LINE_LENGTH_IN", LINE_LENGTH_IN, 1, &store<&State::line_length_in>},
      {"LINE_COUNT", LINE_COUNT, 1, &store<&State::line_count>},
  };
  return TABLE;
}

MethodOutcome CopyObject::launch_dma(CopyObject& self, ChannelContext& ctx, uint32_t mthd, uint32_t data) {
  const State& s = self.state_;
  const auto transfer = static_cast<Transfer>(LaunchTransferType::get(data));
  const auto semaphore = static_cast<SemRelease>(LaunchSemaphoreType::get(data));
  const auto interrupt = static_cast<Interrupt>(LaunchInterruptType::get(data));

  // Reserved encodings and features the engine does not have.
  if (transfer > Transfer::non_pipelined || semaphore > SemRelease::four_words || interrupt > Interrupt::non_blocking ||
      LaunchRemap::get(data) != 0)
    return channel_fault(ChannelError::bad_copy, mthd);

  CopyLaunch launch{
      .ctx = ctx,
      .mthd = mthd,
      .copy = std::nullopt,
      .semaphore = semaphore,
      .semaphore_va = join64(VaUpper::get(s.semaphore_a), s.semaphore_b),
      .payload = s.semaphore_payload,
      .interrupt = interrupt != Interrupt::none,
  };
  launch.ctx.as.unit = regs::FaultUnit::ce0;
  // The copy's own release comes after its data, on this engine's thread:
  // a host release written from the GPU before it would pass it.
  if (semaphore != SemRelease::none) launch.ctx.following_release.reset();

  if (transfer != Transfer::none) {
    if (LaunchSrcPitch::get(data) == 0 || LaunchDstPitch::get(data) == 0 ||
        s.addressing_mode != ADDRESSING_VIRTUAL_LOCAL_FB)
      return channel_fault(ChannelError::bad_copy, mthd);
    PitchCopy copy{
        .src = join64(VaUpper::get(s.offset_in_upper), s.offset_in_lower),
        .dst = join64(VaUpper::get(s.offset_out_upper), s.offset_out_lower),
        .line_bytes = s.line_length_in,
        .lines = LaunchMultiLine::get(data) ? uint64_t{s.line_count} : uint64_t{1},
        .pitch_in = s.pitch_in,
        .pitch_out = s.pitch_out,
    };
    // 32-bit pitches and counts cannot overflow 64 bits; the VA space can.
    if (copy.total_bytes() != 0) {
      if (!fits_va(copy.src, copy.src_extent())) return channel_fault(ChannelError::bad_argument, mthd, copy.src);
      if (!fits_va(copy.dst, copy.dst_extent())) return channel_fault(ChannelError::bad_argument, mthd, copy.dst);
      launch.copy = copy;
    }
  }

  if (!launch.copy && semaphore == SemRelease::none && !launch.interrupt) return method_done();
  const bool brief = ctx.device == nullptr && (!launch.copy || launch.copy->total_bytes() <= BRIEF_COPY_BYTES);
  if (!brief && launch.copy && ctx.slice_ns != 0 && ctx.device == nullptr)
    return std::optional<EngineWork>{
        EngineWork{.engine = EngineId::copy, .run = {}, .divided = std::make_shared<CopyPieces>(std::move(launch))}};
  return std::optional<EngineWork>{EngineWork{
      .engine = EngineId::copy,
      .run = [launch]() mutable { return run_launch(launch); },
      .brief = brief,
  }};
}

}  // namespace vgpu::gpu
