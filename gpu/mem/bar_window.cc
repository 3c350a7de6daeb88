// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/mem/bar_window.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/text.h"
#include "vgpu/formats.h"

namespace vgpu::gpu {
namespace {

constexpr uint64_t PAGE = fmt::SMALL_PAGE;
constexpr int RESERVED_FLAGS = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

bool host_page_is_small_page() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) == PAGE; }

}  // namespace

Result<std::unique_ptr<BarWindow>> BarWindow::create(Vram& vram, uint64_t bar_bytes) {
  if (!host_page_is_small_page()) return fail(Errc::unsupported, "bar window: host page size is not " + hex(PAGE));
  if (bar_bytes == 0 || bar_bytes % PAGE != 0)
    return fail(Errc::invalid_argument, "bar window: size " + hex(bar_bytes) + " is not a multiple of " + hex(PAGE));
  void* base = mmap(nullptr, bar_bytes, PROT_NONE, RESERVED_FLAGS, -1, 0);
  if (base == MAP_FAILED)
    return fail(Errc::out_of_memory, "bar window: reserving " + hex(bar_bytes) + " bytes: " + std::strerror(errno));
  return std::unique_ptr<BarWindow>(new BarWindow(vram, static_cast<std::byte*>(base), bar_bytes));
}

BarWindow::BarWindow(Vram& vram, std::byte* base, uint64_t size)
    : vram_(vram), base_(base), size_(size), pages_(size / PAGE, PageState::unmapped) {}

BarWindow::~BarWindow() { munmap(base_, size_); }

Status BarWindow::check(uint64_t bar_off, uint64_t bytes) const {
  if (bytes == 0 || bar_off % PAGE != 0 || bytes % PAGE != 0)
    return fail(Errc::invalid_argument,
                "bar window: offset " + hex(bar_off) + " + " + hex(bytes) + " not page aligned");
  if (bar_off > size_ || bytes > size_ - bar_off)
    return fail(Errc::invalid_argument,
                "bar window: offset " + hex(bar_off) + " + " + hex(bytes) + " beyond the BAR (" + hex(size_) + ")");
  return {};
}

Status BarWindow::map_page(uint64_t bar_off, uint64_t vram_addr, uint64_t bytes, bool read_only) {
  if (auto ok = check(bar_off, bytes); !ok) return ok;
  if (vram_addr % PAGE != 0 || !vram_.contains(vram_addr, bytes))
    return fail(Errc::invalid_argument,
                "bar window: VRAM " + hex(vram_addr) + " + " + hex(bytes) + " misaligned or beyond VRAM");
  std::lock_guard lock(mutex_);
  const int prot = PROT_READ | (read_only ? 0 : PROT_WRITE);
  void* at = mmap(base_ + bar_off, bytes, prot, MAP_FIXED | MAP_SHARED, vram_.fd(), static_cast<off_t>(vram_addr));
  if (at == MAP_FAILED) {
    int err = errno;
    // The old mapping of the range may be gone: reserve it again.
    mmap(base_ + bar_off, bytes, PROT_NONE, MAP_FIXED | RESERVED_FLAGS, -1, 0);
    std::fill_n(pages_.begin() + static_cast<ptrdiff_t>(bar_off / PAGE), bytes / PAGE, PageState::unmapped);
    return fail(Errc::io_error,
                "bar window: mapping VRAM " + hex(vram_addr) + " at " + hex(bar_off) + ": " + std::strerror(err));
  }
  std::fill_n(pages_.begin() + static_cast<ptrdiff_t>(bar_off / PAGE), bytes / PAGE,
              read_only ? PageState::read_only : PageState::read_write);
  return {};
}

Status BarWindow::unmap_page(uint64_t bar_off, uint64_t bytes) {
  if (auto ok = check(bar_off, bytes); !ok) return ok;
  std::lock_guard lock(mutex_);
  if (mmap(base_ + bar_off, bytes, PROT_NONE, MAP_FIXED | RESERVED_FLAGS, -1, 0) == MAP_FAILED)
    return fail(Errc::io_error, "bar window: unmapping " + hex(bar_off) + ": " + std::strerror(errno));
  std::fill_n(pages_.begin() + static_cast<ptrdiff_t>(bar_off / PAGE), bytes / PAGE, PageState::unmapped);
  return {};
}

void BarWindow::clear() {
  std::lock_guard lock(mutex_);
  // Replacing a mapping in place cannot fail for lack of address space.
  mmap(base_, size_, PROT_NONE, MAP_FIXED | RESERVED_FLAGS, -1, 0);
  static_assert(sizeof(PageState) == 1);
  std::memset(pages_.data(), static_cast<int>(PageState::unmapped),
              pages_.size());  // one memset, not a loop over every page
}

std::span<std::byte> BarWindow::span(uint64_t bar_off, uint64_t len, bool write) const {
  if (len == 0 || bar_off > size_ || len > size_ - bar_off) return {};
  std::lock_guard lock(mutex_);
  const uint64_t first = bar_off / PAGE;
  const uint64_t last = (bar_off + len - 1) / PAGE;
  for (uint64_t p = first; p <= last; ++p) {
    PageState s = pages_[p];
    if (s == PageState::unmapped || (write && s != PageState::read_write)) return {};
  }
  return {base_ + bar_off, len};
}

bool BarWindow::mapped(uint64_t bar_off) const {
  if (bar_off >= size_) return false;
  std::lock_guard lock(mutex_);
  return pages_[bar_off / PAGE] != PageState::unmapped;
}

}  // namespace vgpu::gpu
