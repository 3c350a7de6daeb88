// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/hugepage_pin.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "driver/msg.h"
#include "vgpu/bits.h"
#include "vgpu/formats.h"

namespace vgpu::driver {
namespace {

constexpr uint64_t HUGEPAGE = 2 * MiB;
constexpr uint64_t PAGE = fmt::SMALL_PAGE;
// /proc/self/pagemap: one 64-bit entry per virtual page.
constexpr uint64_t PAGEMAP_PRESENT = uint64_t{1} << 63;
constexpr uint64_t PAGEMAP_PFN_MASK = (uint64_t{1} << 55) - 1;

bool hugepages_configured() { return access("/proc/sys/vm/nr_hugepages", F_OK) == 0; }

}  // namespace

Result<PinnedPages> pin_hugepages(uint64_t bytes) {
  if (bytes == 0) return fail(Errc::invalid_argument, "pin: zero bytes");
  uint64_t size = align_up(bytes, HUGEPAGE);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1,
                 0);
  if (p == MAP_FAILED && !hugepages_configured()) {
    // A kernel with no hugepage support at all (no nr_hugepages):
    // ordinary pages, populated and locked.
    // Locked pages are not swapped, but the kernel may still migrate them
    // (compaction): a weaker pin, said so in docs/runtime.md.
    size = align_up(bytes, PAGE);
    p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  }
  if (p == MAP_FAILED)
    return fail(Errc::out_of_memory,
                msg("pin: {} bytes of 2 MiB hugepages not available ({}); raise /proc/sys/vm/nr_hugepages", size,
                    std::strerror(errno)));
  const std::span<std::byte> host(static_cast<std::byte*>(p), size);
  if (mlock(p, size) != 0) {
    const int err = errno;
    munmap(p, size);
    return fail(Errc::io_error, msg("pin: mlock of {} bytes: {}", size, std::strerror(err)));
  }
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    munmap(p, size);
    return fail(Errc::io_error, msg("pin: /proc/self/pagemap: {}", std::strerror(err)));
  }
  PinnedPages out;
  out.host = host;
  out.bus.reserve(size / PAGE);
  const uint64_t first = reinterpret_cast<uintptr_t>(p) / PAGE;
  for (uint64_t i = 0; i < size / PAGE; ++i) {
    uint64_t e = 0;
    if (pread(fd, &e, sizeof e, static_cast<off_t>((first + i) * sizeof e)) != static_cast<ssize_t>(sizeof e) ||
        !(e & PAGEMAP_PRESENT) || (e & PAGEMAP_PFN_MASK) == 0) {
      close(fd);
      munmap(p, size);
      return fail(Errc::io_error, "pin: /proc/self/pagemap gave no frame (not root?)");
    }
    out.bus.push_back((e & PAGEMAP_PFN_MASK) * PAGE);
  }
  close(fd);
  return out;
}

void unpin_hugepages(std::span<std::byte> host) {
  if (!host.empty()) munmap(host.data(), host.size());
}

}  // namespace vgpu::driver
