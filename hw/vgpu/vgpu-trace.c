/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * vgpu: the trace events that need the backend's counts around one BAR
 * access (vgpu_doorbell, vgpu_daemon_round_trip), and the scheduler's
 * turns as trace events (vgpu_turn_start,
 * vgpu_turn_end). With mode=fv and the embedded mediator the scheduler
 * runs in this process and tells the device of its VM's turns; in
 * passthrough there are none, and with a socket they are vgpud's. See
 * docs/qemu.md, "Trace points".
 */

#include "qemu/osdep.h"
#include "qemu/timer.h"
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

/* What one backend access did (vgpu.h, VgpuAccessTrace). */
void vgpu_trace_begin(VGPUState *s, VgpuAccessTrace *t)
{
    t->on = trace_event_get_state_backends(TRACE_VGPU_DOORBELL)
            || trace_event_get_state_backends(TRACE_VGPU_DAEMON_ROUND_TRIP);
    if (t->on) {
        vgpu_backend_event_counts(s->backend, &t->before);
        t->start_ns = get_clock();
    }
}

/* bar: 0, 1 or 3; value: what was read or written. */
void vgpu_trace_end(VGPUState *s, VgpuAccessTrace *t, int bar, uint64_t offset,
                    uint32_t value)
{
    VgpuEventCounts n;

    if (!t->on) {
        return;
    }
    vgpu_backend_event_counts(s->backend, &n);
    if (n.doorbells != t->before.doorbells) {
        trace_vgpu_doorbell(bar, offset, value, n.doorbells);
    }
    if (n.round_trips != t->before.round_trips) {
        trace_vgpu_daemon_round_trip(bar, offset, n.round_trips - t->before.round_trips,
                                     (get_clock() - t->start_ns) / 1000);
    }
}
