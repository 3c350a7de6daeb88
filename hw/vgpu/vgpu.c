/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * vgpu: a Fermi-class (GF100) GPU for the guest, virtualized GPUvm style.
 * This file is the QEMU front end only: it traps BAR0, maps BAR1/BAR3
 * either straight onto the backend's VRAM or through traps, and delivers
 * the interrupt line. Every register's meaning lives in the backend behind
 * the vgpu C API (vgpu_capi.h): the embedded mediator and software GPU.
 *
 * Spec: docs/spec/vgpu.md; user documentation: docs/qemu.md.
 */

#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/pci/msi.h"
#include "hw/pci/pci.h"
#include "exec/address-spaces.h"
#include "exec/memory.h"
#include "qemu/rcu.h"
#include "sysemu/dma.h"
#include "hw/qdev-properties.h"
#include "migration/blocker.h"
#include "qom/object.h"
#include "sysemu/sysemu.h"
#include "trace.h"
#include "vgpu_capi.h"

#define TYPE_VGPU "vgpu"
OBJECT_DECLARE_SIMPLE_TYPE(VGPUState, VGPU)

/* Layout queries start with this many ranges and grow on demand. */
#define VGPU_LAYOUT_INITIAL_RANGES 64

static const char *const vgpu_mode_names[] = { "passthrough", "fv" };

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

    /* configuration (properties) */
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
    char *engine_backend;  /* "model" (NULL) or "cuda" */
    char *counters_file;   /* x-counters-file: counters JSON written at exit */

    /* registers: BAR0 traps every access into the backend */
    MemoryRegion bar0;
    VgpuBarState bar1;
    VgpuBarState bar3;

    /* runtime state */
    VgpuBackend *backend;
    void *vram_ptr; /* mmap of the backend's VRAM memfd, or NULL */
    uint64_t vram_map_size;
    MemoryRegion vram_mr; /* RAM-device region over vram_ptr */
    uint64_t layout_generation;
    bool layout_valid;
    bool msi_ok; /* MSI capability present (else INTx only) */
    QEMUBH *irq_bh;
    int irq_level;                            /* written by backend threads, atomically */
    unsigned irq_msgs[VGPU_MSI_VECTORS];      /* messages per vector, atomically */
    unsigned irq_msgs_sent[VGPU_MSI_VECTORS]; /* turned into MSIs (BH only) */
    Error *migration_blocker;
    Notifier exit_notifier; /* writes counters_file when QEMU exits */
    bool exit_notifier_added;
};

/*
 * vmstate: none. The device state lives in the backend (VRAM, channels,
 * shadow tables) and has no save/restore yet; realize installs a migration
 * blocker that says so instead of pretending with an empty section.
 */

/* ---------------------------------------------------------------- interrupts */

/*
 * The backend reports the line level from its engine threads, and also from
 * inside a register write on the vCPU thread that holds the BQL. Taking the
 * BQL in the callback would deadlock in the second case, so the callback
 * only records the level and schedules a bottom half (qemu_bh_schedule is
 * thread safe); the bottom half runs in the main loop with the BQL held and
 * drives MSI or INTx. Messages (spec §11.6) are counted the same way: with
 * MSI on, the bottom half sends one MSI per vector whose count moved (the
 * guest re-checks everything a vector announces, so several messages that
 * arrive before the bottom half runs can be one MSI).
 */
static void vgpu_irq_from_backend(void *opaque, bool asserted)
{
    VGPUState *s = opaque;

    qatomic_set(&s->irq_level, asserted ? 1 : 0);
    qemu_bh_schedule(s->irq_bh);
}

static void vgpu_msg_from_backend(void *opaque, unsigned vector)
{
    VGPUState *s = opaque;

    if (vector < VGPU_MSI_VECTORS) {
        qatomic_inc(&s->irq_msgs[vector]);
        qemu_bh_schedule(s->irq_bh);
    }
}

