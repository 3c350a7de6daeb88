// SPDX-License-Identifier: GPL-2.0-or-later
// The guest-program decoder (guest_program.h): each operation is an
// opcode byte, chosen from its surface's mix, and its arguments. Addresses
// are picked structurally (one of the attacker's own buffers, its ring,
// its page directory, a victim address as a naive mediator would see it,
// the partition's end, or raw bits) so that the fuzzer spends its inputs
// on the checks that matter rather than on finding a mapped page.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "driver/pushbuf.h"
#include "mediator/fuzz/guest_fixture.h"

namespace vgpu::fuzz {
namespace {

namespace pv = regs::pv;
using driver::Bar;
using fmt::PageSize;

struct RegRow {
  uint32_t base, stride, count;
};
constexpr RegRow REG_ROWS[] = {
#include "fuzz_regs.inc"
};
struct MethodRow {
  uint32_t cls, method;
};
constexpr MethodRow METHOD_ROWS[] = {
#include "fuzz_methods.inc"
};
constexpr uint8_t RESET_ONE_IN = 8;
constexpr uint64_t IDLE_CHECK_NS = 500'000;  // a wait op's slice (native_wait, mediated_wait)
constexpr unsigned CLASS_SUBCH[] = {driver::subch::HOST, driver::subch::COPY, driver::subch::COMPUTE};

// Each surface's mix: an opcode byte picks one entry (repeats weigh).
constexpr Op BAR_MIX[] = {Op::reg_write,  Op::reg_write, Op::reg_write,    Op::reg_read,    Op::bar_write,
                          Op::bar_write,  Op::bar_read,  Op::pramin_write, Op::fill,        Op::wait,
                          Op::invalidate, Op::doorbell,  Op::reset,        Op::new_context, Op::stop};
constexpr Op PUSHBUF_MIX[] = {Op::pushbuf,  Op::pushbuf,     Op::pushbuf, Op::gp_entry, Op::gp_entry,
                              Op::doorbell, Op::fill,        Op::copy,    Op::launch,   Op::wait,
                              Op::wait,     Op::raw_channel, Op::spin,    Op::reset,    Op::stop};
constexpr Op PAGETABLE_MIX[] = {Op::pte_write,   Op::pte_write, Op::pte_write, Op::pde_write, Op::invalidate,
                                Op::invalidate,  Op::fill,      Op::copy,      Op::copy,      Op::pinned_copy,
                                Op::launch,      Op::wait,      Op::wait,      Op::bar_read,  Op::bar_write,
                                Op::new_context, Op::stop};
constexpr Op PV_MIX[] = {Op::pv_batch,  Op::pv_batch,    Op::pv_batch,    Op::pv_slot_base, Op::fill,
                         Op::copy,      Op::pinned_copy, Op::wait,        Op::bar_read,     Op::bar_write,
                         Op::pte_write, Op::reset,       Op::new_context, Op::stop};
constexpr Op DEVICE_MIX[] = {Op::reg_write,  Op::reg_read,    Op::bar_write, Op::bar_read,    Op::pramin_write,
                             Op::fill,       Op::copy,        Op::launch,    Op::spin,        Op::wait,
                             Op::pushbuf,    Op::gp_entry,    Op::doorbell,  Op::pte_write,   Op::pde_write,
                             Op::invalidate, Op::pinned_copy, Op::reset,     Op::raw_channel, Op::new_context,
                             Op::stop};

std::span<const Op> mix(Surface s) {
  switch (s) {
    case Surface::bar: return BAR_MIX;
    case Surface::pushbuf: return PUSHBUF_MIX;
    case Surface::pagetable: return PAGETABLE_MIX;
    case Surface::pv: return PV_MIX;
    case Surface::device: return DEVICE_MIX;
  }
  return BAR_MIX;
}

class Runner {
 public:
  Runner(Attacker& a, Input& in) : a_(a), in_(in), f_(Fixture::get()) {}
  bool step(Op op);  // false: stop

