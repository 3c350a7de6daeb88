// SPDX-License-Identifier: GPL-2.0-or-later
// The one-store kernel: *out = 1, the smallest kernel there is.
// vgpu-user-launch-bench times its launch (gpu_check/user_launch_bench.cc),
// and vgpu-worker-check's containment check has the attacker launch it at
// an address no block maps (gpu_check/contain.cc).
#pragma once
#include <string>

#include "worker/spin_ptx.h"

namespace vgpu::worker {

inline constexpr const char* STORE_ENTRY = "store";
// The entry alone, for a module with other entries.
inline constexpr const char* STORE_ENTRY_PTX = R"(.visible .entry store(.param .u64 out)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, 1;
	st.global.u32 [%rd1], %r1;
	ret;
}
)";

// A module of the store alone.
inline const std::string STORE_PTX = std::string(PTX_HEAD) + STORE_ENTRY_PTX;

}  // namespace vgpu::worker