static void vgpu_irq_bh(void *opaque)
{
    VGPUState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);
    int level = qatomic_read(&s->irq_level);
    bool msi = s->msi_ok && msi_enabled(pdev);

    trace_vgpu_irq(level, msi);
    if (msi) {
        /* A guest that enabled one vector gets every message on vector 0. */
        unsigned enabled = msi_nr_vectors_allocated(pdev);
        for (unsigned v = 0; v < VGPU_MSI_VECTORS; v++) {
            unsigned msgs = qatomic_read(&s->irq_msgs[v]);
            if (msgs != s->irq_msgs_sent[v]) {
                s->irq_msgs_sent[v] = msgs;
                msi_notify(pdev, v < enabled ? v : 0);
            }
        }
        pci_set_irq(pdev, 0);
    } else {
        pci_set_irq(pdev, level);
    }
}

/* ---------------------------------------------------------------- BAR remap */

static void vgpu_clear_windows(VgpuBarState *b)
{
    for (guint i = 0; i < b->windows->len; i++) {
        VgpuDirectWindow *w = g_ptr_array_index(b->windows, i);
        memory_region_del_subregion(&b->container, &w->alias);
    }
}

static void vgpu_free_windows(VgpuBarState *b)
{
    /* Flat views resolve aliases to vram_mr, so no flat view refers to an
     * alias once it is out of the container and the transaction committed. */
    for (guint i = 0; i < b->windows->len; i++) {
        VgpuDirectWindow *w = g_ptr_array_index(b->windows, i);
        object_unparent(OBJECT(&w->alias));
        g_free(w);
    }
    g_ptr_array_set_size(b->windows, 0);
}

/* Lays the backend's direct ranges over the trapping region of one BAR. */
static void vgpu_map_bar(VGPUState *s, VgpuBarState *b, uint64_t *generation)
{
    size_t cap = VGPU_LAYOUT_INITIAL_RANGES;
    g_autofree VgpuBarRange *ranges = g_new(VgpuBarRange, cap);
    size_t n = vgpu_backend_bar_layout(s->backend, b->which, ranges, cap, generation);
    unsigned direct = 0;

    if (n > cap) {
        cap = n;
        ranges = g_renew(VgpuBarRange, ranges, cap);
        n = MIN(vgpu_backend_bar_layout(s->backend, b->which, ranges, cap, generation),
                cap);
    }
    for (size_t i = 0; i < n; i++) {
        const VgpuBarRange *r = &ranges[i];
        VgpuDirectWindow *w;

        if (r->trapped || !s->vram_ptr || r->vram_offset + r->size > s->vram_map_size) {
            continue; /* the background region traps it */
        }
        w = g_new0(VgpuDirectWindow, 1);
        memory_region_init_alias(&w->alias, OBJECT(s),
                                 b->which == VGPU_BAR1 ? "vgpu-bar1-direct"
                                                       : "vgpu-bar3-direct",
                                 &s->vram_mr, r->vram_offset, r->size);
        memory_region_add_subregion_overlap(&b->container, r->bar_offset, &w->alias, 1);
        g_ptr_array_add(b->windows, w);
        direct++;
    }
    trace_vgpu_remap(b->which, *generation, direct, (unsigned)(n - direct));
}

/* Rebuilds both BARs' direct windows if the backend's layout changed. */
static void vgpu_update_layout(VGPUState *s)
{
    uint64_t gen;

    if (!s->bar_remap || !s->vram_ptr) {
        return; /* everything traps; nothing to lay over */
    }
    gen = vgpu_backend_bar_generation(s->backend);
    if (s->layout_valid && gen == s->layout_generation) {
        return;
    }
    memory_region_transaction_begin();
    vgpu_clear_windows(&s->bar1);
    vgpu_clear_windows(&s->bar3);
    memory_region_transaction_commit();
    vgpu_free_windows(&s->bar1);
    vgpu_free_windows(&s->bar3);

    memory_region_transaction_begin();
    vgpu_map_bar(s, &s->bar1, &gen);
    vgpu_map_bar(s, &s->bar3, &gen);
    memory_region_transaction_commit();
    s->layout_generation = gen;
    s->layout_valid = true;
}

/* ---------------------------------------------------------------- MMIO */

static uint64_t vgpu_bar0_read(void *opaque, hwaddr addr, unsigned size)
{
    VGPUState *s = opaque;
    uint32_t value = vgpu_backend_bar0_read32(s->backend, (uint32_t)addr);

    trace_vgpu_bar0_read((uint32_t)addr, value);
    return value;
}

