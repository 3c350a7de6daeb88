// SPDX-License-Identifier: GPL-2.0-or-later
// What can be checked without the device: asking for a slot that holds no
// vgpu device gives a clear not_found (or io_error where the host has no
// PCI access at all), never a crash.
#include "driver/pci_port.h"
#include "driver/vfio_device.h"

#include <gtest/gtest.h>

namespace vgpu::driver {
namespace {

TEST(PciPort, AbsentSlotIsNotFound) {
  auto port = PciPort::open("ffff:ff:1f.7");
  ASSERT_FALSE(port);
  if (port.error().code == Errc::io_error) GTEST_SKIP() << "no PCI access here: " << port.error().what();
  EXPECT_EQ(port.error().code, Errc::not_found);
  EXPECT_NE(port.error().message.find("0x1af4:0x10f0"), std::string::npos);
  EXPECT_NE(port.error().message.find("ffff:ff:1f.7"), std::string::npos);
}

TEST(VfioDevice, ADeviceNotBoundToVfioPciIsNotFoundSoThePortFallsBack) {
  auto d = VfioDevice::open("ffff:ff:1f.7");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, Errc::not_found) << d.error().what();
}

}  // namespace
}  // namespace vgpu::driver
