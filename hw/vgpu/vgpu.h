/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * vgpu: the device's state, shared by the front end (vgpu.c: BARs,
 * interrupts, DMA, realize) and its properties (vgpu-props.c: the
 * options, their descriptions and effective values, the counters, the
 * warnings for settings that would do nothing).
 */
#ifndef HW_VGPU_VGPU_H
#define HW_VGPU_VGPU_H

#include "exec/memory.h"
#include "hw/pci/pci.h"
#include "qemu/notify.h"
#include "qom/object.h"
#include "sysemu/runstate.h"
#include "vgpu_capi.h"

#define TYPE_VGPU "vgpu"
OBJECT_DECLARE_SIMPLE_TYPE(VGPUState, VGPU)

/* One direct window: BAR pages mapped straight onto VRAM (an alias). */
typedef struct VgpuDirectWindow {
    MemoryRegion alias;
} VgpuDirectWindow;

/* BAR1 or BAR3: a container over a trapping background region, with direct
 * windows laid over it at a higher priority where the backend allows. */
typedef struct VgpuBarState {
    struct VGPUState *dev;
    VgpuBar which;
    MemoryRegion container;
    MemoryRegion trap;
    GPtrArray *windows; /* VgpuDirectWindow *, current direct windows */
} VgpuBarState;

struct VGPUState {
    /* parent */
    PCIDevice parent_obj;

    /* configuration (properties); a string left NULL was not given */
    uint64_t vram;
    uint32_t channels;
    int mode; /* VgpuMode */
    bool bar_remap;
    bool lazy_shadow;
    bool pv;         /* offer the paravirtual page-table interface (fv) */
    char *scheduler; /* a policy name; the backend checks it */
    char *socket;    /* a vgpud socket: the vGPU comes from the daemon */
    char *vm_name;   /* the VM's name at the daemon */
    uint32_t weight;
    uint32_t turn_ms;      /* 0: a turn runs up to GP_PUT */
    uint32_t max_gpu_ms;   /* 0: no limit */
    uint32_t slice_blocks; /* 0: launches whole */
    bool ring_ahead;       /* docs/scheduler.md, "Ringing ahead" */
    uint32_t watchdog_ms;  /* one operation's engine time; 0: none */
    char *engine_backend;  /* "model" (NULL) or "cuda" */
    char *worker_device;   /* backend=cuda: the worker's device, cuda (NULL) or fake */
    char *worker_binary;   /* backend=cuda: the vgpu-worker executable; NULL: found */
    char *counters_file;   /* x-counters-file: counters JSON written at exit */
    /* with socket: the wait for vgpud's first answer */
    uint32_t daemon_timeout_ms;

    /* registers: BAR0 traps every access into the backend */
    MemoryRegion bar0;
    VgpuBarState bar1;
    VgpuBarState bar3;

    /* runtime state */
    VgpuBackend *backend;
    void *vram_ptr; /* the backend's VRAM memfd mapped, or NULL */
    uint64_t vram_map_size;
    /* migratable: a RAMBlock over the memfd (QEMU maps it and migrates it);
     * else a RAM-device region over our own mmap */
    MemoryRegion vram_mr;
    uint64_t layout_generation;
    bool layout_valid;
    bool msi_ok; /* MSI capability present (else INTx only) */
    QEMUBH *irq_bh;
    int irq_level;                            /* written by backend threads, atomically */
    unsigned irq_msgs[VGPU_MSI_VECTORS];      /* messages per vector, atomically */
    unsigned irq_msgs_sent[VGPU_MSI_VECTORS]; /* turned into MSIs (BH only) */
    uint64_t faults_traced;   /* the fault count the last trace saw (BH only) */
    Error *migration_blocker; /* what the backend cannot migrate, or NULL */