static void vgpu_bar0_write(void *opaque, hwaddr addr, uint64_t value, unsigned size)
{
    VGPUState *s = opaque;

    trace_vgpu_bar0_write((uint32_t)addr, (uint32_t)value);
    vgpu_backend_bar0_write32(s->backend, (uint32_t)addr, (uint32_t)value);
    /* BAR instance, TLB invalidate and USERD base writes move the layout;
     * the backend bumps the generation, so polling it here is enough. */
    vgpu_update_layout(s);
}

static const MemoryRegionOps vgpu_bar0_ops = {
    .read = vgpu_bar0_read,
    .write = vgpu_bar0_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};

/*
 * BAR1 and BAR3 are memory apertures: the guest touches them with any size
 * and alignment (a memcpy onto a trapped page does, and with bar-remap=off
 * every page traps). The backend works in aligned 32-bit words, so an
 * access is split into the words it touches, and a partial word is read,
 * merged and written back. Little endian: byte i of the value is the byte
 * at addr + i.
 */
static uint64_t vgpu_bar_read(void *opaque, hwaddr addr, unsigned size)
{
    VgpuBarState *b = opaque;
    uint64_t value = 0;

    for (unsigned done = 0; done < size;) {
        hwaddr word = (addr + done) & ~(hwaddr)3;
        unsigned skip = addr + done - word;
        unsigned n = MIN(4 - skip, size - done);
        uint32_t w = vgpu_backend_bar_read32(b->dev->backend, b->which, word);

        trace_vgpu_bar_read(b->which, word, w);
        value |= ((w >> (8 * skip)) & MAKE_64BIT_MASK(0, 8 * n)) << (8 * done);
        done += n;
    }
    return value;
}

static void vgpu_bar_write(void *opaque, hwaddr addr, uint64_t value, unsigned size)
{
    VgpuBarState *b = opaque;

    for (unsigned done = 0; done < size;) {
        hwaddr word = (addr + done) & ~(hwaddr)3;
        unsigned skip = addr + done - word;
        unsigned n = MIN(4 - skip, size - done);
        uint64_t mask = MAKE_64BIT_MASK(8 * skip, 8 * n);
        uint64_t part = ((value >> (8 * done)) << (8 * skip)) & mask;
        uint32_t w = (uint32_t)part;

        if (n != 4) { /* partial word: read-modify-write */
            uint32_t old = vgpu_backend_bar_read32(b->dev->backend, b->which, word);

            w = (old & ~(uint32_t)mask) | w;
        }
        trace_vgpu_bar_write(b->which, word, w);
        vgpu_backend_bar_write32(b->dev->backend, b->which, word, w);
        done += n;
    }
}

static const MemoryRegionOps vgpu_bar_ops = {
    .read = vgpu_bar_read,
    .write = vgpu_bar_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8, .unaligned = true },
    .impl = { .min_access_size = 1, .max_access_size = 8, .unaligned = true },
};

/* ---------------------------------------------------------------- counters at exit */

/*
 * x-counters-file=PATH: when QEMU exits (guest power-off included: QEMU
 * does not unrealize devices then), the backend's counters JSON is written
 * to PATH, one line. For scripts that want the counters of a whole run
 * without a QMP connection (scripts/run-guest).
 */
static void vgpu_write_counters_file(VGPUState *s)
{
    g_autoptr(GError) gerr = NULL;
    char *json;
    g_autofree char *line = NULL;

    if (!s->backend || !s->counters_file || !*s->counters_file) {
        return;
    }
    json = vgpu_backend_counters_json(s->backend);
    if (!json) {
        error_report("vgpu: counters are not available for %s", s->counters_file);
        return;
    }
    line = g_strdup_printf("%s\n", json);
    vgpu_backend_free_string(json);
    if (!g_file_set_contents(s->counters_file, line, -1, &gerr)) {
        error_report("vgpu: cannot write counters to %s: %s", s->counters_file,
                     gerr->message);
    }
}

static void vgpu_exit_notify(Notifier *n, void *data)
{
    VGPUState *s = container_of(n, VGPUState, exit_notifier);

    vgpu_write_counters_file(s);
}

