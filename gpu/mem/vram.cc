// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/mem/vram.h"

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
    return fail(Errc::invalid_argument, "vram: size " + hex(bytes) +
                                                    " is not a non-zero multiple of " + hex(fmt::SMALL_PAGE));
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

uint32_t Vram::read32(uint64_t addr) const {
  if (!accessible<uint32_t>(*this, addr)) return ~uint32_t{0};
  return word<uint32_t>(base_, addr).load(std::memory_order_acquire);
}

uint64_t Vram::read64(uint64_t addr) const {
  if (!accessible<uint64_t>(*this, addr)) return ~uint64_t{0};
  return word<uint64_t>(base_, addr).load(std::memory_order_acquire);
}

bool Vram::write32(uint64_t addr, uint32_t value) {
  if (!accessible<uint32_t>(*this, addr)) return false;
  word<uint32_t>(base_, addr).store(value, std::memory_order_release);
  return true;
}

bool Vram::write64(uint64_t addr, uint64_t value) {
  if (!accessible<uint64_t>(*this, addr)) return false;
  word<uint64_t>(base_, addr).store(value, std::memory_order_release);
  return true;
}

bool Vram::read(uint64_t addr, void* dst, uint64_t len) const {
  if (!contains(addr, len)) return false;
  if (len) std::memcpy(dst, base_ + addr, len);
  return true;
}

bool Vram::write(uint64_t addr, const void* src, uint64_t len) {
  if (!contains(addr, len)) return false;
  if (len) std::memcpy(base_ + addr, src, len);
  return true;
}

bool Vram::fill(uint64_t addr, std::byte value, uint64_t len) {
  if (!contains(addr, len)) return false;
  if (len) std::memset(base_ + addr, std::to_integer<int>(value), len);
  return true;
}

}  // namespace vgpu::gpu
