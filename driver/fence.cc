// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/fence.h"

#include <algorithm>
#include <chrono>

#include "common/launch_trace.h"
#include "driver/irq_wait.h"
#include "driver/msg.h"
#include "driver/poll.h"
#include "vgpu/classes.h"

namespace vgpu::driver {

namespace h = cls::host;

namespace {
constexpr uint64_t ERROR_CHECK_NS = 1'000'000;
}  // namespace

Fence FenceSlot::emit(PushBuffer& pb) {
  ++seq_;
  // The one-word release (payload only, after engine idle): the driver
  // never reads a release's timestamp, and a GPU can write the payload
  // itself right after the work (docs/cuda.md, "Fences").
  pb.inc(subch::HOST, h::SEMAPHORE_A,
         {h::SemAHi::make(hi32(va_)), lo32(va_) & h::SemBLo::mask, seq_,
          h::SemDOperation::make(static_cast<uint32_t>(h::SemOp::release)) | h::SemDReleaseSize4::mask});
  pb.immediate(subch::HOST, h::NON_STALL_INTERRUPT, 0);
  last_submitted_ = ch_.submits();
  return Fence{ch_.chid(), seq_, last_submitted_};
}

uint32_t FenceSlot::completed() { return port_.read32(Bar::bar1, bar1_); }

// Spin only while the recent work came back within the spin: a wait for
// a long kernel (or on a busy GPU) sleeps and costs no CPU. A wait of up
// to HYBRID_MAX_NS sleeps until shortly before the time the last one took
// and polls from there (the hybrid polling of Linux's block layer), so
// that its end costs no wake-up either; longer ones sleep through. A
// sleep ends late by the host's timer slack and the wake-up of an idle
// CPU (about 25 us on the GPU machine, where a window opened only spin_ns
// early was missed and an interrupt's wake-up ended the wait instead), so
// the window opens that much earlier too.
SpinWindow FenceSlot::hybrid_window(uint64_t last_wait_ns, uint64_t spin_ns, uint64_t wake_late_ns) {
  if (last_wait_ns <= spin_ns) return {0, spin_ns};
  if (spin_ns == 0 || last_wait_ns > HYBRID_MAX_NS) return {};
  const uint64_t early = spin_ns + std::min(wake_late_ns, MAX_WAKE_LATE_NS);
  const uint64_t from = last_wait_ns > early ? last_wait_ns - early : 0;
  return {from, last_wait_ns + spin_ns};
}

uint64_t FenceSlot::next_wake_late(uint64_t estimate_ns, uint64_t late_ns) {
  late_ns = std::min(late_ns, MAX_WAKE_LATE_NS);
  if (late_ns >= estimate_ns) return late_ns;
  return estimate_ns - (estimate_ns - late_ns) / 4;
}

Status FenceSlot::wait(Fence f, uint64_t timeout_ns) {
  Port& port = port_;
  if (f.chid != ch_.chid())
    return fail(Errc::invalid_argument, msg("fence of channel {} waited on channel {}", f.chid, ch_.chid()));
  if (static_cast<int32_t>(seq_ - f.value) < 0)
    return fail(Errc::invalid_argument, msg("channel {}: fence {} was never emitted (last {})", f.chid, f.value, seq_));
  regs::ChannelError err = regs::ChannelError::none;
  const auto passed = [&] { return static_cast<int32_t>(port.read32(Bar::bar1, bar1_) - f.value) >= 0; };
  // With interrupts: the fence is memory, and the error register is read
  // only when an error message came (a register read traps in a VM).
  const auto signalled = [&] {
    if (passed()) return true;
    err = ch_.error_if_signalled();
    return err != regs::ChannelError::none;
  };
  // Without: poll the memory and look at the register only every
  // ERROR_CHECK_NS (it would compete with the GPU for the CPU).
  auto next_check = std::chrono::steady_clock::now();
  auto polled = [&] {
    if (passed()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now < next_check) return false;
    next_check = now + std::chrono::nanoseconds(ERROR_CHECK_NS);
    err = ch_.error();
    return err != regs::ChannelError::none;
  };
  const auto start = std::chrono::steady_clock::now();
  uint64_t late_ns = wake_late_ns_;  // unchanged unless the wait slept towards its window
  const bool ok = ch_.interrupts() ? wait_on_interrupts(port, signalled, timeout_ns, spin_window(), &late_ns)
                                   : poll_until(port, polled, timeout_ns);
  wake_late_ns_ = next_wake_late(wake_late_ns_, late_ns);
  LaunchTrace::launch_waited();
  last_wait_ns_ = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  if (!ok)
    return fail(Errc::timeout, msg("channel {}: fence {} not signaled after {} ns (completed {})", f.chid, f.value,
                                   timeout_ns, port.read32(Bar::bar1, bar1_)));
  if (err != regs::ChannelError::none) return std::unexpected(ch_.error_status(err));
  ch_.consumed_before(f.submitted);
  return {};
}

}  // namespace vgpu::driver
