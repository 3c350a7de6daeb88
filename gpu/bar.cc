// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/bar.h"

#include "vgpu/formats.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {

using namespace regs::pbus;

uint64_t BarWindows::size(Bar bar) {
  switch (bar) {
    case Bar::bar0: return regs::pci::BAR0_SIZE;
    case Bar::bar1: return regs::pci::BAR1_SIZE;
    case Bar::bar3: return regs::pci::BAR3_SIZE;
  }
  return 0;
}

void BarWindows::bind(Bar bar, uint32_t inst_reg) {
  Binding b;
  b.as.unit = bar == Bar::bar1 ? regs::FaultUnit::bar1 : regs::FaultUnit::bar3;
  // BAR3 maps kernel objects (instance blocks, page tables): a privileged client.
  b.as.priv = bar == Bar::bar3;
  b.as.inst = uint64_t{BarInstAddr::get(inst_reg)} << BAR_INST_SHIFT;
  b.translated = BarInstMode::get(inst_reg);
  if (b.translated) {
    const fmt::AddressSpace s = fmt::decode_address_space(vram_.reader(b.as.inst));
    b.as.pdb = s.pdb;
    b.as.limit = s.limit;
  }
  {
    std::lock_guard l(mutex_);
    (bar == Bar::bar1 ? bar1_ : bar3_) = b;
  }
  bump_generation();
}

BarWindows::Binding BarWindows::binding(Bar bar) const {
  std::lock_guard l(mutex_);
  return bar == Bar::bar1 ? bar1_ : bar3_;
}

Walk<Translation> BarWindows::lookup(Bar bar, uint64_t offset, bool write) {
  const Binding b = binding(bar);
  const auto fault = [&](regs::FaultReason reason) {
    return std::unexpected(Fault{reason, offset, write, b.as.unit, b.as.inst, std::nullopt});
  };
  if (bar == Bar::bar0 || offset >= size(bar)) return fault(regs::FaultReason::vm_limit_exceeded);
  if (!b.translated) {  // mode 0: the BAR maps VRAM directly
    if (!vram_.contains(offset, 4)) return fault(regs::FaultReason::out_of_vram);
    return Translation{offset, fmt::SMALL_PAGE, false};
  }
  auto t = mmu_.translate(b.as, offset, write);
  // The BARs are CPU windows onto VRAM: a page in system memory is not
  // one the CPU reaches through them (docs/spec/vgpu.md §4.3).
  if (t && t->sysmem) return fault(regs::FaultReason::page_not_present);
  return t;
}

Walk<uint32_t> BarWindows::read32(Bar bar, uint64_t offset) {
  auto t = lookup(bar, offset, false);
  if (!t) return std::unexpected(t.error());
  return vram_.read32(t->phys);
}

Walk<void> BarWindows::write32(Bar bar, uint64_t offset, uint32_t value) {
  auto t = lookup(bar, offset, true);
  if (!t) return std::unexpected(t.error());
  (void)vram_.write32(t->phys, value);
  return {};
}

std::optional<BarPage> BarWindows::translate(Bar bar, uint64_t offset) {
  auto t = lookup(bar, offset, false);
  if (!t) return std::nullopt;
  const uint64_t in_page = offset & (t->page_bytes - 1);
  return BarPage{offset - in_page, t->phys - in_page, t->page_bytes, t->read_only};
}

}  // namespace vgpu::gpu
