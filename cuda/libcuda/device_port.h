// SPDX-License-Identifier: GPL-2.0-or-later
// Which device libcuda opens (docs/cuda-programs.md, "Choosing the
// device"): VGPU_CUDA_PORT = native | fv-naive | fv-opt | pv (an
// in-process testbed, the driver on its VM 0's port) | pci (the vgpu PCI
// device of a Linux guest). Unset: pci when a vgpu PCI device is present,
// else native. This file is the only place that knows the ports.
#pragma once

#include <memory>
#include <string>

#include "common/error.h"
#include "driver/runtime.h"

namespace vgpu::cuda {

// An opened device and what keeps its port alive. Destroy the device first.
class OpenedDevice {
 public:
  virtual ~OpenedDevice() = default;
  virtual driver::Device& device() = 0;
  // "native", "fv-opt", ..., "pci 0000:00:04.0": cuDeviceGetName's suffix.
  virtual std::string description() const = 0;
  // "0000:00:04.0" on the PCI port; empty in process.
  virtual std::string pci_slot() const { return {}; }
};

// The port VGPU_CUDA_PORT names (or the default), opened. not_found when
// it names pci and there is no vgpu PCI device; invalid_argument for a
// value it does not know.
[[nodiscard]] Result<std::unique_ptr<OpenedDevice>> open_device();

// The port name in effect: VGPU_CUDA_PORT, or the default.
std::string port_choice();

}  // namespace vgpu::cuda
