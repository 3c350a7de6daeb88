// SPDX-License-Identifier: GPL-2.0-or-later
// Work that needs a context of its own in each VM (the testbed's tests):
// the context is created before `body` and destroyed after it.
#pragma once

#include <functional>
#include <vector>

#include "testbed/testbed.h"

namespace vgpu::testbed {

// `body` in every VM of `tb`, each with a new context; a VM whose context
// cannot be created ends with that error.
inline std::vector<Status> run_in_new_contexts(Testbed& tb, const std::function<Status(Vm&, driver::Context&)>& body) {
  return tb.run([&](Vm& vm) -> Status {
    auto ctx = vm.device.create_context();
    if (!ctx) return std::unexpected(ctx.error());
    return body(vm, **ctx);
  });
}

}  // namespace vgpu::testbed