 private:
  // ---- picks
  uint32_t reg_offset();
  uint64_t gaddr_of(uint64_t va) {
    auto pte = a_.ctx->address_space().vmm().pte(va, PageSize::small);
    return pte ? fmt::pte::addr(*pte) + va % fmt::SMALL_PAGE : 0;
  }
  uint64_t pick_va();
  uint64_t pick_gaddr();
  uint64_t pick_bus();
  uint64_t pick_pte();
  driver::Buffer pick_buffer();
  uint32_t pick_word();
  uint64_t bar_offset(Bar bar);
  void pramin(uint64_t gaddr, uint32_t value) { a_.raw->set_vram32(gaddr, value); }
  void wait() {
    if (a_.last && !reset_) {
      if (a_.mode == Mode::native)
        native_wait(*a_.last);
      else
        mediated_wait(*a_.last);
    }
    a_.last.reset();
  }
  void native_wait(driver::Fence fence);
  void mediated_wait(driver::Fence fence);
  std::optional<uint64_t> sliced_wait(driver::Fence fence, const std::function<bool()>& settled);
  std::optional<uint64_t> quiet();
  void keep(Result<driver::Fence> f) {
    if (f)
      a_.last = *f;
    else
      note(f.error());
  }
  void note(const Error& e) {
    if (e.code == Errc::timeout) a_.wedged = true;
  }
  static bool uses_driver(Op op);
  // ---- operations with more to them
  void pushbuf();
  void gp_entry();
  void pte_write();
  void pv_batch();
  void raw_channel();
  void new_context();

