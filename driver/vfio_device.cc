// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/vfio_device.h"

#include <fcntl.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>
#include <sys/poll.h>  // not driver/poll.h
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <filesystem>

#include "driver/msg.h"

namespace vgpu::driver {
namespace {

Error sys_error(const std::string& what) { return Error{Errc::io_error, msg("{} (errno {})", what, errno)}; }

}  // namespace

Result<std::unique_ptr<VfioDevice>> VfioDevice::open(const std::string& slot) {
  namespace fs = std::filesystem;
  const fs::path dev = fs::path("/sys/bus/pci/devices") / slot;
  std::error_code ec;
  const fs::path driver = fs::read_symlink(dev / "driver", ec);
  if (ec || driver.filename() != "vfio-pci") return fail(Errc::not_found, msg("{}: not bound to vfio-pci", slot));
  const fs::path group_link = fs::read_symlink(dev / "iommu_group", ec);
  if (ec) return fail(Errc::not_found, msg("{}: no IOMMU group", slot));
  const std::string group = group_link.filename().string();

  std::unique_ptr<VfioDevice> d(new VfioDevice());
  d->name_ = "vfio " + slot;
  d->container_ = ::open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
  if (d->container_ < 0) return std::unexpected(sys_error(slot + ": open /dev/vfio/vfio"));
  // No IOMMU: the group's node is noiommu-N; with one, N.
  for (const std::string& node : {"/dev/vfio/noiommu-" + group, "/dev/vfio/" + group}) {
    d->group_ = ::open(node.c_str(), O_RDWR | O_CLOEXEC);
    if (d->group_ >= 0) break;
  }
  if (d->group_ < 0) return std::unexpected(sys_error(slot + ": open the VFIO group " + group));
  if (ioctl(d->group_, VFIO_GROUP_SET_CONTAINER, &d->container_) < 0)
    return std::unexpected(sys_error(slot + ": VFIO_GROUP_SET_CONTAINER"));
  const int iommu = ioctl(d->container_, VFIO_CHECK_EXTENSION, VFIO_NOIOMMU_IOMMU) > 0 ? VFIO_NOIOMMU_IOMMU
                                                                                       : VFIO_TYPE1_IOMMU;
  if (ioctl(d->container_, VFIO_SET_IOMMU, iommu) < 0) return std::unexpected(sys_error(slot + ": VFIO_SET_IOMMU"));
  d->iommu_ = iommu == VFIO_TYPE1_IOMMU;
  d->device_ = ioctl(d->group_, VFIO_GROUP_GET_DEVICE_FD, slot.c_str());
  if (d->device_ < 0) return std::unexpected(sys_error(slot + ": VFIO_GROUP_GET_DEVICE_FD"));
  if (Status s = d->enable_bus_master(); !s) return std::unexpected(s.error());
  if (Status s = d->enable_msi(); !s) return std::unexpected(s.error());
  return d;
}

// An MSI is a memory write by the device: with Bus Master Enable clear in
// the command register the platform drops it (spec, PCI table). vfio-pci
// leaves the bit as it found it (clear), as a VMM would set it for its
// guest, the driver sets it through the config region.
Status VfioDevice::enable_bus_master() {
  vfio_region_info info{};
  info.argsz = sizeof info;
  info.index = VFIO_PCI_CONFIG_REGION_INDEX;
  if (ioctl(device_, VFIO_DEVICE_GET_REGION_INFO, &info) < 0)
    return std::unexpected(sys_error(name_ + ": config region info"));
  const off_t at = static_cast<off_t>(info.offset) + PCI_COMMAND;
  uint16_t command = 0;
  if (pread(device_, &command, sizeof command, at) != sizeof command)
    return std::unexpected(sys_error(name_ + ": read the PCI command register"));
  command |= PCI_COMMAND_MASTER;
  if (pwrite(device_, &command, sizeof command, at) != sizeof command)
    return std::unexpected(sys_error(name_ + ": set Bus Master Enable"));
  return {};
}

// One eventfd per MSI vector the device offers, at most the vectors the
// spec names (§11.6); one vector if the kernel grants no more (x86 gives
// multiple MSI vectors only with interrupt remapping). VFIO reports a
// partial grant as a positive return value and enables nothing.
Status VfioDevice::enable_msi() {
  vfio_irq_info info{};
  info.argsz = sizeof info;
  info.index = VFIO_PCI_MSI_IRQ_INDEX;
  if (ioctl(device_, VFIO_DEVICE_GET_IRQ_INFO, &info) < 0) return std::unexpected(sys_error(name_ + ": MSI info"));
  const unsigned most = std::min<unsigned>(info.count, regs::pci::MSI_VECTORS);
  if (most == 0) return fail(Errc::unsupported, msg("{}: no MSI", name_));
  for (unsigned n = most; n >= 1; --n) {
    if (Status s = set_msi(n); s || n == 1) return s;
  }
  return {};
}

Status VfioDevice::set_msi(unsigned n) {
  for (int fd : eventfds_) ::close(fd);
  eventfds_.clear();
  std::vector<std::byte> buf(sizeof(vfio_irq_set) + n * sizeof(int));
  auto* set = reinterpret_cast<vfio_irq_set*>(buf.data());
  set->argsz = static_cast<uint32_t>(buf.size());
  set->flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
  set->index = VFIO_PCI_MSI_IRQ_INDEX;
  set->start = 0;
  set->count = n;
  for (unsigned i = 0; i < n; ++i) {
    const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) return std::unexpected(sys_error(name_ + ": eventfd"));
    eventfds_.push_back(fd);
    reinterpret_cast<int*>(set->data)[i] = fd;
  }
  if (const int r = ioctl(device_, VFIO_DEVICE_SET_IRQS, set); r != 0) {
    if (r < 0) return std::unexpected(sys_error(msg("{}: VFIO_DEVICE_SET_IRQS, {} MSI vector(s)", name_, n)));
    return fail(Errc::io_error, msg("{}: {} MSI vector(s) asked, {} granted", name_, n, r));
  }
  return {};
}

