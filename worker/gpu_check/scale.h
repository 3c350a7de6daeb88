// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
#include <cstdio>
#include <string>

namespace vgpu::worker::check {

// 1, 2, 4 and 8 VMs' workers, each launching the same FMA kernel back to
// back, beside as many processes calling CUDA directly: aggregate
// throughput over one of each. Rows printed, JSON objects to `json`.
void scale(const std::string& binary, const std::string& self, FILE* json);

}  // namespace vgpu::worker::check
