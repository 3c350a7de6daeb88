// SPDX-License-Identifier: GPL-2.0-or-later
// Where the vgpu-worker executable is when no one names it: beside the
// starting program's own file, in its build tree, else installed
// (docs/cuda-worker.md). vgpud and the C API (QEMU) look alike.
#pragma once
#include <string>
#include "common/error.h"

namespace vgpu::worker {

// `self` is the file of the program (or library) that starts workers:
// DIR/vgpu-worker, DIR/../worker/vgpu-worker, then `installed`; none
// executable: an error for `what` (the option that asked for workers)
// naming each path tried with why, and `give` (what to give instead).
[[nodiscard]] Result<std::string> find_worker_binary(const std::string& self, const std::string& installed,
                                                     const std::string& what, const std::string& give);

}  // namespace vgpu::worker