/* ---------------------------------------------------------------- DMA */

/*
 * System memory (docs/spec/vgpu.md 4.5): the device's DMA goes through
 * QEMU's DMA API on this PCI device, so the machine's memory map, bus
 * mastering and a vIOMMU apply. The backend calls this from its engine
 * threads without the BQL; address_space_rw reads the memory map under
 * RCU (and takes the BQL itself for MMIO targets), so each such thread
 * registers with RCU once and unregisters when it exits (a thread-key
 * destructor).
 */
static pthread_key_t vgpu_rcu_key;
static pthread_once_t vgpu_rcu_once = PTHREAD_ONCE_INIT;

static void vgpu_rcu_thread_exit(void *unused)
{
    rcu_unregister_thread();
}

static void vgpu_rcu_key_init(void)
{
    pthread_key_create(&vgpu_rcu_key, vgpu_rcu_thread_exit);
}

static void vgpu_rcu_register_thread(void)
{
    pthread_once(&vgpu_rcu_once, vgpu_rcu_key_init);
    if (!pthread_getspecific(vgpu_rcu_key) && !qemu_mutex_iothread_locked()) {
        rcu_register_thread();
        pthread_setspecific(vgpu_rcu_key, (void *)1);
    }
}

static int vgpu_dma_access(PCIDevice *pdev, uint64_t addr, void *buf, uint64_t len,
                           VgpuDmaOp op)
{
    switch (op) {
    case VGPU_DMA_READ:
        return pci_dma_read(pdev, addr, buf, len) == MEMTX_OK ? 0 : -1;
    case VGPU_DMA_WRITE:
        return pci_dma_write(pdev, addr, buf, len) == MEMTX_OK ? 0 : -1;
    case VGPU_DMA_CHECK:
        return dma_memory_valid(pci_get_address_space(pdev), addr, len,
                                DMA_DIRECTION_TO_DEVICE, MEMTXATTRS_UNSPECIFIED)
                   ? 0
                   : -1;
    }
    return -1;
}

/*
 * DMA comes from the backend's engine threads (without the BQL) and from
 * register accesses on the vCPU thread (BAR1 through a sysmem PTE, with
 * it). Without an IOMMU a DMA is a RAM access (RCU is enough) or fails.
 * Behind a vIOMMU a DMA the guest did not map faults, and the IOMMU then
 * raises its fault interrupt, which needs the BQL (without it TCG aborts):
 * there the engine threads take the BQL around the access. The backend
 * holds none of its own locks while it does DMA. A register access that
 * waits for engine work (the mediator's unbind polls PREEMPT) gives up
 * after a bound (1 s) and logs it, so a DMA waiting for the BQL delays it
 * but cannot deadlock it.
 */
static int vgpu_dma(void *opaque, uint64_t addr, void *buf, uint64_t len, VgpuDmaOp op)
{
    PCIDevice *pdev = PCI_DEVICE(opaque);
    bool take_bql = !qemu_mutex_iothread_locked()
                    && pci_device_iommu_address_space(pdev) != &address_space_memory;
    int ret;

    vgpu_rcu_register_thread();
    if (take_bql) {
        qemu_mutex_lock_iothread();
    }
    ret = vgpu_dma_access(pdev, addr, buf, len, op);
    if (take_bql) {
        qemu_mutex_unlock_iothread();
    }
    return ret;
}

/*
 * mode=fv: the guest's RAM as QEMU's memory map has it (the RAM regions
 * of the system address space), never as the guest says. The mediator
 * confines the guest's sysmem PTEs to these ranges.
 */
typedef struct VgpuRamScan {
    GArray *ranges; /* VgpuRamRange */
} VgpuRamScan;

