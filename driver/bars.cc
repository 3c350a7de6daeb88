// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/bars.h"

#include "driver/mmu_flush.h"
#include "driver/msg.h"
#include "vgpu/regs.h"

namespace vgpu::driver {

namespace r = regs;

namespace {
uint32_t bar_inst_value(uint64_t inst) {
  return r::pbus::BarInstMode::mask | r::pbus::BarInstTarget::make(0) |
         r::pbus::BarInstAddr::make(static_cast<uint32_t>(inst >> r::pbus::BAR_INST_SHIFT));
}

// A zeroed instance block from `heap`, for one BAR's address space.
Result<uint64_t> zeroed_inst(RangeAllocator& heap, InstMem& mem) {
  auto inst = heap.alloc(r::inst::SIZE, r::inst::ALIGN);
  if (!inst) return std::unexpected(inst.error());
  mem.fill(*inst, r::inst::SIZE);
  return *inst;
}
}  // namespace

Result<std::unique_ptr<Bars>> Bars::init(Port& port, InstMem& mem, RangeAllocator& heap, RangeAllocator& vram,
                                         TableMemory& tables, const TablesMaker& make) {
  std::unique_ptr<Bars> bars(new Bars(heap, vram));
  const TablesMaker native = [&](std::string name, uint64_t size,
                                 SpaceKind kind) -> Result<std::unique_ptr<PageTables>> {
    auto vmm = Vmm::create(std::move(name), mem, tables, size, kind != SpaceKind::channel);
    if (!vmm) return std::unexpected(vmm.error());
    return std::unique_ptr<PageTables>(std::move(*vmm));
  };
  const TablesMaker& m = make ? make : native;
  if (auto ok = bars->init_bar3(port, mem, m); !ok) return std::unexpected(ok.error().context("BAR3"));
  if (auto ok = bars->init_bar1(port, mem, m); !ok) return std::unexpected(ok.error().context("BAR1"));
  return bars;
}

Status Bars::init_bar3(Port& port, InstMem& mem, const TablesMaker& make) {
  if (heap_.size() > port.bar_size(Bar::bar3))
    return fail(Errc::invalid_argument,
                msg("instance heap of {} bytes exceeds BAR3 ({} bytes)", heap_.size(), port.bar_size(Bar::bar3)));
  auto inst = zeroed_inst(heap_, mem);
  if (!inst) return std::unexpected(inst.error());
  bar3_inst_ = *inst;
  // Instance memory is still on PRAMIN here: these tables are the bootstrap.
  auto vmm = make("bar3", port.bar_size(Bar::bar3), SpaceKind::bar3);
  if (!vmm) return std::unexpected(vmm.error());
  bar3_ = std::move(*vmm);
  if (auto ok = bar3_->map(0, heap_.base(), heap_.size(), fmt::PageSize::small); !ok) return ok;
  if (auto ok = bar3_->commit(); !ok) return ok;
  bar3_->join(bar3_inst_);
  if (auto ok = bar_flush(port); !ok) return ok;
  port.write32(Bar::bar0, r::pbus::BAR3_INST.offset, bar_inst_value(bar3_inst_));
  if (auto ok = tlb_invalidate(port, bar3_->pd_addr(), true); !ok) return ok;
  mem.use_bar3(heap_.base(), heap_.size());
  return {};
}

Status Bars::init_bar1(Port& port, InstMem& mem, const TablesMaker& make) {
  auto inst = zeroed_inst(heap_, mem);
  if (!inst) return std::unexpected(inst.error());
  bar1_inst_ = *inst;
  auto vmm = make("bar1", port.bar_size(Bar::bar1), SpaceKind::bar1);
  if (!vmm) return std::unexpected(vmm.error());
  (*vmm)->join(bar1_inst_);
  bar1_ = std::make_unique<AddressSpace>(port, std::move(*vmm), 0, port.bar_size(Bar::bar1));
  port.write32(Bar::bar0, r::pbus::BAR1_INST.offset, bar_inst_value(bar1_inst_));

  const uint64_t userd_bytes = uint64_t{r::NUM_CHANNELS} * r::userd::SIZE;
  auto userd = vram_.alloc(userd_bytes, r::userd::SIZE);
  if (!userd) return std::unexpected(userd.error().context("USERD array"));
  userd_ = *userd;
  auto va = bar1_->map(userd_, userd_bytes);  // flushes
  if (!va) return std::unexpected(va.error().context("USERD array"));
  userd_va_ = *va;
  port.write32(Bar::bar0, r::pfifo::USERD_BASE.offset,
               r::pfifo::UserdBaseEnable::mask |
                   r::pfifo::UserdBaseAddr::make(static_cast<uint32_t>(userd_va_ >> r::pfifo::USERD_BASE_SHIFT)));
  return {};
}

Bars::~Bars() {
  bar1_.reset();
  if (userd_) (void)vram_.free(userd_);
  bar3_.reset();
}

uint64_t Bars::userd_vram(uint32_t chid) const { return userd_ + uint64_t{chid} * r::userd::SIZE; }
uint64_t Bars::userd_bar1(uint32_t chid) const { return userd_va_ + uint64_t{chid} * r::userd::SIZE; }

}  // namespace vgpu::driver