  Attacker& a_;
  Input& in_;
  Fixture& f_;
  bool reset_ = false;
};

uint32_t Runner::reg_offset() {
  const uint8_t sel = in_.u8();
  if (sel < 224) return register_offset(sel, in_.u8());
  if (sel < 240) return regs::pramin::BASE + (in_.u32() % regs::pramin::SIZE & ~3u);
  return static_cast<uint32_t>(in_.u32() % regs::pci::BAR0_SIZE) & ~3u;
}

uint64_t Runner::pick_va() {
  const uint8_t sel = in_.u8();
  const uint64_t off = (in_.u16() & ~3u);
  switch (sel % 7) {
    case 0: return a_.va(a_.a) + off % BUFFER_BYTES;
    case 1: return a_.va(a_.b) + off % BUFFER_BYTES;
    case 2: return a_.va(a_.pinned) + off % BUFFER_BYTES;
    case 3: return a_.ctx->channel().gpfifo_va() + off % fmt::SMALL_PAGE;
    case 4: return a_.ctx->channel().pushbuf_va() + off;
    case 5: return a_.va(a_.a) + (uint64_t{in_.u32()} << 12);
    default: return in_.u64() % fmt::VA_LIMIT & ~uint64_t{3};
  }
}

uint64_t Runner::pick_gaddr() {
  const uint8_t sel = in_.u8();
  const uint64_t off = in_.u16() & ~3u;
  switch (sel % 8) {
    case 0: return gaddr_of(a_.va(a_.a)) + off % BUFFER_BYTES;
    case 1: return in_.u32() % a_.vram_bytes() & ~uint64_t{3};
    case 2: return f_.foreign_vram(a_, f_.victim_sentinel_gaddr()) + off % fmt::SMALL_PAGE;
    case 3: return a_.vram_bytes() - fmt::SMALL_PAGE + off;
    case 4: return a_.pd() + off % fmt::PD.table_bytes();
    case 5: return a_.ctx->channel().inst() + off % fmt::SMALL_PAGE;
    case 6: return gaddr_of(a_.ctx->channel().gpfifo_va()) + off % fmt::SMALL_PAGE;
    default: return in_.u64() % fmt::VA_LIMIT & ~uint64_t{3};
  }
}

uint64_t Runner::pick_bus() {
  const uint8_t sel = in_.u8();
  const uint64_t off = uint64_t{in_.u16()} << 4;
  switch (sel % 4) {
    case 0: return off % VM_RAM;
    case 1: return f_.foreign_ram(a_, off % VM_RAM);
    case 2: return VM_RAM - fmt::SMALL_PAGE + (off & 0xffff);
    default: return in_.u64();
  }
}

uint64_t Runner::pick_pte() {
  const uint8_t sel = in_.u8();
  const fmt::pte::Flags flags{.read_only = (sel & 0x10) != 0,
                              .priv = (sel & 0x20) != 0,
                              .kind = (sel & 0x40) ? fmt::pte::KIND_GENERIC_BLOCKLINEAR : in_.u8()};
  switch (sel % 4) {
    case 0: return fmt::pte::make(pick_gaddr(), flags);
    case 1: return fmt::pte::make_sysmem(pick_bus(), flags);
    case 2: return fmt::pte::make_sysmem(pick_bus(), flags, fmt::Target::sysmem_coherent);
    default: return in_.u64();
  }
}

driver::Buffer Runner::pick_buffer() {
  switch (in_.u8() % 3) {
    case 0: return a_.a;
    case 1: return a_.b;
    default: return a_.pinned;
  }
}

uint32_t Runner::pick_word() {
  const uint8_t sel = in_.u8();
  switch (sel % 6) {
    case 0: return lo32(pick_va());
    case 1: return hi32(pick_va());
    case 2: return in_.u8();
    case 3: return in_.u16();
    default: return in_.u32();
  }
}

uint64_t Runner::bar_offset(Bar bar) {
  const uint64_t size = a_.port->bar_size(bar);
  if (size == 0) return 0;
  if (bar == Bar::bar1 && in_.u8() % 2) {
    return a_.raw->userd_base() + (in_.u8() % regs::NUM_CHANNELS) * regs::userd::SIZE +
           (in_.u8() % regs::userd::SIZE & ~3u);
  }
  return in_.u32() % size & ~uint64_t{3};
}

// Pass-through: the attacker is the GPU's only user, so once the GPU is
// idle (no channel with work it can run, every engine idle) nothing can
// write an unpassed fence before the next operation does something: the
// wait ends there instead of sleeping out VGPU_FUZZ_OP_WAIT_MS (most waits
// that ran out were on fences a broken channel never writes: 83% of the
// harness thread's time asleep). Checked between slices of the fence wait,
// so that a fence that passes ends it as before.
void Runner::native_wait(driver::Fence fence) {
  if (sliced_wait(fence, [&] { return f_.native().wait_idle(0); }))
    (void)a_.ctx->wait(fence, 1);  // written just before the GPU went idle (0 would be the driver's own wait)
}

// The fence wait of a wait op, in slices of IDLE_CHECK_NS up to the op's
// wait: it ends when the fence passes or the channel fails (nullopt), or
// when `settled` says, after a slice, that nothing can write the fence
// before the next operation: then the wait the op had left (at least 1 ns).
std::optional<uint64_t> Runner::sliced_wait(driver::Fence fence, const std::function<bool()>& settled) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(f_.op_wait_ns());
  const auto left = [&] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - std::chrono::steady_clock::now()).count();
  };
  for (int64_t ns = left(); ns > 0; ns = left()) {
    const Status s = a_.ctx->wait(fence, std::min<uint64_t>(IDLE_CHECK_NS, static_cast<uint64_t>(ns)));
    if (s || s.error().code != Errc::timeout) return std::nullopt;  // passed, or the channel failed
    if (settled()) return static_cast<uint64_t>(std::max<int64_t>(left(), 1));
  }
  return std::nullopt;
}

