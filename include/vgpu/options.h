/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The options of a vGPU (-device vgpu,...; the daemon's requests): one
 * definition of each option's name, default and bounds, shared by QEMU's
 * hw/vgpu (C), the C API and the mediator (C++). Each option is a row of
 * the option table (vgpu/option_table.h: its parse, check, messages and
 * help, and what 0 means, the same in every front end); the scheduler
 * names are scheduler/policy.cc's.
 * C and C++: no C++ in this file.
 */
#ifndef VGPU_OPTIONS_H
#define VGPU_OPTIONS_H

#define VGPU_OPT_VRAM "vram" /* bytes: a whole number of MiB */
#define VGPU_OPT_VRAM_DEFAULT_MIB 256
#define VGPU_OPT_VRAM_MIN_MIB 64
#define VGPU_OPT_VRAM_MAX_MIB 4096
#define VGPU_OPT_CHANNELS "channels" /* guest channel ids [0, channels) */
#define VGPU_OPT_CHANNELS_DEFAULT 16
#define VGPU_OPT_CHANNELS_MAX 128
#define VGPU_OPT_WEIGHT "weight" /* scheduler share */
#define VGPU_OPT_WEIGHT_DEFAULT 10
#define VGPU_OPT_WEIGHT_MAX 100
#define VGPU_OPT_SCHEDULER "scheduler" /* fifo, credit or band */
/* BAND, GPUvm's fair-share scheduler; FIFO and CREDIT are there to compare
 * with (docs/scheduler.md, "The default"). */
#define VGPU_OPT_SCHEDULER_DEFAULT "band"
/* A scheduler turn's time slice: a turn ends at the first GPFIFO entry
 * boundary after it (docs/scheduler.md, "Bounded turns"); 0: a turn runs
 * every entry up to GP_PUT. Host-wide, as the scheduler is. */
#define VGPU_OPT_TURN_MS "turn-ms"
#define VGPU_OPT_TURN_MS_DEFAULT 30
#define VGPU_OPT_TURN_MS_MAX 1000
/* The longest one indivisible piece of engine work may hold the GPU (a
 * kernel or copy that is not divided, or one piece of divided work):
 * longer is ended with channel error timeout (0x0e), as a GPU's timeout
 * detection would; 0: no limit. Divisible work is cut into pieces of the
 * slice (slice-blocks) and never ended for being long: the watchdog below
 * bounds it. Host-wide: every VM gets the same maximum. */
#define VGPU_OPT_MAX_GPU_MS "max-gpu-ms"
#define VGPU_OPT_MAX_GPU_MS_DEFAULT 4000
#define VGPU_OPT_MAX_GPU_MS_MAX 60000
/* Kernel and copy slicing (docs/spec/vgpu.md §10.5, docs/scheduler.md
 * "Slicing by time"): a scheduler turn may end between slices of a
 * launch or pieces of a copy. VGPU_OPT_SLICE_BLOCKS_AUTO, the default:
 * pieces of 1/VGPU_OPT_SLICE_TURN_FRACTION of turn-ms of engine time
 * (7.5 ms with the default turns), the engine measuring the work's speed,
 * for kernels and copies; N: compute launches of more thread blocks run
 * in slices of N blocks and copies whole; 0: launches and copies run
 * whole. Per VM. On vgpud's command line "auto" is the same value. */
#define VGPU_OPT_SLICE_BLOCKS "slice-blocks"
#define VGPU_OPT_SLICE_BLOCKS_AUTO 0xffffffffu
#define VGPU_OPT_SLICE_BLOCKS_DEFAULT VGPU_OPT_SLICE_BLOCKS_AUTO
#define VGPU_OPT_SLICE_BLOCKS_MAX 0xffffff
#define VGPU_OPT_SLICE_TURN_FRACTION 4
/* The watchdog of one operation (one method's engine work, every piece of
 * it together), in ms of engine time: an operation that runs longer ends
 * with channel error timeout; 0: none. Per VM. It bounds runaway work that
 * slicing keeps divisible (docs/spec/vgpu.md §10.4, "Engine time": the
 * longest legal spin, 10 s, and the copy of 86.7 million lines,
 * about 20 s on the model, take less). */
#define VGPU_OPT_WATCHDOG_MS "watchdog-ms"
#define VGPU_OPT_WATCHDOG_MS_DEFAULT 60000
#define VGPU_OPT_WATCHDOG_MS_MAX 3600000
/* Ringing ahead (docs/scheduler.md, "Ringing ahead"): a VM's next GPFIFO
 * entry is rung behind the one still on the GPU while its turn has time and
 * no other VM waits. Off, another VM waits behind at most one entry of the
 * turn in progress instead of two. Host-wide, fv only. */
#define VGPU_OPT_RING_AHEAD "ring-ahead"
#define VGPU_OPT_RING_AHEAD_DEFAULT 1
#define VGPU_OPT_BAR_REMAP "bar-remap" /* map insensitive BAR pages straight onto VRAM */
#define VGPU_OPT_BAR_REMAP_DEFAULT 1
#define VGPU_OPT_LAZY_SHADOW "lazy-shadow" /* shadow sync at dispatch, dirty pages only */
#define VGPU_OPT_LAZY_SHADOW_DEFAULT 1

/* Offer the paravirtual page-table interface (spec §17); fv only. */
#define VGPU_OPT_PV "pv"
#define VGPU_OPT_PV_DEFAULT 0

/* Who runs the engines' work: "model" (the software model's engines) or
 * "cuda" (an NVIDIA GPU, where built and present): in vgpud one worker
 * process per VM (docs/cuda-worker.md), in QEMU's embedded device QEMU's
 * own process (docs/cuda.md). With a socket it is the daemon's (vgpud
 * --backend). */
#define VGPU_OPT_BACKEND "backend"
#define VGPU_OPT_BACKEND_DEFAULT "model"

/* vgpud --backend cuda (one worker process per VM, docs/cuda-worker.md):
 * what each worker runs on, "cuda" (an NVIDIA GPU through libcuda.so.1) or
 * "fake" (host memory, for tests), and the worker executable (by default
 * the one beside vgpud, else the installed one). vgpud's only: QEMU's
 * device has no such properties. */
#define VGPU_OPT_WORKER_DEVICE "worker-device"
#define VGPU_OPT_WORKER_DEVICE_DEFAULT "cuda"
#define VGPU_OPT_WORKER_BINARY "worker-binary"

#define VGPU_OPT_SOCKET "socket"   /* a vgpud socket: the VM's vGPU comes from the daemon (fv) */
#define VGPU_OPT_VM_NAME "vm-name" /* the VM's name at the daemon; default qemu-PID */
#define VGPU_OPT_VM_NAME_MAX 31    /* characters of [A-Za-z0-9._-] (vgpud's proto::NAME_BYTES - 1) */
/* With a socket: how long the device waits for vgpud's first answer
 * (connecting, attaching) before its realize fails with "vgpud at PATH did
 * not answer in N s"; later round trips wait as long as the daemon takes.
 * The default is vgpud's client default (vgpud/wire.h DEFAULT_TIMEOUT_MS),
 * or VGPUD_TIMEOUT's value when that is set. */
#define VGPU_OPT_DAEMON_TIMEOUT_MS "daemon-timeout-ms"
#define VGPU_OPT_DAEMON_TIMEOUT_MS_DEFAULT 5000
#define VGPU_OPT_DAEMON_TIMEOUT_MS_MAX 3600000 /* an hour, as VGPUD_TIMEOUT's bound */

#endif /* VGPU_OPTIONS_H */
