// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu C API: the seam between a C host (QEMU's hw/vgpu) and the C++
// backend (the embedded mediator and the software GPU model). C only: no
// C++ types cross it, and no C++ exception escapes it (every entry point
// catches at the boundary and turns a failure into a return value).
//
// Threading: every function may be called from any thread, but calls on
// one backend must be serialised by the caller (QEMU holds the BQL around
// MMIO). The interrupt callback is the exception: the backend calls it from
// its own engine threads, possibly while a caller is inside a backend call.
#ifndef VGPU_CAPI_H
#define VGPU_CAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/options.h" /* the options' names, defaults and bounds */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct VgpuBackend VgpuBackend;

// The device's PCI identity and BAR sizes (regs::pci in vgpu/regs.h), for
// C front ends that cannot include the C++ register header.
typedef struct VgpuPciIdentity {
    uint16_t vendor_id;
    uint16_t device_id;
    uint8_t revision;
    uint16_t class_id;    // base class << 8 | subclass
    unsigned bar0_index;  // 32-bit MMIO registers
    unsigned bar1_index;  // 64-bit prefetchable VRAM aperture
    unsigned bar3_index;  // 64-bit prefetchable instance aperture
    uint64_t bar0_size;
    uint64_t bar1_size;
    uint64_t bar3_size;
} VgpuPciIdentity;

void vgpu_pci_identity(VgpuPciIdentity *identity);

// Limits the backend accepts (docs/qemu.md): VRAM is a whole number of MiB
// in [min, max]; channels in [1, max]; weight in [1, max]; vm-name at most
// VGPU_OPT_VM_NAME_MAX characters of [A-Za-z0-9._-].
typedef struct VgpuLimits {
    uint64_t vram_min;
    uint64_t vram_max;
    uint64_t vram_granule;
    uint32_t channels_max;
    uint32_t weight_max;
} VgpuLimits;

void vgpu_limits(VgpuLimits *limits);

typedef enum VgpuMode {
    VGPU_MODE_PASSTHROUGH = 0,  // the VM owns the whole GPU, no shadowing
    VGPU_MODE_FV = 1,           // full virtualization through the mediator
} VgpuMode;

typedef enum VgpuBar {
    VGPU_BAR1 = 1,  // VRAM aperture
    VGPU_BAR3 = 3,  // instance aperture
} VgpuBar;

// What the device reports for the people who run it (common/log.h): a
// guest's misbehaviour (QEMU: LOG_GUEST_ERROR) and the device's own
// failures. Rate-limited by the backend; called from any backend thread;
// must not block or call back into the backend. `line` is valid during the
// call only.
typedef enum VgpuLogKind {
    VGPU_LOG_GUEST_ERROR = 0,
    VGPU_LOG_INTERNAL_ERROR = 1,
} VgpuLogKind;
typedef void (*VgpuLogFn)(void *opaque, VgpuLogKind kind, const char *line);

// A scheduler turn of this VM on the GPU began (start true) or ended
// (start false, with why and the GPU time the turn was charged): mode fv
// with the embedded mediator only, this VM's turns only, each start
// before its end. (Passthrough has no turns; with a socket they are
// vgpud's.) Called from backend threads, possibly while a caller is
// inside a backend call, an end with the scheduler's lock held: it must
// be quick, must not block and must not call back into the backend.
typedef enum VgpuTurnEnd {
    VGPU_TURN_DRAINED = 0,      // the channel ran dry (a held turn included)
    VGPU_TURN_OUT_OF_TIME = 1,  // the slice (turn-ms) ended; the rest is requeued
    VGPU_TURN_STOPPED = 2,  // the channel was unbound or parked in a semaphore acquire
    VGPU_TURN_ERROR = 3,    // a channel error
    VGPU_TURN_EMPTY = 4,    // the dispatch found nothing to run
} VgpuTurnEnd;
typedef void (*VgpuTurnFn)(void *opaque, bool start, VgpuTurnEnd end, uint64_t gpu_ns);
// "drained", "out-of-time", "stopped", "error", "empty"; "?" for others.
const char *vgpu_turn_end_name(VgpuTurnEnd end);

