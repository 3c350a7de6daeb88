// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/mem/system_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/text.h"
#include "vgpu/bits.h"

namespace vgpu::gpu {

// ---------------------------------------------------------------- MemfdRam

Result<std::shared_ptr<MemfdRam>> MemfdRam::create(uint64_t bytes, const std::string& name) {
  constexpr uint64_t PAGE = 4 * KiB;
  if (bytes == 0 || bytes % PAGE != 0)
    return fail(Errc::invalid_argument,
                strfmt("%s: RAM size %s is not a non-zero multiple of 4 KiB", name.c_str(), hex(bytes).c_str()));
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) return fail(Errc::io_error, name + ": memfd_create: " + std::strerror(errno));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    close(fd);
    return fail(Errc::io_error, name + ": ftruncate: " + std::strerror(err));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    close(fd);
    return fail(Errc::io_error, name + ": mmap: " + std::strerror(err));
  }
  return std::shared_ptr<MemfdRam>(new MemfdRam(fd, static_cast<std::byte*>(p), bytes));
}

MemfdRam::~MemfdRam() {
  munmap(base_, size_);
  close(fd_);
}

bool MemfdRam::read(uint64_t bus, void* dst, uint64_t len) {
  if (!contains(bus, len)) return false;
  if (len) std::memcpy(dst, base_ + bus, len);
  return true;
}

bool MemfdRam::write(uint64_t bus, const void* src, uint64_t len) {
  if (!contains(bus, len)) return false;
  if (len) std::memcpy(base_ + bus, src, len);
  return true;
}

// ---------------------------------------------------------------- BusMap

Status BusMap::add(uint64_t base, uint64_t size, std::shared_ptr<SystemMemory> target, uint64_t target_base) {
  // Whether the target holds the range is not checked here: some memory
  // says so only at DMA time (QEMU's, once the guest enables bus mastering).
  if (size == 0 || base + size < base || target_base + size < target_base || !target)
    return fail(Errc::invalid_argument,
                strfmt("bus window %s+%s is empty or wraps", hex(base).c_str(), hex(size).c_str()));
  std::unique_lock lock(mutex_);
  auto next = windows_.lower_bound(base);
  if (next != windows_.end() && next->first < base + size)
    return fail(Errc::invalid_argument, "bus window " + hex(base) + " overlaps the window at " + hex(next->first));
  if (next != windows_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.size > base)
      return fail(Errc::invalid_argument, "bus window " + hex(base) + " overlaps the window at " + hex(prev->first));
  }
  windows_.emplace(base, Window{size, std::move(target), target_base});
  return {};
}

void BusMap::remove(uint64_t base) {
  std::unique_lock lock(mutex_);  // waits for DMA in progress (shared holders)
  windows_.erase(base);
}

const BusMap::Window* BusMap::find(uint64_t bus, uint64_t len, uint64_t* offset) const {
  auto it = windows_.upper_bound(bus);
  if (it == windows_.begin()) return nullptr;
  --it;
  const uint64_t off = bus - it->first;
  if (off > it->second.size || len > it->second.size - off) return nullptr;
  *offset = it->second.target_base + off;
  return &it->second;
}

bool BusMap::contains(uint64_t bus, uint64_t len) const {
  if (len == 0) return true;
  std::shared_lock lock(mutex_);
  uint64_t off = 0;
  return find(bus, len, &off) != nullptr;
}

bool BusMap::read(uint64_t bus, void* dst, uint64_t len) {
  if (len == 0) return true;
  std::shared_lock lock(mutex_);
  uint64_t off = 0;
  const Window* w = find(bus, len, &off);
  return w && w->target->read(off, dst, len);
}

bool BusMap::write(uint64_t bus, const void* src, uint64_t len) {
  if (len == 0) return true;
  std::shared_lock lock(mutex_);
  uint64_t off = 0;
  const Window* w = find(bus, len, &off);
  return w && w->target->write(off, src, len);
}

}  // namespace vgpu::gpu