// Mediated: the attacker's work cannot move before its next operation
// when none of it is queued at the host, no turn of it is on the GPU, and
// the physical GPU is idle (a channel left on the GPU outside a turn, or
// another VM's work that might release one, keeps it busy). Then the
// host's turn count (none: not quiet). A requeue of what an ended turn
// left comes just after the end is told (Turn::end): two quiet looks a
// slice apart with no turn started or ended between them rule that out.
std::optional<uint64_t> Runner::quiet() {
  const TurnWatch& turns = f_.turns();
  const uint64_t events = turns.events.load();
  const uint32_t vm = a_.vgpu->id();
  if (turns.vm.load() == vm || f_.host().queued_submissions(vm) != 0 || !f_.host().gpu().wait_idle(0))
    return std::nullopt;
  if (turns.events.load() != events) return std::nullopt;
  return events;
}

// VGPU_FUZZ_WAIT_CHECK=1, a check of the rule below (not for campaigns):
// a mediated wait found quiet goes on to its end, and at exit the process
// prints how many waits it ran, how many were found quiet, and how many
// of those saw their fence pass after all (the rule would have cut them).
struct QuietCheck {
  uint64_t waits = 0, quiet = 0, passed_later = 0;
};
QuietCheck* quiet_check() {
  static QuietCheck* const check = []() -> QuietCheck* {
    if (!std::getenv("VGPU_FUZZ_WAIT_CHECK")) return nullptr;
    static QuietCheck counts;
    std::atexit([] {
      std::fprintf(stderr, "fuzz fixture: mediated wait ops %llu, found quiet %llu, of those passed later %llu\n",
                   static_cast<unsigned long long>(counts.waits), static_cast<unsigned long long>(counts.quiet),
                   static_cast<unsigned long long>(counts.passed_later));
    });
    return &counts;
  }();
  return check;
}

// As native_wait, for a mediated attacker: the wait ends once the
// attacker was quiet (above) at two looks in a row, before and after a
// slice of the fence wait, with no turn between (most waits that ran out
// were on fences a broken channel never writes: about 60% of bar's time
// asleep).
void Runner::mediated_wait(driver::Fence fence) {
  QuietCheck* check = quiet_check();
  if (check) ++check->waits;
  std::optional<uint64_t> was = quiet();
  const std::optional<uint64_t> left = sliced_wait(fence, [&] {
    const std::optional<uint64_t> now = quiet();
    const bool twice = now && was == now;
    was = now;
    return twice;
  });
  if (!left) return;
  if (check) {
    ++check->quiet;
    if (a_.ctx->wait(fence, *left)) ++check->passed_later;
    return;
  }
  (void)a_.ctx->wait(fence, 1);  // written just before it went quiet
}

void Runner::pushbuf() {
  std::vector<uint32_t> words;
  const uint32_t methods = 1 + in_.u8() % 12;
  for (uint32_t m = 0; m < methods; ++m) {
    const uint8_t kind = in_.u8();
    const MethodRow& row = METHOD_ROWS[in_.u8() % std::size(METHOD_ROWS)];
    const unsigned subch = (kind & 0x80) ? (kind >> 4) % regs::NUM_SUBCHANNELS : CLASS_SUBCH[row.cls];
    const uint32_t method = (kind & 0x08) ? (in_.u16() & 0x3ffc) : row.method;
    const uint32_t count = 1 + in_.u8() % 6;
    switch (kind % 5) {
      case 0: words.push_back(fmt::mthd::immediate(subch, method, pick_word() & fmt::mthd::IMMEDIATE_MAX)); continue;
      case 1: words.push_back(fmt::mthd::inc(subch, method, count)); break;
      case 2: words.push_back(fmt::mthd::non_inc(subch, method, count)); break;
      case 3: words.push_back(fmt::mthd::one_inc(subch, method, count)); break;
      default: words.push_back(in_.u32()); break;  // a raw header
    }
    for (uint32_t i = 0; i < count; ++i) words.push_back(pick_word());
  }
  if (auto st = a_.ctx->channel().submit(words); !st) note(st.error());
}