typedef struct VgpuBackendConfig {
    uint64_t vram_bytes;  // VRAM the VM sees (VGPU_OPT_VRAM)
    uint32_t channels;    // channels the VM may use (VGPU_OPT_CHANNELS)
    VgpuMode mode;
    bool bar_remap;         // map safe BAR1/BAR3 pages straight to VRAM
    bool lazy_shadow;       // rescan page tables only when a channel runs
    const char *scheduler;  // "fifo", "credit" or "band"
    uint32_t weight;        // scheduler share (VGPU_OPT_WEIGHT)
    VgpuLogFn log;          // NULL: stderr
    void *log_opaque;
    // NULL: the GPU is embedded in this process. A path: the vGPU comes
    // from the vgpud daemon listening there (mode must be fv; scheduler is
    // the daemon's). vm_name names the VM there (NULL: qemu-PID).
    const char *socket;   // VGPU_OPT_SOCKET
    const char *vm_name;  // VGPU_OPT_VM_NAME
    // Time isolation of the embedded mediator (mode fv; with a socket they
    // are the daemon's and must stay at their defaults): milliseconds, 0
    // as the option table says (vgpu/option_table.h: turn-ms 0, a turn
    // runs up to GP_PUT; max-gpu-ms 0, no limit).
    uint32_t turn_ms;     // VGPU_OPT_TURN_MS
    uint32_t max_gpu_ms;  // VGPU_OPT_MAX_GPU_MS
    // Offer the paravirtual page-table interface (VGPU_OPT_PV, spec §17):
    // mode fv, embedded mediator only.
    bool pv;
    // Slicing (VGPU_OPT_SLICE_BLOCKS): VGPU_OPT_SLICE_BLOCKS_AUTO by time,
    // N thread blocks per slice, 0 launches and copies whole: mode fv,
    // embedded mediator only (with a socket it is the daemon's).
    uint32_t slice_blocks;
    // VGPU_OPT_RING_AHEAD: mode fv, embedded mediator only (with a socket
    // it is the daemon's, vgpud --ring-ahead).
    bool ring_ahead;
    // One operation's engine time in ms (VGPU_OPT_WATCHDOG_MS; 0: none):
    // mode fv, embedded mediator only (with a socket it is the daemon's,
    // vgpud --watchdog-ms).
    uint32_t watchdog_ms;
    // Who runs the engines' work (VGPU_OPT_BACKEND): "model" or "cuda";
    // NULL: model. Embedded GPU only (with a socket it is the daemon's).
    const char *engine_backend;
    // Told of this VM's turns (VgpuTurnFn); NULL: no one. Accepted and
    // unused in passthrough and with a socket.
    VgpuTurnFn turn;
    void *turn_opaque;
    // With a socket: the wait for the daemon's first answer in ms
    // (VGPU_OPT_DAEMON_TIMEOUT_MS, 1 to its maximum): at the default,
    // VGPUD_TIMEOUT decides when it is set; without a socket a valid value
    // is unused.
    uint32_t daemon_timeout_ms;
    // With a socket: this device is an incoming migration's destination
    // (QEMU -incoming), so that on the source's daemon it may share the
    // source's vm-name until the source is freed (docs/migration.md §7).
    // Unused without a socket.
    bool incoming;
    // With engine_backend "cuda" (mode fv, embedded): what each vGPU's
    // worker process runs on (VGPU_OPT_WORKER_DEVICE: "cuda", or "fake"
    // for tests) and the vgpu-worker executable (VGPU_OPT_WORKER_BINARY;
    // NULL: beside this program, its build tree's, else installed).
    const char *worker_device;
    const char *worker_binary;
} VgpuBackendConfig;

// Every field at the option table's default (vgpu/option_table.h): mode
// passthrough, the default VRAM, channels, scheduler and so on; callbacks,
// socket and vm_name NULL. Start every config with it: a zeroed config is
// not the defaults (0 is a value: turn-ms 0 runs turns up to GP_PUT).
void vgpu_backend_config_init(VgpuBackendConfig *config);

// One range of a BAR as the front end should map it. Ranges are sorted,
// do not overlap and cover the whole BAR.
typedef struct VgpuBarRange {
    uint64_t bar_offset;   // start in the BAR
    uint64_t vram_offset;  // offset in the VRAM memfd (direct ranges only)
    uint64_t size;         // bytes
    bool trapped;          // true: every access goes through bar_read32/bar_write32
} VgpuBarRange;

// Called with the new level of the device's interrupt line. Runs on a
// backend thread (or on the caller's thread, inside a register write): it
// must not block and must not call back into the backend.
typedef void (*VgpuIrqFn)(void *opaque, bool asserted);

// Called for each interrupt message (spec §11.6): vector 0 for non-stall
// interrupts, 1 for channel errors and rising edges of the line. Same
// threading rules as VgpuIrqFn. A front end with MSI sends one message per
// call, on this vector (or on vector 0 when the guest enabled only one).
typedef void (*VgpuMsgFn)(void *opaque, unsigned vector);
#define VGPU_MSI_VECTORS 2 /* regs::pci::MSI_VECTORS */