VfioDevice::~VfioDevice() {
  for (const Mapping& m : maps_) munmap(m.base, m.size);
  for (int fd : eventfds_) ::close(fd);
  for (int fd : {device_, group_, container_})
    if (fd >= 0) ::close(fd);
}

Result<VfioDevice::Mapping> VfioDevice::map_bar(unsigned index) {
  vfio_region_info info{};
  info.argsz = sizeof info;
  info.index = index;
  if (ioctl(device_, VFIO_DEVICE_GET_REGION_INFO, &info) < 0)
    return std::unexpected(sys_error(msg("{}: BAR{} region info", name_, index)));
  if (info.size == 0 || !(info.flags & VFIO_REGION_INFO_FLAG_MMAP))
    return fail(Errc::not_found, msg("{}: BAR{} cannot be mapped", name_, index));
  void* p = mmap(nullptr, info.size, PROT_READ | PROT_WRITE, MAP_SHARED, device_, static_cast<off_t>(info.offset));
  if (p == MAP_FAILED) return std::unexpected(sys_error(msg("{}: mmap BAR{}", name_, index)));
  maps_.push_back(Mapping{static_cast<std::byte*>(p), info.size});
  return maps_.back();
}

Status VfioDevice::map_dma(std::span<std::byte> host, uint64_t iova) {
  if (!iommu_) return {};
  vfio_iommu_type1_dma_map map{};
  map.argsz = sizeof map;
  map.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
  map.vaddr = reinterpret_cast<uintptr_t>(host.data());
  map.iova = iova;
  map.size = host.size();
  if (ioctl(container_, VFIO_IOMMU_MAP_DMA, &map) < 0)
    return std::unexpected(
        sys_error(msg("{}: VFIO_IOMMU_MAP_DMA of {} bytes at bus address {}", name_, host.size(), hex(iova))));
  return {};
}

void VfioDevice::unmap_dma(uint64_t iova, uint64_t bytes) {
  if (!iommu_) return;
  vfio_iommu_type1_dma_unmap unmap{};
  unmap.argsz = sizeof unmap;
  unmap.iova = iova;
  unmap.size = bytes;
  (void)ioctl(container_, VFIO_IOMMU_UNMAP_DMA, &unmap);
}

void VfioDevice::drain() {
  for (size_t v = 0; v < eventfds_.size(); ++v) {
    eventfd_t n = 0;
    if (eventfd_read(eventfds_[v], &n) != 0 || n == 0) continue;
    if (eventfds_.size() == 1) {
      for (uint64_t& c : counts_) c += n;  // one vector carries every kind
    } else {
      counts_[v] += n;
    }
  }
}

// One thread at a time polls the eventfds (the poller); the others sleep on
// cv_ and the poller wakes them after each drain. While a poller sleeps,
// counts() does not drain: a message it would take out of an eventfd would
// not wake the poller, whose count could then sit changed until its
// timeout. Left in the eventfd, the message ends the poll at once.
IrqCounts VfioDevice::counts() {
  std::lock_guard l(mutex_);
  if (!polling_) drain();
  return counts_;
}

bool VfioDevice::wait(const IrqCounts& seen, uint64_t timeout_ns) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  std::unique_lock l(mutex_);
  for (;;) {
    if (!polling_) drain();
    if (counts_ != seen) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    if (polling_) {
      cv_.wait_until(l, deadline);
      continue;
    }
    polling_ = true;
    l.unlock();
    std::vector<pollfd> fds;
    for (int fd : eventfds_) fds.push_back(pollfd{fd, POLLIN, 0});
    // Rounded up to a whole millisecond: poll's unit.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    (void)poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(left.count() + 1, INT_MAX)));
    l.lock();
    polling_ = false;
    drain();
    cv_.notify_all();
  }
}

}  // namespace vgpu::driver
