/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * vgpu: the scheduler's turns as trace events (vgpu_turn_start,
 * vgpu_turn_end). With mode=fv and the embedded mediator the scheduler
 * runs in this process and tells the device of its VM's turns; in
 * passthrough there are none, and with a socket they are vgpud's. See
 * docs/qemu.md, "Trace points".
 */

#include "qemu/osdep.h"
#include "trace.h"
#include "vgpu.h"

#define VGPU_NS_PER_US 1000

/*
 * Called from backend threads (a vCPU's MMIO, the GPU's event thread, the
 * mediator's watchdog), an end with the scheduler's lock held: it only
 * emits the trace event, which is thread safe and does not block.
 */
void vgpu_turn_from_backend(void *opaque, bool start, VgpuTurnEnd end, uint64_t gpu_ns)
{
    VGPUState *s = opaque;
    const char *id = DEVICE(s)->id ? DEVICE(s)->id : TYPE_VGPU;

    if (start) {
        trace_vgpu_turn_start(id);
    } else {
        trace_vgpu_turn_end(id, vgpu_turn_end_name(end), gpu_ns / VGPU_NS_PER_US);
    }
}
