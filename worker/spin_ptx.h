// SPDX-License-Identifier: GPL-2.0-or-later
// The spin kernel: busy until %globaltimer passed `ns` nanoseconds after
// it started. The worker's spin command runs it (cuda_device.cc), and
// vgpu-worker-check's benchmark runs the same text directly beside the
// worker (gpu_check/direct.cc).
#pragma once
#include <string>

namespace vgpu::worker {

// The first lines of the worker's hand-written PTX modules.
inline constexpr const char* PTX_HEAD = R"(.version 7.0
.target sm_70
.address_size 64
)";

inline constexpr const char* SPIN_ENTRY = "vgpu_spin";
// The entry alone, for a module with other entries.
inline constexpr const char* SPIN_ENTRY_PTX = R"(.visible .entry vgpu_spin(.param .u64 ns)
{
	.reg .u64 %rd<5>;
	.reg .pred %p;
	ld.param.u64 %rd1, [ns];
	mov.u64 %rd2, %globaltimer;
	add.u64 %rd3, %rd2, %rd1;
LOOP:
	mov.u64 %rd4, %globaltimer;
	setp.lt.u64 %p, %rd4, %rd3;
	@%p bra LOOP;
	ret;
}
)";

// A module of the spin alone.
inline const std::string SPIN_PTX = std::string(PTX_HEAD) + SPIN_ENTRY_PTX;

}  // namespace vgpu::worker