    /* live migration (vgpu-migration.c); all with the BQL held */
    bool migratable;        /* no blocker: VRAM is a RAMBlock, the sections exist */
    bool frozen;            /* the backend is frozen (VM stopped, or incoming) */
    bool dirty_logging;     /* the backend's dirty log is on */
    uint64_t *dirty_bitmap; /* one bit per VGPU_DIRTY_PAGE_BYTES of VRAM */
    size_t dirty_words;
    uint64_t dirty_pages_folded; /* pages the device wrote, folded into QEMU's */
    VMChangeStateEntry *vm_state;
    NotifierWithReturn precopy_notifier;
    Notifier migration_state; /* a completed outgoing move frees the daemon's vGPU */
    uint8_t *image;           /* the backend's image while saved or loaded */
    uint32_t image_len;
    /* The image the last save sent, kept until the VM runs again: after a
     * completed move has freed the backend's vGPU (migrated_away) it is
     * the source's state for x-migration-digest. */
    uint8_t *sent_image;
    uint32_t sent_image_len;
    bool migrated_away;
    bool fail_import;  /* x-fail-import: this destination refuses the image (tests) */
    uint32_t msi_owed; /* bit v: a message of vector v not yet sent */
    int32_t saved_irq_level;
    Notifier exit_notifier; /* writes counters_file when QEMU exits */
    bool exit_notifier_added;
};

/* vgpu.c: rebuilds the BAR windows if the backend's layout moved. */
void vgpu_update_layout(VGPUState *s);

/* vgpu-migration.c: at realize, after the backend exists and before VRAM
 * is mapped: a blocker naming why this device cannot migrate, or the
 * migration hooks (s->migratable). release undoes either. */
extern const VMStateDescription vmstate_vgpu;
bool vgpu_migration_setup(VGPUState *s, Error **errp);
void vgpu_migration_release(VGPUState *s);
/* A destination (-incoming) populates its VRAM mapping before the move. */
void vgpu_migration_prefault(VGPUState *s);
/* The read-only x-migration-digest property. */
void vgpu_migration_class_init(ObjectClass *klass);

/* vgpu-dma.c: the backend's DMA callback (opaque: the device), and the
 * guest's RAM reported to the mediator (mode=fv). */
int vgpu_dma(void *opaque, uint64_t addr, void *buf, uint64_t len, VgpuDmaOp op);
bool vgpu_report_guest_ram(VGPUState *s, Error **errp);

/* vgpu-trace.c: the backend's turn callback (opaque: the device). */
void vgpu_turn_from_backend(void *opaque, bool start, VgpuTurnEnd end, uint64_t gpu_ns);
/*
 * What one backend access did, for the trace events that need the
 * backend's counts (doorbells the mediator took, round trips to the
 * daemon): read before and after the access, only while one of those
 * events is on. bar: 0, 1 or 3; value: what was read or written.
 */
typedef struct VgpuAccessTrace {
    bool on;
    int64_t start_ns;
    VgpuEventCounts before;
} VgpuAccessTrace;
void vgpu_trace_begin(VGPUState *s, VgpuAccessTrace *t);
void vgpu_trace_end(VGPUState *s, VgpuAccessTrace *t, int bar, uint64_t offset,
                    uint32_t value);

/* vgpu-props.c */
extern const char *const vgpu_mode_names[];
bool vgpu_has_socket(const VGPUState *s);
/* Adds the properties, their descriptions and shown defaults, and the
 * read-only "counters" to the class. */
void vgpu_class_add_properties(ObjectClass *klass);
/* The backend's configuration from the properties (no callbacks set). */
void vgpu_backend_config_of(VGPUState *s, VgpuBackendConfig *config);
/* x-counters-file: the counters written at QEMU's exit (the notifier) or
 * at unplug. */
void vgpu_write_counters_file(VGPUState *s);
void vgpu_exit_notify(Notifier *n, void *data);
/* After the backend is created: a warning for each setting that does
 * nothing in this configuration (warn_report). */
void vgpu_warn_idle_settings(VGPUState *s);

#endif /* HW_VGPU_VGPU_H */
