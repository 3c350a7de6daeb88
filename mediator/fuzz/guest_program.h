// SPDX-License-Identifier: GPL-2.0-or-later
// The guest-program fuzz harness (docs/fuzzing.md): one decoder shared by
// the targets whose input is what a guest does with its device. An input
// is a sequence of operations (a register or BAR access, a PRAMIN write,
// a page-table entry, a push buffer of methods, a raw GPFIFO entry, a
// doorbell, a PV batch, a launch, a copy, a wait, a reset, a teardown),
// each an opcode byte and its arguments; what runs them is an attacker VM
// whose driver has opened the device and made one context with two
// buffers, so that the operations start from a working channel and reach
// launches, faults, resets and teardown.
//
// Each surface is a target with its own mix of operations and modes:
//   bar        BAR0/BAR1/BAR3 accesses in fv-naive, fv-opt and pv
//   pushbuf    GPFIFO entries, push buffers and methods of every class
//   pagetable  page directories and tables, sysmem PTEs, copies (DMA)
//   pv         PV hypercall batches (pv mode)
//   device     the device model alone, no mediator (pass-through)
// In the four mediated surfaces a victim VM runs a fill over its own
// buffers during every input and checks, after it, its results, its
// sentinel buffers in host VRAM, its RAM, its channel and its error log;
// any change is a finding (the target aborts with a message), as is a
// victim launch that does not finish within VICTIM_BOUND_MS.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vgpu::fuzz {

enum class Surface { bar, pushbuf, pagetable, pv, device };

// The victim's fill must finish within this, however the attacker holds
// the GPU: the host ends any attacker GPFIFO entry after MAX_GPU_MS, and
// turns last at most the scheduler's slice (docs/scheduler.md).
inline constexpr uint32_t MAX_GPU_MS = 50;
inline constexpr uint64_t VICTIM_BOUND_MS = 5000;  // with room for a loaded machine (ASan, 2 cores)

// A BAR0 register offset of the register header's table (row `row`
// modulo the rows, element `element` modulo the row's count).
uint32_t register_offset(uint32_t row, uint32_t element);

// Runs one input (LLVMFuzzerTestOneInput's body); aborts on a finding.
void run_guest_program(Surface surface, const uint8_t* data, size_t size);

}  // namespace vgpu::fuzz
