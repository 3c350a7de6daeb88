// SPDX-License-Identifier: GPL-2.0-or-later
// SET_OBJECT's factory: one row per class the device has.
#include <algorithm>
#include <memory>

#include "gpu/engines/class_object.h"
#include "gpu/engines/compute_object.h"
#include "gpu/engines/copy_object.h"
#include "vgpu/classes.h"

namespace vgpu::gpu {

namespace {
struct ClassRow {
  uint32_t class_id;
  std::unique_ptr<ClassObject> (*make)();
};

constexpr ClassRow CLASSES[] = {
    {cls::DMA_COPY, []() -> std::unique_ptr<ClassObject> { return std::make_unique<CopyObject>(); }},
    {cls::COMPUTE, []() -> std::unique_ptr<ClassObject> { return std::make_unique<ComputeObject>(); }},
};
}  // namespace

std::unique_ptr<ClassObject> make_class_object(uint32_t class_id) {
  const auto* row = std::ranges::find(CLASSES, class_id, &ClassRow::class_id);
  return row == std::end(CLASSES) ? nullptr : row->make();
}

}  // namespace vgpu::gpu
