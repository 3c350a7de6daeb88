// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/gpu_check/direct.h"

#include "worker/spin_ptx.h"

namespace vgpu::worker::check {

const std::string BENCH_PTX = std::string(PTX_HEAD) + R"(.visible .entry empty()
{
	ret;
}
)" + SPIN_ENTRY_PTX + R"(.visible .entry fma_loop(.param .u64 out, .param .u32 iters)
{
	.reg .b32 %r<6>;
	.reg .f32 %f<8>;
	.reg .b64 %rd<4>;
	.reg .pred %p;
	ld.param.u64 %rd1, [out];
	ld.param.u32 %r1, [iters];
	mov.u32 %r2, %tid.x;
	cvt.rn.f32.u32 %f1, %r2;
	mov.f32 %f2, %f1;
	mov.f32 %f3, %f1;
	mov.f32 %f4, %f1;
	mov.u32 %r3, 0;
LOOP:
	fma.rn.f32 %f1, %f1, 0f3F7FFFFF, 0f3F800000;
	fma.rn.f32 %f2, %f2, 0f3F7FFFFE, 0f3F800000;
	fma.rn.f32 %f3, %f3, 0f3F7FFFFD, 0f3F800000;
	fma.rn.f32 %f4, %f4, 0f3F7FFFFC, 0f3F800000;
	add.u32 %r3, %r3, 1;
	setp.lt.u32 %p, %r3, %r1;
	@%p bra LOOP;
	add.f32 %f5, %f1, %f2;
	add.f32 %f6, %f3, %f4;
	add.f32 %f7, %f5, %f6;
	mov.u32 %r4, %ctaid.x;
	mov.u32 %r5, %ntid.x;
	mad.lo.u32 %r4, %r4, %r5, %r2;
	mul.wide.u32 %rd2, %r4, 4;
	add.u64 %rd3, %rd1, %rd2;
	st.global.f32 [%rd3], %f7;
	ret;
}
)";

std::string Direct::init(const char* ptx) {
  auto a = cu::load();
  if (!a) return a.error().what();
  api = *a;
  cu::Device dev = 0;
  cu::Context ctx = nullptr;
  cu::Result r = api.Init(0);
  if (r == cu::SUCCESS) r = api.DeviceGet(&dev, 0);
  if (r == cu::SUCCESS) r = api.DevicePrimaryCtxRetain(&ctx, dev);
  if (r == cu::SUCCESS) r = api.CtxSetCurrent(ctx);
  if (r == cu::SUCCESS) r = api.StreamCreate(&stream, cu::STREAM_NON_BLOCKING);
  if (r == cu::SUCCESS) r = api.ModuleLoadData(&module, ptx);
  return r == cu::SUCCESS ? "" : cu::describe(api, "direct CUDA set-up", r);
}

cu::Function Direct::function(const char* name) {
  cu::Function f = nullptr;
  api.ModuleGetFunction(&f, module, name);
  return f;
}

}  // namespace vgpu::worker::check