static bool vgpu_ram_range(Int128 start, Int128 len, const MemoryRegion *mr,
                           hwaddr offset_in_region, void *opaque)
{
    VgpuRamScan *scan = opaque;
    VgpuRamRange r;
    MemoryRegion *region = (MemoryRegion *)mr; /* the accessors are not const */

    if (!memory_region_is_ram(region) || memory_region_is_ram_device(region)
        || memory_region_is_rom(region)) {
        return false;
    }
    r.gpa = ROUND_UP(int128_get64(start), 4 * KiB);
    r.size = QEMU_ALIGN_DOWN(int128_get64(start) + int128_get64(len), 4 * KiB);
    if (r.size <= r.gpa) {
        return false;
    }
    r.size -= r.gpa;
    g_array_append_val(scan->ranges, r);
    return false;
}

static bool vgpu_report_guest_ram(VGPUState *s, Error **errp)
{
    VgpuRamScan scan = { g_array_new(false, false, sizeof(VgpuRamRange)) };
    char err[256] = "";
    int ret;

    WITH_RCU_READ_LOCK_GUARD()
    {
        flatview_for_each_range(address_space_to_flatview(&address_space_memory),
                                vgpu_ram_range, &scan);
    }
    ret = vgpu_backend_set_guest_ram(s->backend, (const VgpuRamRange *)scan.ranges->data,
                                     scan.ranges->len, err, sizeof(err));
    trace_vgpu_guest_ram(scan.ranges->len);
    g_array_free(scan.ranges, true);
    if (ret != 0) {
        error_setg(errp, "vgpu: %s", err);
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------- realize */

/*
 * What the backend reports for the people who run it: a guest's
 * misbehaviour goes to -d guest_errors, the device's own failures to the
 * error log. Called from backend threads; both are thread safe.
 */
static void vgpu_log_from_backend(void *opaque, VgpuLogKind kind, const char *line)
{
    VGPUState *s = opaque;
    const char *id = DEVICE(s)->id ? DEVICE(s)->id : TYPE_VGPU;

    if (kind == VGPU_LOG_GUEST_ERROR) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: %s\n", id, line);
    } else {
        error_report("%s: internal error: %s", id, line);
    }
}

static void vgpu_init_bar(VGPUState *s, VgpuBarState *b, VgpuBar which, uint64_t size,
                          const char *name, const char *trap_name)
{
    b->dev = s;
    b->which = which;
    b->windows = g_ptr_array_new();
    memory_region_init(&b->container, OBJECT(s), name, size);
    memory_region_init_io(&b->trap, OBJECT(s), &vgpu_bar_ops, b, trap_name, size);
    memory_region_add_subregion_overlap(&b->container, 0, &b->trap, 0);
}

static bool vgpu_map_vram(VGPUState *s, Error **errp)
{
    int fd = vgpu_backend_vram_fd(s->backend);
    uint64_t size = vgpu_backend_vram_size(s->backend);
    void *ptr;

    if (!s->bar_remap || fd < 0) {
        return true; /* nothing to map directly: every BAR access traps */
    }
    ptr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ptr == MAP_FAILED) {
        error_setg_errno(errp, errno, "vgpu: cannot map %" PRIu64 " bytes of VRAM", size);
        return false;
    }
    s->vram_ptr = ptr;
    s->vram_map_size = size;
    memory_region_init_ram_device_ptr(&s->vram_mr, OBJECT(s), "vgpu-vram", size, ptr);
    return true;
}

static void vgpu_release(VGPUState *s)
{
    if (s->exit_notifier_added) {
        qemu_remove_exit_notifier(&s->exit_notifier);
        s->exit_notifier_added = false;
    }
    if (s->backend) {
        vgpu_backend_set_irq_handler(s->backend, NULL, NULL);
        vgpu_backend_set_msg_handler(s->backend, NULL, NULL);
        vgpu_backend_set_dma(s->backend, NULL, NULL);
    }
    if (s->bar1.windows) {
        vgpu_clear_windows(&s->bar1);
        vgpu_free_windows(&s->bar1);
        g_ptr_array_free(s->bar1.windows, true);
        s->bar1.windows = NULL;
    }
    if (s->bar3.windows) {
        vgpu_clear_windows(&s->bar3);
        vgpu_free_windows(&s->bar3);
        g_ptr_array_free(s->bar3.windows, true);
        s->bar3.windows = NULL;
    }
    if (s->vram_ptr) {
        object_unparent(OBJECT(&s->vram_mr));
        munmap(s->vram_ptr, s->vram_map_size);
        s->vram_ptr = NULL;
    }
    if (s->irq_bh) {
        qemu_bh_delete(s->irq_bh);
        s->irq_bh = NULL;
    }
    if (s->backend) {
        vgpu_backend_destroy(s->backend);
        s->backend = NULL;
    }
    if (s->migration_blocker) {
        migrate_del_blocker(s->migration_blocker);
        error_free(s->migration_blocker);
        s->migration_blocker = NULL;
    }
}

