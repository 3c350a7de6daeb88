// SPDX-License-Identifier: GPL-2.0-or-later
// Guest test: the vgpu device enumerates on PCI with the IDs and BARs of
// regs::pci, and BAR0's PMC BOOT_0 names a GF100-class chipset. Runs inside
// the guest (static, libpciaccess over sysfs). Prints one line:
// "PASS pci_probe" or "FAIL pci_probe: <reason>"; exit status 0 on PASS.
#include <pciaccess.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "vgpu/regs.h"

namespace {

using namespace vgpu;

int fail(const std::string& why) {
  std::printf("FAIL pci_probe: %s\n", why.c_str());
  return 1;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

struct BarSpec {
  unsigned index;
  uint64_t size;
  bool is_64;  // 64-bit and prefetchable; else 32-bit, non-prefetchable
};
constexpr BarSpec BARS[] = {
    {regs::pci::BAR0_INDEX, regs::pci::BAR0_SIZE, false},
    {regs::pci::BAR1_INDEX, regs::pci::BAR1_SIZE, true},
    {regs::pci::BAR3_INDEX, regs::pci::BAR3_SIZE, true},
};

// Checks one BAR's size and kind against the register header.
std::string check_bar(const pci_device& dev, unsigned index, uint64_t size, bool is_64) {
  const pci_mem_region& r = dev.regions[index];
  std::string name = "BAR" + std::to_string(index);
  if (r.size != size) return name + " size " + hex(r.size) + ", expected " + hex(size);
  if (r.is_IO) return name + " is an I/O BAR";
  if (static_cast<bool>(r.is_64) != is_64) return name + (is_64 ? " is not 64-bit" : " is 64-bit");
  if (static_cast<bool>(r.is_prefetchable) != is_64) return name + " prefetchable flag is wrong";
  return {};
}

int probe() {
  if (int err = pci_system_init(); err != 0) return fail("pci_system_init: error " + std::to_string(err));
  pci_id_match match{regs::pci::VENDOR_ID, regs::pci::DEVICE_ID, PCI_MATCH_ANY, PCI_MATCH_ANY, 0, 0, 0};
  pci_device_iterator* it = pci_id_match_iterator_create(&match);
  pci_device* dev = it != nullptr ? pci_device_next(it) : nullptr;
  pci_iterator_destroy(it);
  if (dev == nullptr) {
    return fail("no PCI device " + hex(regs::pci::VENDOR_ID) + ":" + hex(regs::pci::DEVICE_ID));
  }
  if (int err = pci_device_probe(dev); err != 0) return fail("pci_device_probe: error " + std::to_string(err));
  if (dev->revision != regs::pci::REVISION) return fail("revision " + hex(dev->revision));
  if ((dev->device_class >> 16) != regs::pci::CLASS_DISPLAY) return fail("class " + hex(dev->device_class));

  for (const BarSpec& bar : BARS) {
    if (std::string why = check_bar(*dev, bar.index, bar.size, bar.is_64); !why.empty()) return fail(why);
  }

  const pci_mem_region& bar0 = dev->regions[regs::pci::BAR0_INDEX];
  void* map = nullptr;
  if (int err = pci_device_map_range(dev, bar0.base_addr, bar0.size, PCI_DEV_MAP_FLAG_WRITABLE, &map); err != 0) {
    return fail("mapping BAR0 at " + hex(bar0.base_addr) + ": error " + std::to_string(err));
  }
  const volatile uint32_t* mmio = static_cast<const volatile uint32_t*>(map);
  uint32_t boot0 = mmio[regs::pmc::BOOT_0.offset / sizeof(uint32_t)];
  pci_device_unmap_range(dev, map, bar0.size);
  pci_system_cleanup();

  uint32_t chipset = regs::pmc::Boot0Chipset::get(boot0);
  if (chipset != regs::CHIPSET_GF100) {
    return fail("BOOT_0 " + hex(boot0) + " names chipset " + hex(chipset) + ", expected " + hex(regs::CHIPSET_GF100));
  }
  std::printf("PASS pci_probe\n");
  return 0;
}

}  // namespace

int main() { return probe(); }
