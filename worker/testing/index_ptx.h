// SPDX-License-Identifier: GPL-2.0-or-later
// A user kernel for the worker's tests: out[i] = i + 1 for every thread i
// of a one-dimensional grid (i from %ctaid, so the pieces of the %ctaid
// rewrite must add up to the whole grid; + 1 so that a thread that never
// ran leaves its word 0).
#pragma once
#include <string>

#include "worker/spin_ptx.h"

namespace vgpu::worker::testing {

inline const std::string INDEX_PTX = std::string(PTX_HEAD) + R"(.visible .entry index(.param .u64 out)
{
	.reg .b32 %r<6>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mad.lo.s32 %r4, %r1, %r2, %r3;
	add.s32 %r5, %r4, 1;
	mul.wide.u32 %rd2, %r4, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r5;
	ret;
}
)";

}  // namespace vgpu::worker::testing