void Runner::gp_entry() {
  driver::Channel& ch = a_.ctx->channel();
  const uint32_t index = in_.u8() % 16;
  const uint64_t at = gaddr_of(ch.gpfifo_va() + index * sizeof(uint64_t));
  const uint8_t sel = in_.u8();
  const uint64_t pb_va = sel & 1 ? ch.pushbuf_va() + (in_.u16() & ~3u) : pick_va();
  fmt::gp::Entry e = fmt::gp::make(pb_va, in_.u16() % 512);
  if (sel & 2) e = {in_.u32(), in_.u32()};
  pramin(at, e.w0);
  pramin(at + 4, e.w1);
  a_.raw->doorbell(ch.chid(), sel & 4 ? in_.u32() : index + 1);
}

void Runner::pte_write() {
  const uint64_t va = pick_va();
  const PageSize ps = in_.u8() % 2 ? PageSize::big : PageSize::small;
  auto at = a_.raw->pte_addr(a_.pd(), va, ps);
  if (!at) return;
  a_.raw->set_vram64(*at, pick_pte());
  if (in_.u8() % 4) a_.raw->invalidate(a_.pd());
}

void Runner::pv_batch() {
  const uint32_t base_reg = a_.raw->reg(pv::SLOT_BASE);
  if (!pv::SlotBaseEnable::get(base_reg)) return;
  const uint64_t area = uint64_t{pv::SlotBaseAddr::get(base_reg)} << pv::SLOT_BASE_SHIFT;
  const uint32_t slot = in_.u8() % pv::SLOTS;
  const uint64_t s = area + uint64_t{slot} * pv::SLOT_BYTES;
  const uint8_t sel = in_.u8();
  const uint32_t count = sel & 0x80 ? in_.u32() : 1 + sel % 8;
  pramin(s + pv::slot::COUNT, count);
  for (uint32_t i = 0; i < std::min<uint32_t>(count, 8); ++i) {
    const uint64_t op = s + pv::slot::OPS + i * pv::slot::OP_BYTES;
    const uint8_t code = in_.u8();
    const uint32_t flags = in_.u8() & (pv::op::FLAGS >> 8);
    pramin(op + pv::op::CODE, pv::op::Code::make(code % (pv::OPCODES + 1)) | (flags << 8));
    const uint8_t space = in_.u8();
    pramin(op + pv::op::SPACE, space < 200   ? space % 4
                               : space < 220 ? pv::SPACE_BAR1
                               : space < 240 ? pv::SPACE_BAR3
                                             : in_.u32());
    const uint64_t va = pick_va();
    pramin(op + pv::op::VA, lo32(va));
    pramin(op + pv::op::VA + 4, hi32(va));
    const uint8_t what = in_.u8();
    const uint64_t addr = what % 3 == 0   ? pick_gaddr() & ~(fmt::SMALL_PAGE - 1)
                          : what % 3 == 1 ? pv::slot::LIST + in_.u8() * 8
                                          : pick_bus() & ~(fmt::SMALL_PAGE - 1);
    pramin(op + pv::op::ADDR, lo32(addr));
    pramin(op + pv::op::ADDR + 4, hi32(addr));
    pramin(op + pv::op::PAGES, what & 0x80 ? in_.u32() : 1 + in_.u8() % 4);
  }
  for (uint32_t l = in_.u8() % 4; l > 0; --l) {
    const uint64_t entry = s + pv::slot::LIST + (in_.u8() * 8);
    const uint64_t page = pick_gaddr() & ~(fmt::SMALL_PAGE - 1);
    pramin(entry, lo32(page));
    pramin(entry + 4, hi32(page));
  }
  a_.raw->set_reg(pv::DOORBELL, in_.u8() < 240 ? slot : in_.u32());
}

void Runner::raw_channel() {
  const uint64_t page = ~(fmt::SMALL_PAGE - 1);
  mediator::attack::GuestAttacker::RawChannel c{.chid = in_.u8() % CHANNELS,
                                                .inst = pick_gaddr() & page,
                                                .pd = in_.u8() % 2 ? a_.pd() : pick_gaddr() & page,
                                                .userd = pick_gaddr() & page,
                                                .runlist = pick_gaddr() & page,
                                                .ring_va = pick_va() & ~uint64_t{7},
                                                .limit2 = in_.u8() % 12u};
  a_.raw->bind_raw_channel(c);
}

