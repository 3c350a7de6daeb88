// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/host_class.h"

#include <array>
#include <utility>

#include "common/launch_trace.h"
#include "vgpu/classes.h"

namespace vgpu::gpu {

using namespace cls::host;

namespace {

constexpr uint64_t NS_PER_US = 1000;

std::unexpected<ChannelFault> fault(const HostCall& c, regs::ChannelError code, uint64_t addr = 0) {
  return std::unexpected(ChannelFault{code, c.method, c.subch, addr, std::nullopt});
}

uint64_t semaphore_va(const ChannelRun& run) { return gpu::semaphore_va(run.sem_a, run.sem_b); }

HostResult set_object(const HostCall& c) {
  const uint32_t class_id = SetObjectClass::get(c.data);
  if (class_id == cls::CHANNEL_GPFIFO) {  // the host class itself: nothing to bind
    c.run.objects[c.subch].reset();
    return HostStep::done;
  }
  auto object = make_class_object(class_id);
  if (!object) return fault(c, regs::ChannelError::illegal_class, class_id);
  c.run.objects[c.subch] = std::move(object);
  return HostStep::done;
}

HostResult nop(const HostCall&) { return HostStep::done; }
HostResult illegal(const HostCall& c) { return fault(c, regs::ChannelError::illegal_method); }
// A method that only latches its data word for a later one (SEMAPHORE_D, MEM_OP_B).
template <uint32_t ChannelRun::*Field>
HostResult store(const HostCall& c) {
  c.run.*Field = c.data;
  return HostStep::done;
}

HostResult nonstall(const HostCall& c) {
  LaunchTrace::mark(LaunchPhase::interrupt);
  if (c.run.ctx->nonstall) c.run.ctx->nonstall();
  return HostStep::done;
}

HostResult mem_op_b(const HostCall& c) {
  // A channel may only invalidate its own address space; the flush
  // operations have nothing to do (writes reach VRAM at once).
  if (MemOpBOperation::get(c.data) == uint32_t(MemOp::mmu_tlb_invalidate) && c.tlb_invalidate)
    c.tlb_invalidate(c.run.ctx->as.pdb);
  return HostStep::done;
}

HostResult set_reference(const HostCall& c) {
  // Prior engine work has retired: the channel waits for each engine method.
  (void)c.vram.write32(c.run.userd + regs::userd::REF, c.data);
  (void)c.vram.write32(c.run.inst + regs::ramfc::REF, c.data);
  return HostStep::done;
}

HostResult yield(const HostCall&) { return HostStep::yield; }

// ---- SEMAPHORE_D operations, one row each.
using AcquireTest = bool (*)(uint32_t mem, uint32_t payload);
struct SemRow {
  SemOp op;
  AcquireTest satisfied;  // null: release
};
constexpr std::array<SemRow, 4> SEM_OPS{{
    {SemOp::release, nullptr},
    {SemOp::acquire, [](uint32_t mem, uint32_t payload) { return mem == payload; }},
    {SemOp::acq_geq, [](uint32_t mem, uint32_t payload) { return static_cast<int32_t>(mem - payload) >= 0; }},
    {SemOp::acq_and, [](uint32_t mem, uint32_t payload) { return (mem & payload) != 0; }},
}};

HostResult acquire(const HostCall& c, AcquireTest satisfied) {
  ChannelRun& run = c.run;
  ChannelContext& ctx = *run.ctx;
  const uint64_t va = semaphore_va(run);
  auto mem = ctx.mmu.read32(ctx.as, va);
  if (!mem) return std::unexpected(ChannelFault{regs::ChannelError::mmu_fault, c.method, c.subch, va, mem.error()});
  if (satisfied(*mem, run.sem_c)) {
    run.parked = false;
    return HostStep::done;
  }
  const uint64_t now = ctx.clock.now_ns();
  if (!run.parked) {
    run.parked = true;
    run.parked_since_ns = now;
  } else if (auto timeout = acquire_timeout_ns(run.acquire); timeout && now - run.parked_since_ns >= *timeout) {
    run.parked = false;
    return fault(c, regs::ChannelError::sem_timeout, va);
  }
  return HostStep::blocked;
}

HostResult sem_d(const HostCall& c) {
  const uint32_t op = SemDOperation::get(c.data);
  for (const SemRow& row : SEM_OPS) {
    if (uint32_t(row.op) != op) continue;
    if (row.satisfied) return acquire(c, row.satisfied);
    const uint64_t va = semaphore_va(c.run);
    const bool four_words = !SemDReleaseSize4::get(c.data);
    // The GPU already wrote this release after the engine work before it
    // (FollowingRelease): writing it again could undo a later release of
    // another channel that saw it.
    const std::optional<FollowingRelease> early = std::exchange(c.run.released_early, std::nullopt);
    if (early && !four_words && early->va == va && early->payload == c.run.sem_c) {
      LaunchTrace::mark(LaunchPhase::release);
      if (c.device_releases) c.device_releases->fetch_add(1, std::memory_order_relaxed);
      if (c.run.ctx->semaphore_written) c.run.ctx->semaphore_written();
      return HostStep::done;
    }
    auto done = release_semaphore(*c.run.ctx, va, c.run.sem_c, four_words, c.method);
    LaunchTrace::mark(LaunchPhase::release);
    if (!done) {
      ChannelFault f = done.error();
      f.subch = c.subch;
      return std::unexpected(f);
    }
    if (c.run.ctx->semaphore_written) c.run.ctx->semaphore_written();
    return HostStep::done;
  }
  return fault(c, regs::ChannelError::illegal_sem);
}

// ---- The method table.
struct HostMethod {
  uint32_t method;
  const char* name;
  HostResult (*run)(const HostCall&);
};
constexpr std::array<HostMethod, 13> METHODS{{
    {SET_OBJECT, "SET_OBJECT", set_object},
    {ILLEGAL, "ILLEGAL", illegal},
    {NOP, "NOP", nop},
    {SEMAPHORE_A, "SEMAPHORE_A", store<&ChannelRun::sem_a>},
    {SEMAPHORE_B, "SEMAPHORE_B", store<&ChannelRun::sem_b>},
    {SEMAPHORE_C, "SEMAPHORE_C", store<&ChannelRun::sem_c>},
    {SEMAPHORE_D, "SEMAPHORE_D", sem_d},
    {NON_STALL_INTERRUPT, "NON_STALL_INTERRUPT", nonstall},
    {FB_FLUSH, "FB_FLUSH", nop},
    {MEM_OP_A, "MEM_OP_A", store<&ChannelRun::mem_op_a>},
    {MEM_OP_B, "MEM_OP_B", mem_op_b},
    {SET_REFERENCE, "SET_REFERENCE", set_reference},
    {YIELD, "YIELD", yield},
}};

}  // namespace

uint64_t semaphore_va(uint32_t sem_a, uint32_t sem_b) {
  return (uint64_t{SemAHi::get(sem_a)} << 32) | (sem_b & SemBLo::mask);
}

std::optional<FollowingRelease> one_word_release(std::span<const uint32_t, SEMAPHORE_METHODS> abcd) {
  const uint32_t d = abcd[3];
  if (SemDOperation::get(d) != uint32_t(SemOp::release) || !SemDReleaseSize4::get(d)) return std::nullopt;
  return FollowingRelease{.va = semaphore_va(abcd[0], abcd[1]), .payload = abcd[2]};
}

std::optional<uint64_t> acquire_timeout_ns(uint32_t acq) {
  using namespace regs::ramfc;
  if (!AcquireTimeoutEnable::get(acq)) return std::nullopt;
  return (uint64_t{AcquireTimeout::get(acq)} << AcquireTimeoutShift::get(acq)) * NS_PER_US;
}

HostResult host_method(const HostCall& call) {
  for (const HostMethod& m : METHODS)
    if (m.method == call.method) return m.run(call);
  return fault(call, regs::ChannelError::illegal_method);
}

}  // namespace vgpu::gpu
