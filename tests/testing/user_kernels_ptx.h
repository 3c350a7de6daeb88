// SPDX-License-Identifier: GPL-2.0-or-later
// The PTX of tests/testing/user_kernels.cu (kernels written here), as
// clang-14 writes it with the build line in that file
// (tests/testing/user_kernels.ptx, read once; meson passes its path as
// VGPU_USER_KERNELS_PTX): for the user-kernel tests
// (tests/user_kernel_test.cc) and the isolation catalogue
// (tests/isolation_user_kernels_test.cc).
#pragma once

#include <string>

#include "common/read_file.h"

#ifndef VGPU_USER_KERNELS_PTX
#error "VGPU_USER_KERNELS_PTX comes from meson (tests/meson.build): the path of tests/testing/user_kernels.ptx"
#endif

namespace vgpu::testing {

inline const std::string USER_KERNELS_PTX = read_file_or_abort(VGPU_USER_KERNELS_PTX);

}  // namespace vgpu::testing
