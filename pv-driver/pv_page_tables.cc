// SPDX-License-Identifier: GPL-2.0-or-later
#include "pv-driver/pv_page_tables.h"

#include <algorithm>

#include "common/text.h"

namespace vgpu::pvdriver {
namespace {
namespace pv = regs::pv;

uint32_t op_flags(fmt::PageSize ps, fmt::pte::Flags f) {
  return (ps == fmt::PageSize::big ? pv::op::Big::mask : 0) | (f.read_only ? pv::op::ReadOnly::mask : 0) |
         (f.aperture != fmt::Target::vram ? pv::op::Sysmem::mask : 0);
}
}  // namespace

Result<std::unique_ptr<PvPageTables>> PvPageTables::create(std::string name, Hypercalls& hc, driver::InstMem& mem,
                                                           driver::TableMemory& tables, uint64_t size, uint32_t space) {
  if (size == 0 || size > fmt::VA_LIMIT)
    return fail(Errc::invalid_argument,
                strfmt("%s: address space size %s out of range", name.c_str(), hex(size).c_str()));
  // The directory is a name, never written: one table-aligned page.
  auto pd = tables.alloc(fmt::TABLE_ALIGN);
  if (!pd) return std::unexpected(pd.error().context(name + ": page directory"));
  std::unique_ptr<PvPageTables> t(new PvPageTables(std::move(name), hc, mem, tables, size, space));
  t->pd_ = *pd;
  Status ok = hc.add({.code = pv::Opcode::create_space, .space = space});
  if (ok) ok = hc.add({.code = pv::Opcode::set_pd, .space = space, .addr = t->pd_});
  // A channel or BAR may name the directory at once: run it now.
  if (ok) ok = hc.submit();
  if (!ok) {
    (void)hc.add({.code = pv::Opcode::destroy_space, .space = space});  // if create_space ran
    (void)hc.submit();
    t->space_ = ~uint32_t{0};
    return std::unexpected(ok.error().context(t->name_));
  }
  return t;
}

PvPageTables::~PvPageTables() {
  if (space_ != ~uint32_t{0}) {
    (void)hc_.add({.code = pv::Opcode::destroy_space, .space = space_});
    (void)hc_.submit();
    hc_.free_space(space_);
  }
  if (pd_) tables_.free(pd_);
}

Status PvPageTables::check(uint64_t va, uint64_t bytes, fmt::PageSize ps, const char* what) const {
  const uint64_t page = fmt::page_bytes(ps);
  if (bytes == 0 || va % page || bytes % page || va > size_ || bytes > size_ - va)
    return fail(Errc::invalid_argument, strfmt("%s: cannot %s [%s, +%s) with %lu KiB pages", name_.c_str(), what,
                                               hex(va).c_str(), hex(bytes).c_str(), page / 1024));
  return {};
}

Status PvPageTables::map(uint64_t va, uint64_t phys, uint64_t bytes, fmt::PageSize ps, fmt::pte::Flags flags) {
  if (auto ok = check(va, bytes, ps, "map"); !ok) return ok;
  const uint64_t page = fmt::page_bytes(ps);
  if (phys % page)
    return fail(Errc::invalid_argument,
                strfmt("%s: VRAM address %s not aligned to the page", name_.c_str(), hex(phys).c_str()));
  // The stride form: one operation per MAX_PAGES pages.
  for (uint64_t off = 0; off < bytes;) {
    const uint64_t pages = std::min<uint64_t>((bytes - off) / page, pv::MAX_PAGES);
    if (auto ok = hc_.add({.code = pv::Opcode::map,
                           .flags = op_flags(ps, flags),
                           .space = space_,
                           .va = va + off,
                           .addr = phys + off,
                           .pages = static_cast<uint32_t>(pages)});
        !ok)
      return ok;
    off += pages * page;
  }
  runs_[va] = Run{bytes, phys, ps, flags};
  return {};
}

Status PvPageTables::unmap(uint64_t va, uint64_t bytes, fmt::PageSize ps) {
  if (auto ok = check(va, bytes, ps, "unmap"); !ok) return ok;
  const uint64_t page = fmt::page_bytes(ps);
  for (uint64_t off = 0; off < bytes;) {
    const uint64_t pages = std::min<uint64_t>((bytes - off) / page, pv::MAX_PAGES);
    if (auto ok = hc_.add({.code = pv::Opcode::unmap,
                           .flags = op_flags(ps, {}),
                           .space = space_,
                           .va = va + off,
                           .pages = static_cast<uint32_t>(pages)});
        !ok)
      return ok;
    off += pages * page;
  }
  // Forget the runs wholly inside; the driver unmaps what it mapped.
  for (auto it = runs_.lower_bound(va); it != runs_.end() && it->first < va + bytes;)
    it = it->first + it->second.bytes <= va + bytes ? runs_.erase(it) : std::next(it);
  return {};
}

Status PvPageTables::flush(driver::Port&, uint64_t) {
  if (auto ok = hc_.add({.code = pv::Opcode::flush, .space = space_}); !ok) return ok;
  if (auto ok = hc_.submit(); !ok) return std::unexpected(ok.error().context(name_));
  return {};
}

void PvPageTables::join(uint64_t inst_addr) {
  fmt::encode_address_space(fmt::AddressSpace{.pdb = pd_, .limit = limit()}, mem_.writer(inst_addr));
}

std::optional<uint64_t> PvPageTables::pte(uint64_t va, fmt::PageSize ps) {
  auto it = runs_.upper_bound(va);
  if (it == runs_.begin()) return std::nullopt;
  --it;
  const Run& r = it->second;
  if (va >= it->first + r.bytes || r.ps != ps) return std::nullopt;
  const uint64_t page = fmt::page_bytes(ps);
  return fmt::pte::make(r.phys + align_down(va - it->first, page), r.flags);
}

namespace {

class PvBackend final : public driver::PvTables {
 public:
  PvBackend(std::unique_ptr<Hypercalls> hc, driver::InstMem& mem, driver::TableMemory& tables)
      : hc_(std::move(hc)), mem_(mem), tables_(tables) {}

  Result<std::unique_ptr<driver::PageTables>> make(std::string name, uint64_t size, driver::SpaceKind kind) override {
    uint32_t space = kind == driver::SpaceKind::bar1 ? regs::pv::SPACE_BAR1 : regs::pv::SPACE_BAR3;
    if (kind == driver::SpaceKind::channel) {
      auto id = hc_->alloc_space();
      if (!id) return std::unexpected(id.error().context(name));
      space = *id;
    }
    auto t = PvPageTables::create(std::move(name), *hc_, mem_, tables_, size, space);
    if (!t) {
      if (kind == driver::SpaceKind::channel) hc_->free_space(space);
      return std::unexpected(t.error());
    }
    return std::unique_ptr<driver::PageTables>(std::move(*t));
  }
  const driver::HypercallStats& stats() const override { return hc_->stats(); }

 private:
  std::unique_ptr<Hypercalls> hc_;
  driver::InstMem& mem_;
  driver::TableMemory& tables_;
};

}  // namespace

Result<std::unique_ptr<driver::PvTables>> open_pv_tables(driver::Port& port, driver::InstMem& mem,
                                                         driver::TableMemory& tables, uint64_t area) {
  auto hc = Hypercalls::open(port, mem, area);
  if (!hc) return std::unexpected(hc.error());
  return std::unique_ptr<driver::PvTables>(new PvBackend(std::move(*hc), mem, tables));
}

}  // namespace vgpu::pvdriver
