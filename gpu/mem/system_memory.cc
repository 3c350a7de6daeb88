// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/mem/system_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

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

class MemfdRam::Hold final : public DmaHold {
 public:
  explicit Hold(MemfdRam& ram) : ram_(ram), lock_(ram.dma_mutex_) {}
  std::byte* span(uint64_t bus, uint64_t len) override { return ram_.contains(bus, len) ? ram_.base_ + bus : nullptr; }

 private:
  MemfdRam& ram_;
  std::shared_lock<std::shared_mutex> lock_;
};

std::unique_ptr<DmaHold> MemfdRam::hold_host() { return std::make_unique<Hold>(*this); }

void MemfdRam::attach(DmaRegistrar& r) {
  std::unique_lock lock(dma_mutex_);
  r.register_host(base_, size_);
  registrars_.push_back(&r);
}

void MemfdRam::detach(DmaRegistrar& r) {
  std::unique_lock lock(dma_mutex_);  // waits for holds (DMA in flight)
  auto it = std::find(registrars_.begin(), registrars_.end(), &r);
  if (it == registrars_.end()) return;
  registrars_.erase(it);
  r.unregister_host(base_);
}

// ---------------------------------------------------------------- BusMap

class BusMap::Hold final : public DmaHold {
 public:
  explicit Hold(BusMap& bus) : bus_(bus), lock_(bus.mutex_) {}
  std::byte* span(uint64_t bus, uint64_t len) override {
    uint64_t off = 0;
    const Window* w = bus_.find(bus, len, &off);
    if (w == nullptr) return nullptr;
    SystemMemory* t = w->target.get();
    auto it = std::find_if(targets_.begin(), targets_.end(), [t](const auto& h) { return h.first == t; });
    if (it == targets_.end()) it = targets_.emplace(targets_.end(), t, t->hold_host());
    return it->second ? it->second->span(off, len) : nullptr;
  }

 private:
  BusMap& bus_;
  std::shared_lock<std::shared_mutex> lock_;  // declared before targets_: released after them
  std::vector<std::pair<SystemMemory*, std::unique_ptr<DmaHold>>> targets_;
};

std::unique_ptr<DmaHold> BusMap::hold_host() { return std::make_unique<Hold>(*this); }

void BusMap::attach(DmaRegistrar& r) {
  std::unique_lock lock(mutex_);
  registrars_.push_back(&r);
  for (auto& [base, w] : windows_) w.target->attach(r);
}

void BusMap::detach(DmaRegistrar& r) {
  std::unique_lock lock(mutex_);  // waits for holds (DMA in flight)
  auto it = std::find(registrars_.begin(), registrars_.end(), &r);
  if (it == registrars_.end()) return;
  registrars_.erase(it);
  for (auto& [base, w] : windows_) w.target->detach(r);
}

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
  for (DmaRegistrar* r : registrars_) target->attach(*r);
  windows_.emplace(base, Window{size, std::move(target), target_base});
  return {};
}

void BusMap::remove(uint64_t base) {
  std::unique_lock lock(mutex_);  // waits for DMA in progress (shared holders, holds)
  auto it = windows_.find(base);
  if (it == windows_.end()) return;
  for (DmaRegistrar* r : registrars_) it->second.target->detach(*r);
  windows_.erase(it);
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
