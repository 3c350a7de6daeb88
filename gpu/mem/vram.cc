// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/mem/vram.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/text.h"
#include "vgpu/formats.h"

namespace vgpu::gpu {
namespace {

template <typename T>
bool accessible(const Vram& vram, uint64_t addr) {
  return addr % sizeof(T) == 0 && vram.contains(addr, sizeof(T));
}

// std::atomic_ref<const T> is not C++23; the load does not write.
template <typename T>
std::atomic_ref<T> word(const std::byte* base, uint64_t addr) {
  return std::atomic_ref<T>(*reinterpret_cast<T*>(const_cast<std::byte*>(base + addr)));
}

}  // namespace

Result<std::unique_ptr<Vram>> Vram::create(uint64_t bytes) {
  if (bytes == 0 || bytes % fmt::SMALL_PAGE != 0)
    return fail(Errc::invalid_argument,
                "vram: size " + hex(bytes) + " is not a non-zero multiple of " + hex(fmt::SMALL_PAGE));
  int fd = memfd_create("vgpu-vram", MFD_CLOEXEC);
  if (fd < 0) return fail(Errc::io_error, std::string("vram: memfd_create: ") + std::strerror(errno));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    close(fd);
    return fail(Errc::out_of_memory, "vram: ftruncate to " + hex(bytes) + ": " + std::strerror(err));
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    int err = errno;
    close(fd);
    return fail(Errc::out_of_memory, "vram: mmap of " + hex(bytes) + " bytes: " + std::strerror(err));
  }
  return std::unique_ptr<Vram>(new Vram(fd, static_cast<std::byte*>(base), bytes));
}

Vram::~Vram() {
  munmap(base_, size_);
  close(fd_);
}

bool Vram::zero(uint64_t addr, uint64_t len) {
  if (!contains(addr, len)) return false;
  // A mirrored VRAM is pinned for the device's DMA (docs/cuda.md): a hole
  // would give the mapping new pages while the device keeps the old ones.
  if (observer_.load(std::memory_order_acquire) != nullptr || len < ZERO_HOLE_MIN) return fill(addr, std::byte{0}, len);
  const uint64_t first = (addr + fmt::SMALL_PAGE - 1) / fmt::SMALL_PAGE * fmt::SMALL_PAGE;
  const uint64_t last = (addr + len) / fmt::SMALL_PAGE * fmt::SMALL_PAGE;
  if (first >= last || fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(first),
                                 static_cast<off_t>(last - first)) != 0)
    return fill(addr, std::byte{0}, len);
  dirty_.mark(first, last - first);  // the hole reads as zeros now
  return fill(addr, std::byte{0}, first - addr) && fill(last, std::byte{0}, addr + len - last);
}

Result<int> Vram::detach(uint64_t addr, uint64_t len) {
  if (len == 0 || addr % fmt::SMALL_PAGE || len % fmt::SMALL_PAGE || !contains(addr, len))
    return fail(Errc::invalid_argument,
                "vram: detach of " + hex(len) + " bytes at " + hex(addr) + ": not whole pages inside VRAM");
  int fd = memfd_create("vgpu-vram-partition", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return fail(Errc::io_error, std::string("vram: memfd_create: ") + std::strerror(errno));
  auto give_up = [fd](const char* what) {
    int err = errno;
    close(fd);
    return fail(Errc::out_of_memory, std::string("vram: detach: ") + what + ": " + std::strerror(err));
  };
  if (ftruncate(fd, static_cast<off_t>(len)) != 0) return give_up("ftruncate");
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) return give_up("seal");
  if (mmap(base_ + addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
    return give_up("mmap");
  // The VRAM memfd's pages under the range are not used while detached.
  (void)fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(addr), static_cast<off_t>(len));
  if (VramObserver* o = observer_.load(std::memory_order_acquire)) o->host_remapped(addr, len, true);
  return fd;
}

Status Vram::reattach(uint64_t addr, uint64_t len) {
  if (len == 0 || addr % fmt::SMALL_PAGE || len % fmt::SMALL_PAGE || !contains(addr, len))
    return fail(Errc::invalid_argument,
                "vram: reattach of " + hex(len) + " bytes at " + hex(addr) + ": not whole pages inside VRAM");
  (void)fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(addr), static_cast<off_t>(len));
  if (mmap(base_ + addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_, static_cast<off_t>(addr)) ==
      MAP_FAILED)
    return fail(Errc::io_error, std::string("vram: reattach: mmap: ") + std::strerror(errno));
  if (VramObserver* o = observer_.load(std::memory_order_acquire)) o->host_remapped(addr, len, false);
  dirty_.mark(addr, len);  // zeroes now
  return {};
}

template <typename T>
T Vram::load(uint64_t addr) const {
  if (!accessible<T>(*this, addr)) return ~T{0};
  host_access(addr, sizeof(T), false);
  return word<T>(base_, addr).load(std::memory_order_acquire);
}

template <typename Write>
void Vram::host_write(uint64_t addr, uint64_t len, Write write) {
  VramObserver* o = observer_.load(std::memory_order_acquire);
  if (o) o->begin_host_write(addr, len);
  write();
  if (o) o->end_host_write(addr, len);
  dirty_.mark(addr, len);  // after the store (docs/migration.md §5)
}

template <typename T>
bool Vram::store(uint64_t addr, T value) {
  if (!accessible<T>(*this, addr)) return false;
  host_write(addr, sizeof(T), [&] { word<T>(base_, addr).store(value, std::memory_order_release); });
  return true;
}

uint32_t Vram::read32(uint64_t addr) const { return load<uint32_t>(addr); }
uint64_t Vram::read64(uint64_t addr) const { return load<uint64_t>(addr); }
bool Vram::write32(uint64_t addr, uint32_t value) { return store(addr, value); }
bool Vram::write64(uint64_t addr, uint64_t value) { return store(addr, value); }

bool Vram::read(uint64_t addr, void* dst, uint64_t len) const {
  if (!contains(addr, len)) return false;
  host_access(addr, len, false);
  if (len) std::memcpy(dst, base_ + addr, len);
  return true;
}

bool Vram::write(uint64_t addr, const void* src, uint64_t len) {
  if (!contains(addr, len)) return false;
  if (len) host_write(addr, len, [&] { std::memcpy(base_ + addr, src, len); });
  return true;
}

bool Vram::fill(uint64_t addr, std::byte value, uint64_t len) {
  if (!contains(addr, len)) return false;
  if (len) host_write(addr, len, [&] { std::memset(base_ + addr, std::to_integer<int>(value), len); });
  return true;
}

}  // namespace vgpu::gpu