// Returns NULL on failure with a message in err (always NUL-terminated when
// err_len > 0) naming the setting at fault.
VgpuBackend *vgpu_backend_create(const VgpuBackendConfig *config, char *err,
                                 size_t err_len);
void vgpu_backend_destroy(VgpuBackend *backend);

// The device is reset (a guest reboot): as a guest's PMC.ENABLE reset,
// every channel, shadow and mapping of the VM goes; VRAM stays.
void vgpu_backend_reset(VgpuBackend *backend);

// A short name of what implements the backend ("model" for
// mode=passthrough, "mediator" for mode=fv). For logs and the counters.
const char *vgpu_backend_kind(const VgpuBackend *backend);

// BAR0: 32-bit registers. Unimplemented offsets read as regs::BAD_REGISTER.
uint32_t vgpu_backend_bar0_read32(VgpuBackend *backend, uint32_t offset);
void vgpu_backend_bar0_write32(VgpuBackend *backend, uint32_t offset, uint32_t value);

// BAR1/BAR3 accesses that trap. A read of an unmapped page gives all ones.
uint32_t vgpu_backend_bar_read32(VgpuBackend *backend, VgpuBar bar, uint64_t offset);
void vgpu_backend_bar_write32(VgpuBackend *backend, VgpuBar bar, uint64_t offset,
                              uint32_t value);
uint64_t vgpu_backend_bar_size(const VgpuBackend *backend, VgpuBar bar);

// Changes whenever a BAR layout may have changed (BAR instance register,
// TLB invalidate, USERD base). Front ends poll it after every BAR0 write.
uint64_t vgpu_backend_bar_generation(VgpuBackend *backend);

// Fills up to max_ranges ranges of the BAR's current layout and returns how
// many the layout has (call again with a larger array if that is more than
// max_ranges). *generation receives the generation the layout belongs to.
// With bar_remap off, the layout is one trapped range over the whole BAR.
size_t vgpu_backend_bar_layout(VgpuBackend *backend, VgpuBar bar, VgpuBarRange *ranges,
                               size_t max_ranges, uint64_t *generation);

// The VRAM memfd (owned by the backend; -1 when the backend has no VRAM
// to share) and its size in bytes.
int vgpu_backend_vram_fd(const VgpuBackend *backend);
uint64_t vgpu_backend_vram_size(const VgpuBackend *backend);

void vgpu_backend_set_irq_handler(VgpuBackend *backend, VgpuIrqFn fn, void *opaque);
void vgpu_backend_set_msg_handler(VgpuBackend *backend, VgpuMsgFn fn, void *opaque);

// System memory (docs/spec/vgpu.md §4.5). The front end says how the
// device reaches guest memory by DMA: fn(opaque, addr, buf, len, op) with
// addr a guest-physical (bus) address; op READ fills buf, WRITE stores
// it, CHECK (buf NULL) only asks whether the whole range is memory. It
// returns 0 on success, non-zero when any byte of the range is not memory
// (QEMU: pci_dma_read/pci_dma_write/dma_memory_valid on the device, so
// the machine's memory map and a vIOMMU apply). Called from backend
// engine threads, with no backend lock held; it may block briefly (QEMU
// takes the BQL for MMIO targets itself). NULL fn: no system memory
// (every sysmem access faults). Set before the guest runs.
typedef enum VgpuDmaOp {
    VGPU_DMA_READ = 0,
    VGPU_DMA_WRITE = 1,
    VGPU_DMA_CHECK = 2
} VgpuDmaOp;
typedef int (*VgpuDmaFn)(void *opaque, uint64_t addr, void *buf, uint64_t len,
                         VgpuDmaOp op);
void vgpu_backend_set_dma(VgpuBackend *backend, VgpuDmaFn fn, void *opaque);

// mode=fv: the VM's RAM as the hypervisor's memory map has it (never as
// the guest says). The mediator confines the guest's sysmem PTEs to these
// guest-physical ranges (4 KiB granular); the rest fault. Replaces the
// previous set. Returns 0, or -1 with a message in err. passthrough: the
// device reaches whatever fn reaches; the call is accepted and unused.
typedef struct VgpuRamRange {
    uint64_t gpa;
    uint64_t size;
} VgpuRamRange;
int vgpu_backend_set_guest_ram(VgpuBackend *backend, const VgpuRamRange *ranges,
                               size_t count, char *err, size_t err_len);

