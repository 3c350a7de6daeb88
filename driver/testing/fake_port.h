// SPDX-License-Identifier: GPL-2.0-or-later
// A minimal in-memory device for the driver's unit tests: VRAM as a byte
// vector, BAR0 registers as a map (with the identity, VRAM size and MMU
// status a device reports), the PRAMIN window, and BAR1/BAR3 accesses
// translated through the BAR instance block's page tables (no TLB, no
// faults: an unmapped access reads all ones and drops the write). It runs
// no channels; integration tests use the software GPU model for that.
#pragma once

#include <cstring>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "driver/port.h"
#include "vgpu/bits.h"
#include "vgpu/formats.h"
#include "vgpu/regs.h"

namespace vgpu::driver::testing {

class FakePort final : public Port {
 public:
  explicit FakePort(uint64_t vram_bytes = 64 * MiB) : vram(vram_bytes) {
    regs[regs::pmc::BOOT_0.offset] = regs::pmc::BOOT_0_VALUE;
    regs[regs::punits::FBP_COUNT.offset] = 1;
    regs[regs::punits::FBP_DISABLED_MASK.offset] = 0;
    regs[regs::pfb::FBPA_MIB[0].offset] = static_cast<uint32_t>(vram_bytes / MiB);
    regs[regs::mmu::CTRL.offset] = regs::mmu::CtrlFreeSlots::make(0xff) | regs::mmu::CtrlInvalidateDone::mask;
  }

  uint32_t read32(Bar bar, uint64_t offset) override {
    if (bar != Bar::bar0) {
      auto a = translate(bar, offset);
      return a ? vram32(*a) : ~0u;
    }
    if (offset >= regs::pramin::BASE && offset < regs::pramin::BASE + regs::pramin::SIZE)
      return vram32(pramin_base() + offset - regs::pramin::BASE);
    auto it = regs.find(static_cast<uint32_t>(offset));
    return it == regs.end() ? regs::BAD_REGISTER : it->second;
  }

  void write32(Bar bar, uint64_t offset, uint32_t value) override {
    if (bar != Bar::bar0) {
      bar_writes.emplace_back(bar, offset);
      if (auto a = translate(bar, offset)) set_vram32(*a, value);
      return;
    }
    if (offset >= regs::pramin::BASE && offset < regs::pramin::BASE + regs::pramin::SIZE) {
      set_vram32(pramin_base() + offset - regs::pramin::BASE, value);
      return;
    }
    writes.emplace_back(static_cast<uint32_t>(offset), value);
    if (offset == regs::pflush::FLUSH.offset) return;  // completes at once: reads 0
    if (offset == regs::mmu::INVALIDATE.offset) return;
    regs[static_cast<uint32_t>(offset)] = value;
  }

  std::span<std::byte> map(Bar, uint64_t, uint64_t) override { return {}; }
  uint64_t bar_size(Bar bar) const override {
    return bar == Bar::bar0 ? regs::pci::BAR0_SIZE : bar == Bar::bar1 ? regs::pci::BAR1_SIZE : regs::pci::BAR3_SIZE;
  }
  std::string name() const override { return "fake"; }

  // VRAM address behind a BAR offset, walking the BAR's page tables.
  std::optional<uint64_t> translate(Bar bar, uint64_t off) const {
    const uint32_t reg = reg_or0(bar == Bar::bar1 ? regs::pbus::BAR1_INST.offset : regs::pbus::BAR3_INST.offset);
    if (!regs::pbus::BarInstMode::get(reg)) return std::nullopt;
    const uint64_t inst = uint64_t{regs::pbus::BarInstAddr::get(reg)} << regs::pbus::BAR_INST_SHIFT;
    const fmt::AddressSpace as = fmt::decode_address_space([&](uint32_t o) { return vram32(inst + o); });
    const uint64_t pd = as.pdb;
    if (off > as.limit) return std::nullopt;
    const uint64_t pde = vram64(pd + fmt::PD.index(off) * 8);
    if (auto lpt = fmt::pde::lpt_addr(pde)) {
      const uint64_t pte = vram64(lpt + fmt::LPT.index(off) * 8);
      if (fmt::pte::Valid::get(pte)) return fmt::pte::addr(pte) + (off & (fmt::BIG_PAGE - 1));
    }
    if (auto spt = fmt::pde::spt_addr(pde)) {
      const uint64_t pte = vram64(spt + fmt::SPT.index(off) * 8);
      if (fmt::pte::Valid::get(pte)) return fmt::pte::addr(pte) + (off & (fmt::SMALL_PAGE - 1));
    }
    return std::nullopt;
  }

  uint32_t vram32(uint64_t a) const {
    uint32_t v = ~0u;
    if (a + 4 <= vram.size()) std::memcpy(&v, vram.data() + a, 4);
    return v;
  }
  uint64_t vram64(uint64_t a) const { return join64(vram32(a + 4), vram32(a)); }
  void set_vram32(uint64_t a, uint32_t v) {
    if (a + 4 <= vram.size()) std::memcpy(vram.data() + a, &v, 4);
  }
  uint32_t reg_or0(uint32_t off) const {
    auto it = regs.find(off);
    return it == regs.end() ? 0 : it->second;
  }

  std::vector<std::byte> vram;
  std::map<uint32_t, uint32_t> regs;
  std::vector<std::pair<uint32_t, uint32_t>> writes;  // BAR0 register writes, in order (not PRAMIN)
  std::vector<std::pair<Bar, uint64_t>> bar_writes;   // BAR1/BAR3 writes

 private:
  uint64_t pramin_base() const {
    return uint64_t{regs::pbus::PraminBase::get(reg_or0(regs::pbus::PRAMIN_WINDOW.offset))}
           << regs::pbus::PRAMIN_BASE_SHIFT;
  }
};

}  // namespace vgpu::driver::testing