/*
 * turn-ms and max-gpu-ms: 0 on the command line switches the bound off,
 * which the C API spells VGPU_OPT_TIME_OFF (its 0 is the default). The
 * default value passes as the C API's default, so that with a socket
 * (time isolation is the daemon's) only a value set otherwise is refused.
 */
static uint32_t vgpu_time_option(uint32_t value, uint32_t dflt)
{
    if (value == dflt) {
        return 0;
    }
    return value == 0 ? VGPU_OPT_TIME_OFF : value;
}

static void vgpu_realize(PCIDevice *pdev, Error **errp)
{
    VGPUState *s = VGPU(pdev);
    VgpuPciIdentity id;
    char err[256] = "";
    Error *local_err = NULL;
    VgpuBackendConfig config;

    /* The backend checks every property and names the one at fault. */
    config = (VgpuBackendConfig) {
        .vram_bytes = s->vram,
        .channels = s->channels,
        .mode = (VgpuMode)s->mode,
        .bar_remap = s->bar_remap,
        .lazy_shadow = s->lazy_shadow,
        .scheduler = s->scheduler ? s->scheduler : VGPU_OPT_SCHEDULER_DEFAULT,
        .weight = s->weight,
        .log = vgpu_log_from_backend,
        .log_opaque = s,
        .socket = s->socket && *s->socket ? s->socket : NULL,
        .vm_name = s->vm_name && *s->vm_name ? s->vm_name : NULL,
        .turn_ms = vgpu_time_option(s->turn_ms, VGPU_OPT_TURN_MS_DEFAULT),
        .max_gpu_ms = vgpu_time_option(s->max_gpu_ms, VGPU_OPT_MAX_GPU_MS_DEFAULT),
        .pv = s->pv,
        .slice_blocks = vgpu_time_option(s->slice_blocks, VGPU_OPT_SLICE_BLOCKS_DEFAULT),
        .no_ring_ahead = !s->ring_ahead,
        .engine_backend
        = s->engine_backend && *s->engine_backend ? s->engine_backend : NULL,
    };
    s->backend = vgpu_backend_create(&config, err, sizeof(err));
    if (!s->backend) {
        error_setg(errp, "vgpu: %s", err);
        return;
    }

    error_setg(&s->migration_blocker,
               "vgpu: device state save/restore is not implemented, so a VM with "
               "a vgpu device cannot be migrated or snapshotted");
    if (migrate_add_blocker(s->migration_blocker, errp) < 0) {
        error_free(s->migration_blocker);
        s->migration_blocker = NULL;
        vgpu_release(s);
        return;
    }

    vgpu_pci_identity(&id);
    memory_region_init_io(&s->bar0, OBJECT(s), &vgpu_bar0_ops, s, "vgpu-bar0",
                          id.bar0_size);
    pci_register_bar(pdev, id.bar0_index, PCI_BASE_ADDRESS_SPACE_MEMORY, &s->bar0);
    vgpu_init_bar(s, &s->bar1, VGPU_BAR1, vgpu_backend_bar_size(s->backend, VGPU_BAR1),
                  "vgpu-bar1", "vgpu-bar1-trap");
    vgpu_init_bar(s, &s->bar3, VGPU_BAR3, vgpu_backend_bar_size(s->backend, VGPU_BAR3),
                  "vgpu-bar3", "vgpu-bar3-trap");
    pci_register_bar(pdev, id.bar1_index,
                     PCI_BASE_ADDRESS_SPACE_MEMORY | PCI_BASE_ADDRESS_MEM_TYPE_64
                         | PCI_BASE_ADDRESS_MEM_PREFETCH,
                     &s->bar1.container);
    pci_register_bar(pdev, id.bar3_index,
                     PCI_BASE_ADDRESS_SPACE_MEMORY | PCI_BASE_ADDRESS_MEM_TYPE_64
                         | PCI_BASE_ADDRESS_MEM_PREFETCH,
                     &s->bar3.container);
    if (!vgpu_map_vram(s, errp)) {
        vgpu_release(s);
        return;
    }
    vgpu_update_layout(s);

    /* Interrupts: INTx pin A always; MSI (two vectors: non-stall, error)
     * when the platform has it, with INTx as the fallback when the guest
     * leaves MSI off. */
    pci_config_set_interrupt_pin(pdev->config, 1);
    s->msi_ok = msi_init(pdev, 0, VGPU_MSI_VECTORS, true, false, &local_err) == 0;
    if (!s->msi_ok) {
        error_free(local_err); /* no MSI on this machine: INTx only */
    }
    s->irq_bh = qemu_bh_new(vgpu_irq_bh, s);
    vgpu_backend_set_irq_handler(s->backend, vgpu_irq_from_backend, s);
    vgpu_backend_set_msg_handler(s->backend, vgpu_msg_from_backend, s);

    /* System memory: DMA through QEMU's DMA API; in fv mode the mediator
     * learns the guest's RAM from the memory map. Not through vgpud yet. */
    if (!(s->socket && *s->socket)) {
        vgpu_backend_set_dma(s->backend, vgpu_dma, s);
        if (s->mode == VGPU_MODE_FV && !vgpu_report_guest_ram(s, errp)) {
            vgpu_release(s);
            return;
        }
    }

    if (s->counters_file && *s->counters_file) {
        s->exit_notifier.notify = vgpu_exit_notify;
        qemu_add_exit_notifier(&s->exit_notifier);
        s->exit_notifier_added = true;
    }
    trace_vgpu_realize(vgpu_backend_kind(s->backend), s->vram, s->channels,
                       vgpu_mode_names[s->mode], s->bar_remap, s->msi_ok);
}

