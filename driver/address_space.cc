// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/address_space.h"

#include "driver/msg.h"

namespace vgpu::driver {

AddressSpace::AddressSpace(Port& port, std::unique_ptr<PageTables> vmm, uint64_t va_base, uint64_t va_bytes)
    : port_(port), vmm_(std::move(vmm)), va_(vmm_->name() + " VA", va_base, va_bytes) {}

AddressSpace::~AddressSpace() {
  for (const auto& [va, m] : maps_) (void)vmm_->unmap(va, m.bytes, m.ps);
  if (!maps_.empty()) (void)vmm_->flush(port_);
}

Result<uint64_t> AddressSpace::map(uint64_t phys, uint64_t bytes, fmt::pte::Flags flags) {
  const bool big = bytes >= fmt::BIG_PAGE && phys % fmt::BIG_PAGE == 0 && bytes % fmt::BIG_PAGE == 0;
  const fmt::PageSize ps = big ? fmt::PageSize::big : fmt::PageSize::small;
  const uint64_t page = fmt::page_bytes(ps);
  bytes = align_up(bytes, page);
  auto va = va_.alloc(bytes, page);
  if (!va) return va;
  if (auto ok = vmm_->map(*va, phys, bytes, ps, flags); !ok) {
    (void)vmm_->unmap(*va, bytes, ps);
    (void)va_.free(*va);
    return std::unexpected(ok.error());
  }
  if (auto ok = vmm_->flush(port_); !ok) return std::unexpected(ok.error());
  maps_.emplace(*va, Mapping{bytes, ps});
  return *va;
}

Result<uint64_t> AddressSpace::map_pages(std::span<const uint64_t> pages, fmt::pte::Flags flags) {
  constexpr uint64_t PAGE = fmt::SMALL_PAGE;
  const uint64_t bytes = pages.size() * PAGE;
  if (bytes == 0) return fail(Errc::invalid_argument, vmm_->name() + ": no pages to map");
  auto va = va_.alloc(bytes, PAGE);
  if (!va) return va;
  size_t first = 0;
  for (size_t i = 1; i <= pages.size(); ++i) {
    if (i < pages.size() && pages[i] == pages[i - 1] + PAGE) continue;
    const uint64_t run = (i - first) * PAGE;
    if (auto ok = vmm_->map(*va + first * PAGE, pages[first], run, fmt::PageSize::small, flags); !ok) {
      (void)vmm_->unmap(*va, bytes, fmt::PageSize::small);
      (void)va_.free(*va);
      return std::unexpected(ok.error());
    }
    first = i;
  }
  if (auto ok = vmm_->flush(port_); !ok) return std::unexpected(ok.error());
  maps_.emplace(*va, Mapping{bytes, fmt::PageSize::small});
  return *va;
}

Status AddressSpace::map_fixed(uint64_t va, uint64_t phys, uint64_t bytes) {
  const bool big = va % fmt::BIG_PAGE == 0 && phys % fmt::BIG_PAGE == 0 && bytes % fmt::BIG_PAGE == 0;
  const fmt::PageSize ps = big ? fmt::PageSize::big : fmt::PageSize::small;
  if (va % fmt::SMALL_PAGE != 0 || phys % fmt::SMALL_PAGE != 0 || bytes == 0 || bytes % fmt::SMALL_PAGE != 0)
    return fail(Errc::invalid_argument,
                msg("{}: map at {} of {} bytes not page-aligned", vmm_->name(), hex(va), bytes));
  if (maps_.contains(va)) return fail(Errc::invalid_argument, msg("{}: {} is mapped already", vmm_->name(), hex(va)));
  if (auto ok = vmm_->map(va, phys, bytes, ps, {}); !ok) {
    (void)vmm_->unmap(va, bytes, ps);
    return ok;
  }
  if (auto ok = vmm_->flush(port_); !ok) return ok;
  maps_.emplace(va, Mapping{bytes, ps, true});
  return {};
}

Status AddressSpace::unmap(uint64_t va) {
  auto it = maps_.find(va);
  if (it == maps_.end()) return fail(Errc::not_found, msg("{}: nothing mapped at {}", vmm_->name(), hex(va)));
  if (auto ok = vmm_->unmap(va, it->second.bytes, it->second.ps); !ok) return ok;
  if (!it->second.fixed) (void)va_.free(va);
  maps_.erase(it);
  return vmm_->flush(port_);
}

}  // namespace vgpu::driver