// The device's effective settings, for QEMU's qom-get and its warnings:
// VGPU_OPT_SCHEDULER (with a socket the daemon's policy, NULL when the
// daemon did not say; embedded the one asked for or the default),
// VGPU_OPT_BACKEND ("model" or "cuda"; NULL with a socket: the daemon's)
// and VGPU_OPT_VM_NAME (the VM's name at the daemon; NULL embedded).
// NULL for any other name. Valid as long as the backend.
const char *vgpu_backend_setting(const VgpuBackend *backend, const char *option);

// Running totals of what the front end traces (QEMU's trace events):
// doorbells (GP_PUT writes the mediator took), faults (faults and channel
// errors reported to the VM) and round trips to the daemon (messages that
// waited for its reply). A backend without one reports 0. Cheap; called
// where the backend's accesses are serialised (QEMU: with the BQL).
typedef struct VgpuEventCounts {
    uint64_t doorbells;
    uint64_t faults;
    uint64_t round_trips;
} VgpuEventCounts;
void vgpu_backend_event_counts(VgpuBackend *backend, VgpuEventCounts *counts);

// Counters as one JSON object. The caller frees the string with
// vgpu_backend_free_string. NULL if memory ran out.
char *vgpu_backend_counters_json(VgpuBackend *backend);
void vgpu_backend_free_string(char *s);

// ---- Live migration (docs/migration.md). Each returns 0, or -1 with a
// message in err naming the problem (-1 for vgpu_backend_dirty_log_take).

// Whether this device can migrate: mode=passthrough and a socket cannot
// yet (the message says why; QEMU keeps its migration blocker for them).
int vgpu_backend_migratable(const VgpuBackend *backend, char *err, size_t err_len);

// Quiesce at a fence boundary (no piece of the VM's work on the GPU, its
// physical channels stopped), within timeout_ms of host time; past it the
// device runs on and the message names the channel. The VM must make no
// BAR access until vgpu_backend_thaw (its vCPUs are stopped).
int vgpu_backend_freeze(VgpuBackend *backend, uint32_t timeout_ms, char *err,
                        size_t err_len);
void vgpu_backend_thaw(VgpuBackend *backend);

// Pages of guest VRAM the device wrote (engines, trapped BAR and PRAMIN
// accesses; not the front end's direct BAR mappings, which the
// hypervisor logs). take ORs the pages marked since the last take into
// bitmap (bit i of word i/64 = guest VRAM page i of 4 KiB; words at least
// vram/4 KiB/64), clears them, and returns how many were marked.
#define VGPU_DIRTY_PAGE_BYTES 4096u  // one bit of the bitmap (QEMU's migration granule)
int vgpu_backend_dirty_log_start(VgpuBackend *backend, char *err, size_t err_len);
void vgpu_backend_dirty_log_stop(VgpuBackend *backend);
int64_t vgpu_backend_dirty_log_take(VgpuBackend *backend, uint64_t *bitmap, size_t words);

// A device back end that mirrors VRAM in GPU memory (engine_backend cuda,
// docs/migration.md §8) holds pages valid only there. device_only_bytes
// says how many bytes of guest VRAM (QEMU's save_live_pending counts
// them); write_back downloads up to budget bytes of them into the VRAM
// memfd and marks them in the dirty log (save_live_iterate, before the
// pass's sync), and says what it moved and what is left. The freeze
// downloads the rest. The model's engines: always 0. Through vgpud not
// yet: -1 with the reason (the freeze still downloads the rest there).
int vgpu_backend_device_only_bytes(VgpuBackend *backend, uint64_t *bytes, char *err,
                                   size_t err_len);
int vgpu_backend_write_back(VgpuBackend *backend, uint64_t budget, uint64_t *written,
                            uint64_t *left, char *err, size_t err_len);

// The device state image (opaque, versioned), made while frozen; freed
// with vgpu_backend_free_state. load reads one into a device with no
// bound channel and the same vram, channels, bar-remap, lazy-shadow and
// pv; a refusal names the setting or the part of the image at fault.
int vgpu_backend_save_state(VgpuBackend *backend, uint8_t **data, size_t *len, char *err,
                            size_t err_len);
void vgpu_backend_free_state(uint8_t *data);
int vgpu_backend_load_state(VgpuBackend *backend, const uint8_t *data, size_t len,
                            char *err, size_t err_len);

// The source's migration completed and the destination loaded the state
// (QEMU's return path said so): a daemon's vGPU is freed now (its VRAM as
// the daemon counts it, its channels and shadows), not when this process
// quits; a later thaw finds the device lost. Nothing for an embedded
// device, whose memory goes with the process.
void vgpu_backend_migrated(VgpuBackend *backend);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // VGPU_CAPI_H