void Runner::new_context() {
  a_.last.reset();
  a_.ctx.reset();
  auto ctx = a_.dev->create_context();
  if (!ctx) {
    static const bool trace = std::getenv("VGPU_FUZZ_TRACE") != nullptr;
    if (trace) std::fprintf(stderr, "new context: %s\n", ctx.error().what().c_str());
    note(ctx.error());
    return;
  }  // a guest that broke its device gets no context; the next op sees none
  a_.ctx = std::move(*ctx);
  a_.a = a_.ctx->alloc(BUFFER_BYTES).value_or(driver::Buffer{});
  a_.b = a_.ctx->alloc(BUFFER_BYTES).value_or(driver::Buffer{});
  a_.pinned = a_.ctx->alloc_host(BUFFER_BYTES).value_or(driver::Buffer{});
}

bool Runner::uses_driver(Op op) {
  switch (op) {
    case Op::fill:
    case Op::copy:
    case Op::pinned_copy:
    case Op::launch:
    case Op::spin:
    case Op::wait:
    case Op::pushbuf:
    case Op::new_context: return true;
    default: return false;
  }
}

bool Runner::step(Op op) {
  if (a_.wedged && uses_driver(op)) return true;
  switch (op) {
    case Op::reg_write: {
      const uint32_t off = reg_offset();
      a_.raw->set_reg(off, pick_word());
      break;
    }
    case Op::reg_read: (void)a_.raw->reg(reg_offset()); break;
    case Op::bar_write: {
      const Bar bar = in_.u8() % 2 ? Bar::bar1 : Bar::bar3;
      const uint64_t off = bar_offset(bar);
      a_.raw->bar_write(bar, off, pick_word());
      break;
    }
    case Op::bar_read: {
      const Bar bar = in_.u8() % 2 ? Bar::bar1 : Bar::bar3;
      (void)a_.raw->bar_read(bar, bar_offset(bar));
      break;
    }
    case Op::pramin_write: {
      const uint64_t at = pick_gaddr();
      pramin(at, pick_word());
      break;
    }
    case Op::fill: {
      const driver::Buffer buf = pick_buffer();
      keep(a_.ctx->fill({buf, static_cast<uint32_t>(in_.u16() % (BUFFER_BYTES / 4 + 64)), 1.f}));
      break;
    }
    case Op::copy: {
      const driver::Buffer dst = pick_buffer(), src = pick_buffer();
      const uint16_t dst_off = in_.u16(), src_off = in_.u16(), bytes = in_.u16();
      keep(a_.ctx->copy(dst, dst_off, src, src_off, bytes + 4u));
      break;
    }
    case Op::pinned_copy: keep(a_.ctx->copy(a_.a, 0, a_.pinned, in_.u16() & ~3u, 4 * KiB)); break;
    case Op::launch: {
      const auto kernel = static_cast<cls::Kernel>(1 + in_.u8() % 7);
      std::array<uint32_t, 16> args{};
      for (auto& w : args) w = pick_word();
      const driver::LaunchShape shape{{1u + in_.u8() % 4, 1, 1}, {1u + in_.u8() % 64, 1, 1}};
      keep(a_.ctx->launch(kernel, std::as_bytes(std::span(args)), shape));
      break;
    }
    case Op::spin: keep(a_.ctx->spin({uint64_t{in_.u8()} * 100'000})); break;
    case Op::wait: wait(); break;
    case Op::pushbuf: pushbuf(); break;
    case Op::gp_entry: gp_entry(); break;
    case Op::doorbell: {
      const uint32_t chid = in_.u8() % 2 ? a_.ctx->channel_id() : in_.u8() % CHANNELS;
      a_.raw->doorbell(chid, pick_word());
      break;
    }
    case Op::pte_write: pte_write(); break;
    case Op::pde_write: {
      const uint64_t at = mediator::attack::GuestAttacker::pde_addr(a_.pd(), pick_va());
      const uint8_t sel = in_.u8();
      const uint64_t spt = pick_gaddr() & ~(fmt::TABLE_ALIGN - 1), lpt = pick_gaddr() & ~(fmt::TABLE_ALIGN - 1);
      a_.raw->set_vram64(at, sel % 2 ? fmt::pde::make(spt, lpt) : in_.u64());
      a_.raw->invalidate(a_.pd());
      break;
    }
    case Op::invalidate: {
      const uint8_t sel = in_.u8();
      a_.raw->invalidate(sel % 2 ? a_.pd() : pick_gaddr() & ~(fmt::TABLE_ALIGN - 1), sel & 2);
      break;
    }
    case Op::pv_batch: pv_batch(); break;
    case Op::pv_slot_base: a_.raw->set_reg(pv::SLOT_BASE, pick_word()); break;
    case Op::reset:
      // Taken when the next byte is a multiple of RESET_ONE_IN: a reset
      // ends the attacker's driver, so the next input pays for a fresh
      // attacker (milliseconds, against microseconds for most inputs).
      // With kept attackers, also at most once in VGPU_FUZZ_RESET_EVERY
      // inputs (Fixture::take).
      if (in_.u8() % RESET_ONE_IN != 0 || !f_.take(Fixture::Costly::reset)) break;
      a_.raw->set_reg(regs::pmc::ENABLE, 0);
      a_.raw->set_reg(regs::pmc::ENABLE, regs::pmc::enable::ALL);
      reset_ = true;
      a_.was_reset = true;
      break;
    case Op::raw_channel: raw_channel(); break;
    case Op::new_context:
      if (f_.take(Fixture::Costly::context)) new_context();
      break;
    case Op::stop: return false;
  }
  return a_.ctx != nullptr;
}

}  // namespace

std::optional<uint8_t> opcode(Surface surface, Op op) {
  const std::span<const Op> ops = mix(surface);
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i] == op) return static_cast<uint8_t>(i);
  return std::nullopt;
}