static void vgpu_exit(PCIDevice *pdev)
{
    VGPUState *s = VGPU(pdev);

    vgpu_write_counters_file(s); /* unplugged before QEMU exits */
    vgpu_release(s);
    msi_uninit(pdev);
}

/* ---------------------------------------------------------------- properties */

/* Enumerated string properties without a QAPI schema: the value is an index
 * into the lookup table; a name outside the table is refused by name. */
static void vgpu_get_enum(Object *obj, Visitor *v, const char *name, void *opaque,
                          Error **errp)
{
    Property *prop = opaque;
    int *ptr = object_field_prop_ptr(obj, prop);

    visit_type_enum(v, name, ptr, prop->info->enum_table, errp);
}

static void vgpu_set_enum(Object *obj, Visitor *v, const char *name, void *opaque,
                          Error **errp)
{
    Property *prop = opaque;
    int *ptr = object_field_prop_ptr(obj, prop);

    visit_type_enum(v, name, ptr, prop->info->enum_table, errp);
}

static void vgpu_set_default_enum(ObjectProperty *op, const Property *prop)
{
    object_property_set_default_str(op, qapi_enum_lookup(prop->info->enum_table,
                                                         prop->defval.i));
}

static const QEnumLookup vgpu_mode_lookup = {
    .array = vgpu_mode_names,
    .size = ARRAY_SIZE(vgpu_mode_names),
};

static const PropertyInfo vgpu_prop_mode = {
    .name = "VgpuMode",
    .description = "passthrough/fv",
    .enum_table = &vgpu_mode_lookup,
    .get = vgpu_get_enum,
    .set = vgpu_set_enum,
    .set_default_value = vgpu_set_default_enum,
};

