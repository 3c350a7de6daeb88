// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/pci_port.h"

#include <pciaccess.h>

#include <cstdio>

#include "driver/hugepage_pin.h"
#include "driver/msg.h"
#include "vgpu/regs.h"

namespace vgpu::driver {

namespace {
struct BarIndex {
  Bar bar;
  unsigned pci_index;
};
constexpr BarIndex BARS[] = {{Bar::bar0, regs::pci::BAR0_INDEX},
                             {Bar::bar1, regs::pci::BAR1_INDEX},
                             {Bar::bar3, regs::pci::BAR3_INDEX}};

std::string slot_name(const pci_device* d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", d->domain, d->bus, d->dev, d->func);
  return buf;
}
}  // namespace

Result<std::unique_ptr<PciPort>> PciPort::open(const std::string& slot) {
  if (int err = pci_system_init(); err != 0) return fail(Errc::io_error, msg("pci_system_init failed (errno {})", err));
  std::unique_ptr<PciPort> port(new PciPort());
  pci_id_match match{regs::pci::VENDOR_ID, regs::pci::DEVICE_ID, PCI_MATCH_ANY, PCI_MATCH_ANY, 0, 0, 0};
  pci_device_iterator* it = pci_id_match_iterator_create(&match);
  while (pci_device* d = pci_device_next(it)) {
    if (slot.empty() || slot == slot_name(d)) {
      port->dev_ = d;
      break;
    }
  }
  pci_iterator_destroy(it);
  if (!port->dev_) {
    pci_system_cleanup();
    return fail(Errc::not_found, msg("no vgpu PCI device {}:{}{}", hex(regs::pci::VENDOR_ID), hex(regs::pci::DEVICE_ID),
                                     slot.empty() ? std::string() : " at " + slot));
  }
  const std::string slot_id = slot_name(port->dev_);
  port->name_ = "pci " + slot_id;
  // The device reads and writes guest memory (sysmem PTEs): it must be a
  // bus master, which a device no kernel driver enabled is not.
  uint16_t command = 0;
  if (pci_device_cfg_read_u16(port->dev_, &command, regs::pci::CONFIG_COMMAND) == 0 &&
      !(command & regs::pci::COMMAND_BUS_MASTER))
    (void)pci_device_cfg_write_u16(port->dev_, static_cast<uint16_t>(command | regs::pci::COMMAND_BUS_MASTER),
                                   regs::pci::CONFIG_COMMAND);
  auto vfio = VfioDevice::open(slot_id);
  if (!vfio && vfio.error().code != Errc::not_found) return std::unexpected(vfio.error());
  if (!vfio) {  // not bound to vfio-pci: libpciaccess, polling
    port->name_ += " (libpciaccess, polling)";
    if (Status s = port->map_with_pciaccess(); !s) return std::unexpected(s.error());
    return port;
  }
  for (const auto& [bar, index] : BARS) {
    auto m = (*vfio)->map_bar(index);
    if (!m) return std::unexpected(m.error());
    port->region(bar) = Region{m->base, m->size};
  }
  port->name_ += msg(" (vfio, {} MSI vector(s))", (*vfio)->vectors());
  port->vfio_ = std::move(*vfio);
  return port;
}

// Behind an IOMMU (the test guest's virtual intel-iommu, through VFIO) the
// device reaches pinned pages only through VFIO's mappings: each run of
// pages adjacent both in the process and on the bus is mapped with its bus
// address as the I/O virtual address (IOVA = physical address, DPDK's "PA"
// mode), so the bus addresses pin() reports stay what the device uses.
Result<PinnedPages> PciPort::pin(uint64_t bytes) {
  auto p = pin_hugepages(bytes);
  if (!p || !vfio_) return p;
  std::vector<DmaRun> runs;
  for (size_t i = 0; i < p->bus.size(); ++i) {
    if (!runs.empty() && runs.back().iova + runs.back().bytes == p->bus[i] &&
        runs.back().host + runs.back().bytes == p->host.data() + i * PIN_PAGE) {
      runs.back().bytes += PIN_PAGE;
      continue;
    }
    runs.push_back(DmaRun{p->host.data() + i * PIN_PAGE, p->bus[i], PIN_PAGE});
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    if (Status s = vfio_->map_dma({runs[i].host, runs[i].bytes}, runs[i].iova); !s) {
      for (size_t j = 0; j < i; ++j) vfio_->unmap_dma(runs[j].iova, runs[j].bytes);
      unpin_hugepages(p->host);
      return std::unexpected(s.error());
    }
  }
  dma_runs_[p->host.data()] = std::move(runs);
  return p;
}

void PciPort::unpin(std::span<std::byte> host) {
  if (auto it = dma_runs_.find(host.data()); it != dma_runs_.end()) {
    for (const DmaRun& r : it->second) vfio_->unmap_dma(r.iova, r.bytes);
    dma_runs_.erase(it);
  }
  unpin_hugepages(host);
}

Status PciPort::map_with_pciaccess() {
  if (int err = pci_device_probe(dev_); err != 0)
    return fail(Errc::io_error, msg("{}: pci_device_probe failed (errno {})", name_, err));
  for (const auto& [bar, index] : BARS) {
    const pci_mem_region& r = dev_->regions[index];
    if (r.size == 0) return fail(Errc::not_found, msg("{}: BAR{} is not present", name_, index));
    void* addr = nullptr;
    if (int err = pci_device_map_range(dev_, r.base_addr, r.size, PCI_DEV_MAP_FLAG_WRITABLE, &addr); err != 0)
      return fail(Errc::io_error, msg("{}: mapping BAR{} failed (errno {})", name_, index, err));
    owned_[static_cast<unsigned>(bar)] = true;
    region(bar) = Region{static_cast<std::byte*>(addr), r.size};
  }
  return {};
}

PciPort::~PciPort() {
  for (unsigned i = 0; i < 4; ++i)  // VFIO's mappings go with vfio_
    if (owned_[i] && regions_[i].base) (void)pci_device_unmap_range(dev_, regions_[i].base, regions_[i].size);
  if (dev_) pci_system_cleanup();
}

uint32_t PciPort::read32(Bar bar, uint64_t offset) {
  const Region& r = region(bar);
  if (!r.base || !decodes(bar, offset)) return BUS_MISS;
  return *reinterpret_cast<volatile const uint32_t*>(r.base + offset);
}

void PciPort::write32(Bar bar, uint64_t offset, uint32_t value) {
  Region& r = region(bar);
  if (!r.base || !decodes(bar, offset)) return;
  *reinterpret_cast<volatile uint32_t*>(r.base + offset) = value;
}

std::span<std::byte> PciPort::map(Bar bar, uint64_t offset, uint64_t len) {
  Region& r = region(bar);
  if (bar == Bar::bar0 || !r.base || offset > r.size || len > r.size - offset) return {};
  return {r.base + offset, len};
}

uint64_t PciPort::bar_size(Bar bar) const { return region(bar).size; }

}  // namespace vgpu::driver