uint32_t register_offset(uint32_t row, uint32_t element) {
  const RegRow& r = REG_ROWS[row % std::size(REG_ROWS)];
  return r.base + (element % r.count) * r.stride;
}

namespace {
// Op's names, in its order (the watchdog's line).
const char* op_name(Op op) {
  static constexpr const char* NAMES[] = {"op reg_write",    "op reg_read",    "op bar_write",    "op bar_read",
                                          "op pramin_write", "op fill",        "op copy",         "op launch",
                                          "op spin",         "op wait",        "op pushbuf",      "op gp_entry",
                                          "op doorbell",     "op pte_write",   "op pde_write",    "op invalidate",
                                          "op pinned_copy",  "op pv_batch",    "op pv_slot_base", "op reset",
                                          "op raw_channel",  "op new_context", "op stop"};
  static_assert(std::size(NAMES) == static_cast<size_t>(Op::stop) + 1);
  return NAMES[static_cast<size_t>(op)];
}
}  // namespace

void run_ops(Surface surface, Attacker& a, Input& in) {
  Runner r(a, in);
  const std::span<const Op> ops = mix(surface);
  static const bool trace = std::getenv("VGPU_FUZZ_TRACE") != nullptr;
  for (uint32_t i = 0; i < MAX_OPS && !in.empty(); ++i) {
    const Op op = ops[in.u8() % ops.size()];
    note_step(op_name(op), i);
    const auto start = std::chrono::steady_clock::now();
    const bool go_on = r.step(op);
    if (trace) {
      const std::chrono::duration<double, std::micro> us = std::chrono::steady_clock::now() - start;
      std::fprintf(stderr, "op %u: %d %.0f us%s\n", i, static_cast<int>(op), us.count(), a.wedged ? " wedged" : "");
    }
    if (!go_on) break;
  }
}

}  // namespace vgpu::fuzz
