// SPDX-License-Identifier: GPL-2.0-or-later
// A module's .global and .const variables at the guest's data segment
// (docs/cuda-worker.md): CUDA would place them in the module's own memory,
// but the guest put them at SET_MODULE_DATA's VA (spec §10.7) and reads and
// writes them there. The worker removes their declarations, turns every
// reference into the absolute address data_va + offset (the parser's
// layout), and reads .const space as global memory (the model does too).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include "ptx/module.h"

namespace vgpu::worker {

// The text with the variables placed; the text as it was when the module
// has none. Empty (nullopt) with `why` set on a form the rewrite does not know.
std::optional<std::string> place_globals(std::string_view ptx, const ptx::Module& module, uint64_t data_va,
                                         std::string& why);

// A module as the worker gives it to its device: the text parsed (as the
// model parsed it) and its variables placed at data_va; nullopt with `why`
// ("the module does not parse: ...", "module variables: ...").
std::optional<std::string> module_for_device(std::string_view ptx, uint64_t data_va, std::string& why);

}  // namespace vgpu::worker
