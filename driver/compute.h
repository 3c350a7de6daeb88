// SPDX-License-Identifier: GPL-2.0-or-later
// Compute launches with class 0x90C0. vgpu deviation (no shader ISA): the
// program at PROGRAM_REGION + CTA_PROGRAM_START is a cls::ProgramDescriptor
// naming a built-in kernel; its arguments are uploaded inline into the
// constant buffer bound at slot ARG_CB_SLOT.
#pragma once

#include <cstdint>
#include <span>

#include "driver/pushbuf.h"
#include "vgpu/classes.h"

namespace vgpu::driver {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};
struct LaunchShape {
  Dim3 grid;
  Dim3 block;
};

// Program descriptors, one per built-in kernel, at index * 16 of the code
// buffer.
inline constexpr cls::Kernel KERNELS[] = {cls::Kernel::fill,  cls::Kernel::saxpy,  cls::Kernel::madd,
                                          cls::Kernel::sgemm, cls::Kernel::conv2d, cls::Kernel::mriq,
                                          cls::Kernel::spin};
inline constexpr uint32_t CODE_BYTES = sizeof(KERNELS) / sizeof(KERNELS[0]) * sizeof(cls::ProgramDescriptor);
uint32_t program_offset(cls::Kernel k);
cls::ProgramDescriptor program_descriptor(cls::Kernel k);

// Constant buffer holding the arguments: large enough for every arg struct.
inline constexpr uint32_t ARG_CB_BYTES = 256;
// Where a user launch's program descriptor is written (by the channel
// itself, through the constant-buffer upload, so launches stay ordered):
// after the argument constant buffer in the code buffer.
inline constexpr uint32_t USER_PROGRAM_OFFSET = 0x200;

// Binds 0x90C0 on subch::COMPUTE and points PROGRAM_REGION at the code buffer.
void emit_compute_bind(PushBuffer& pb, uint64_t code_va);
// One launch of kernel k with the argument words, in the constant buffer at cb_va.
void emit_launch(PushBuffer& pb, cls::Kernel k, uint64_t cb_va, std::span<const uint32_t> args, LaunchShape shape);

// ext (§10.6): a module's text, data segment and report, then LOAD_MODULE.
struct ModuleLoadMethods {
  uint64_t source_va;
  uint32_t source_bytes;
  uint64_t data_va;
  uint32_t data_bytes;
  uint64_t report_va;
  uint32_t slot;
};
void emit_load_module(PushBuffer& pb, const ModuleLoadMethods& m);
// A launch of entry `entry` of the module in `slot`: the descriptor into the
// code buffer at code_va + USER_PROGRAM_OFFSET, the parameter words into
// the constant buffer at cb_va (cb_bytes), the dynamic shared memory.
struct UserLaunchMethods {
  uint64_t code_va;
  uint64_t cb_va;
  uint32_t cb_bytes;
  uint64_t report_va;
  uint32_t slot;
  uint32_t entry;
  uint32_t shared_bytes;
  std::span<const uint32_t> params;
  LaunchShape shape;
};
void emit_user_launch(PushBuffer& pb, const UserLaunchMethods& m);
// The same launch as one LAUNCH_USER run: the header (cls::UserLaunchWords)
// and the parameter words; code_va, cb_va and cb_bytes are not used.
void emit_user_launch_words(PushBuffer& pb, const UserLaunchMethods& m);

}  // namespace vgpu::driver
