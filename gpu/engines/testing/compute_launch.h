// SPDX-License-Identifier: GPL-2.0-or-later
// A compute launch's method stream, piece by piece, for the engine tests
// that drive the compute class (compute_test.h, object_image_test.cc,
// timed_slice_test.cc): where the program and its argument buffer live,
// the program descriptor, and the methods that point the object at them,
// upload and bind the arguments and shape the grid.
#pragma once

#include <cstring>
#include <initializer_list>
#include <vector>

#include "gpu/engines/compute_object.h"
#include "gpu/engines/engine_limits.h"
#include "gpu/engines/testing/engine_env.h"

namespace vgpu::gpu::testing {

inline void append(std::vector<Method>& m, const std::vector<Method>& more) {
  m.insert(m.end(), more.begin(), more.end());
}

class ComputeLaunchEnv : public EngineEnv {
 protected:
  static constexpr uint64_t PROGRAM_VA = LINEAR_VA;
  static constexpr uint32_t PROGRAM_START = 0x100;
  static constexpr uint64_t CB_VA = LINEAR_VA + 0x1000;
  static constexpr uint32_t CB_SIZE = 0x100;
  static constexpr uint32_t BLOCK_THREADS = 256;

  // The program descriptor (a built-in kernel's number) at PROGRAM_START in the program region.
  void write_program(uint32_t kernel, uint32_t magic = cls::PROGRAM_MAGIC, uint32_t version = cls::PROGRAM_VERSION) {
    const cls::ProgramDescriptor d{magic, version, kernel, 0};
    write(PROGRAM_VA + PROGRAM_START, &d, sizeof(d));
  }

  static std::vector<Method> select_cb(uint64_t va, uint32_t size) {
    using namespace cls::compute;
    return {{SET_CONSTANT_BUFFER_SELECTOR_A, size},
            {SET_CONSTANT_BUFFER_SELECTOR_B, hi32(va)},
            {SET_CONSTANT_BUFFER_SELECTOR_C, lo32(va)}};
  }

  // The argument words, uploaded inline (LOAD_CONSTANT_BUFFER, non-incrementing).
  template <typename Args>
  static std::vector<Method> upload(const Args& args) {
    using namespace cls::compute;
    std::vector<uint32_t> words((sizeof(Args) + 3) / 4, 0);
    std::memcpy(words.data(), &args, sizeof(Args));
    std::vector<Method> m{{LOAD_CONSTANT_BUFFER_OFFSET, 0}};
    for (uint32_t w : words) m.push_back({LOAD_CONSTANT_BUFFER, w});
    return m;
  }

  // The program region and start, then the argument buffer at CB_VA
  // selected, filled with `args` and (with `bind`) bound to the argument slot.
  template <typename Args>
  static std::vector<Method> program_and_args(const Args& args, bool bind = true) {
    using namespace cls::compute;
    std::vector<Method> m{{SET_PROGRAM_REGION_A, hi32(PROGRAM_VA)},
                          {SET_PROGRAM_REGION_B, lo32(PROGRAM_VA)},
                          {SET_CTA_PROGRAM_START, PROGRAM_START}};
    append(m, select_cb(CB_VA, CB_SIZE));
    append(m, upload(args));
    if (bind) m.push_back({BIND_CONSTANT_BUFFER, BindValid::make(1) | BindSlot::make(ARG_CB_SLOT)});
    return m;
  }

  // Blocks of BLOCK_THREADS threads in a grid_x x grid_y x 1 grid.
  static std::vector<Method> grid(uint32_t grid_x, uint32_t grid_y = 1) {
    using namespace cls::compute;
    return {{SET_CTA_THREAD_DIMENSION_A, DimLo::make(BLOCK_THREADS) | DimHi::make(1)},
            {SET_CTA_THREAD_DIMENSION_B, 1},
            {SET_CTA_RASTER_SIZE_A, DimLo::make(grid_x) | DimHi::make(grid_y)},
            {SET_CTA_RASTER_SIZE_B, 1}};
  }
};

}  // namespace vgpu::gpu::testing