/* Names, defaults and bounds: vgpu/options.h, the one definition. */
static Property vgpu_properties[] = {
    DEFINE_PROP_SIZE(VGPU_OPT_VRAM, VGPUState, vram, VGPU_OPT_VRAM_DEFAULT_MIB *MiB),
    DEFINE_PROP_UINT32(VGPU_OPT_CHANNELS, VGPUState, channels, VGPU_OPT_CHANNELS_DEFAULT),
    DEFINE_PROP_SIGNED("mode", VGPUState, mode, VGPU_MODE_PASSTHROUGH, vgpu_prop_mode,
                       int),
    DEFINE_PROP_BOOL(VGPU_OPT_BAR_REMAP, VGPUState, bar_remap,
                     VGPU_OPT_BAR_REMAP_DEFAULT),
    DEFINE_PROP_BOOL(VGPU_OPT_LAZY_SHADOW, VGPUState, lazy_shadow,
                     VGPU_OPT_LAZY_SHADOW_DEFAULT),
    DEFINE_PROP_BOOL(VGPU_OPT_PV, VGPUState, pv, VGPU_OPT_PV_DEFAULT),
    /* Default VGPU_OPT_SCHEDULER_DEFAULT (a string property has none). */
    DEFINE_PROP_STRING(VGPU_OPT_SCHEDULER, VGPUState, scheduler),
    DEFINE_PROP_UINT32(VGPU_OPT_WEIGHT, VGPUState, weight, VGPU_OPT_WEIGHT_DEFAULT),
    DEFINE_PROP_STRING("x-counters-file", VGPUState, counters_file),
    DEFINE_PROP_STRING(VGPU_OPT_SOCKET, VGPUState, socket),
    DEFINE_PROP_STRING(VGPU_OPT_VM_NAME, VGPUState, vm_name),
    DEFINE_PROP_UINT32(VGPU_OPT_TURN_MS, VGPUState, turn_ms, VGPU_OPT_TURN_MS_DEFAULT),
    DEFINE_PROP_UINT32(VGPU_OPT_MAX_GPU_MS, VGPUState, max_gpu_ms,
                       VGPU_OPT_MAX_GPU_MS_DEFAULT),
    DEFINE_PROP_UINT32(VGPU_OPT_SLICE_BLOCKS, VGPUState, slice_blocks,
                       VGPU_OPT_SLICE_BLOCKS_DEFAULT),
    DEFINE_PROP_BOOL(VGPU_OPT_RING_AHEAD, VGPUState, ring_ahead,
                     VGPU_OPT_RING_AHEAD_DEFAULT),
    /* Default VGPU_OPT_BACKEND_DEFAULT (a string property has none). */
    DEFINE_PROP_STRING(VGPU_OPT_BACKEND, VGPUState, engine_backend),
    DEFINE_PROP_END_OF_LIST(),
};

/* Read-only QOM property "counters": the backend's counters as JSON. */
static char *vgpu_get_counters(Object *obj, Error **errp)
{
    VGPUState *s = VGPU(obj);
    char *json;
    char *copy;

    if (!s->backend) {
        return g_strdup("{}");
    }
    json = vgpu_backend_counters_json(s->backend);
    if (!json) {
        error_setg(errp, "vgpu: counters are not available");
        return NULL;
    }
    copy = g_strdup(json);
    vgpu_backend_free_string(json);
    return copy;
}

/* ---------------------------------------------------------------- reset */

/* A system reset (a guest reboot) resets the vGPU as a PMC reset does. */
static void vgpu_reset(DeviceState *dev)
{
    VGPUState *s = VGPU(dev);

    if (s->backend) {
        vgpu_backend_reset(s->backend);
        vgpu_update_layout(s);
    }
}

/* ---------------------------------------------------------------- class */

static void vgpu_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);
    VgpuPciIdentity id;

    vgpu_pci_identity(&id);
    k->realize = vgpu_realize;
    k->exit = vgpu_exit;
    k->vendor_id = id.vendor_id;
    k->device_id = id.device_id;
    k->revision = id.revision;
    k->class_id = id.class_id;
    dc->desc = "vgpu Fermi-class GPU (GPUvm-style full virtualization)";
    dc->reset = vgpu_reset;
    set_bit(DEVICE_CATEGORY_DISPLAY, dc->categories);
    device_class_set_props(dc, vgpu_properties);
    object_class_property_add_str(klass, "counters", vgpu_get_counters, NULL);
}

static const TypeInfo vgpu_info = {
    .name = TYPE_VGPU,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(VGPUState),
    .class_init = vgpu_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void vgpu_register_types(void)
{
    type_register_static(&vgpu_info);
}

type_init(vgpu_register_types)
