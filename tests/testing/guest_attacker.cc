// SPDX-License-Identifier: GPL-2.0-or-later
#include "tests/testing/guest_attacker.h"

#include <chrono>
#include <thread>

namespace vgpu::mediator::attack {
namespace {
namespace pbus = regs::pbus;
}  // namespace

uint64_t GuestAttacker::window_offset(uint64_t gaddr) {
  const uint64_t base = align_down(gaddr, regs::pramin::SIZE);
  set_reg(pbus::PRAMIN_WINDOW,
          pbus::PraminBase::make(static_cast<uint32_t>(base >> pbus::PRAMIN_BASE_SHIFT)) | pbus::PraminTarget::make(0));
  return regs::pramin::BASE + (gaddr - base);
}

uint32_t GuestAttacker::vram32(uint64_t gaddr) {
  const uint32_t saved = reg(pbus::PRAMIN_WINDOW);
  const uint32_t v = reg(static_cast<uint32_t>(window_offset(gaddr)));
  set_reg(pbus::PRAMIN_WINDOW, saved);
  return v;
}

void GuestAttacker::set_vram32(uint64_t gaddr, uint32_t value) {
  const uint32_t saved = reg(pbus::PRAMIN_WINDOW);
  set_reg(static_cast<uint32_t>(window_offset(gaddr)), value);
  set_reg(pbus::PRAMIN_WINDOW, saved);
}

uint64_t GuestAttacker::vram64(uint64_t gaddr) {
  const uint32_t lo = vram32(gaddr);
  return join64(vram32(gaddr + 4), lo);
}

void GuestAttacker::set_vram64(uint64_t gaddr, uint64_t value) {
  set_vram32(gaddr, lo32(value));
  set_vram32(gaddr + 4, hi32(value));
}

void GuestAttacker::copy_vram(uint64_t dst, uint64_t src, uint64_t bytes) {
  for (uint64_t off = 0; off < bytes; off += sizeof(uint32_t)) set_vram32(dst + off, vram32(src + off));
}

std::optional<uint64_t> GuestAttacker::pte_addr(uint64_t pd, uint64_t va, fmt::PageSize ps) {
  const uint64_t pde = vram64(pde_addr(pd, va));
  const bool big = ps == fmt::PageSize::big;
  const uint64_t target = big ? fmt::pde::LptTarget::get(pde) : fmt::pde::SptTarget::get(pde);
  if (target != uint64_t(fmt::PdeTarget::vram)) return std::nullopt;
  const uint64_t table = big ? fmt::pde::lpt_addr(pde) : fmt::pde::spt_addr(pde);
  const fmt::Level& level = fmt::table_level(ps);
  return table + level.index(va) * level.entry_bytes;
}

std::optional<uint64_t> GuestAttacker::translate(uint64_t pd, uint64_t va, fmt::PageSize ps) {
  auto at = pte_addr(pd, va, ps);
  if (!at) return std::nullopt;
  const uint64_t pte = vram64(*at);
  if (!fmt::pte::Valid::get(pte)) return std::nullopt;
  return fmt::pte::addr(pte) + va % fmt::page_bytes(ps);
}

void GuestAttacker::invalidate(uint64_t pd, bool all_pdb) {
  namespace mmu = regs::mmu;
  set_reg(mmu::INVALIDATE_PDB, mmu::InvalidatePdbAddr::make(static_cast<uint32_t>(pd >> fmt::TABLE_ALIGN_SHIFT)));
  set_reg(mmu::INVALIDATE,
          mmu::InvalidateTrigger::mask | mmu::InvalidatePageAll::mask | (all_pdb ? mmu::InvalidateAllPdb::mask : 0));
}

uint64_t GuestAttacker::bar_inst(driver::Bar bar) {
  const uint32_t v = reg(bar == driver::Bar::bar1 ? pbus::BAR1_INST : pbus::BAR3_INST);
  return uint64_t{pbus::BarInstAddr::get(v)} << pbus::BAR_INST_SHIFT;
}

uint64_t GuestAttacker::bar_pd(driver::Bar bar) {
  const uint64_t inst = bar_inst(bar);
  return fmt::decode_address_space([&](uint32_t off) { return vram32(inst + off); }).pdb;
}

uint32_t GuestAttacker::wait_chan_error(uint32_t chid, unsigned timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const uint32_t code = regs::pfifo::ChanErrorCode::get(chan_error(chid));
    if (code != 0 || std::chrono::steady_clock::now() > deadline) return code;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

uint64_t GuestAttacker::userd_base() {
  return uint64_t{regs::pfifo::UserdBaseAddr::get(reg(regs::pfifo::USERD_BASE))} << regs::pfifo::USERD_BASE_SHIFT;
}

void GuestAttacker::doorbell(uint32_t chid, uint32_t put) {
  port_.write32(driver::Bar::bar1, userd_base() + uint64_t{chid} * regs::userd::SIZE + regs::userd::GP_PUT, put);
}

uint32_t GuestAttacker::userd_read(uint32_t chid, uint32_t field) {
  return port_.read32(driver::Bar::bar1, userd_base() + uint64_t{chid} * regs::userd::SIZE + field);
}

void GuestAttacker::bind_raw_channel(const RawChannel& c) {
  namespace pf = regs::pfifo;
  const auto wr = [&](uint32_t off, uint32_t v) { set_vram32(c.inst + off, v); };
  fmt::encode_address_space(fmt::AddressSpace{.pdb = c.pd, .limit = fmt::VA_LIMIT - 1}, wr);
  fmt::encode_ramfc(fmt::Ramfc{.gp_base = c.ring_va, .limit2 = c.limit2, .userd = c.userd}, wr);
  set_reg(pf::CHAN_INST[c.chid].offset, fmt::encode_chan_inst({.valid = true, .inst = c.inst}));
  set_reg(pf::CHAN_STATE[c.chid].offset, pf::ChanStateRunnable::mask | pf::ChanStateEngine::make(pf::ENGINE_NONE));
  set_vram32(c.runlist + regs::runlist::ENTRY_CHID, fmt::encode_runlist_entry(c.chid)[0]);
  set_reg(pf::RUNLIST_BASE, pf::RunlistAddr::make(static_cast<uint32_t>(c.runlist >> pf::RUNLIST_SHIFT)));
  set_reg(pf::RUNLIST_SUBMIT, pf::RunlistCount::make(1));
}

uint64_t checksum(const uint32_t* words, uint64_t count) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a offset basis
  for (uint64_t i = 0; i < count; ++i) {
    h ^= words[i];
    h *= 0x100000001b3ull;  // FNV-1a prime
  }
  return h;
}

}  // namespace vgpu::mediator::attack
