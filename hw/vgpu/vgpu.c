/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * vgpu: a Fermi-class (GF100) GPU for the guest, virtualized GPUvm style.
 * This file is the QEMU front end only: it traps BAR0, maps BAR1/BAR3
 * either straight onto the backend's VRAM or through traps, and delivers
 * the interrupt line. Every register's meaning lives in the backend behind
 * the vgpu C API (vgpu_capi.h): the embedded mediator and software GPU, or
 * the vgpud daemon. System memory: vgpu-dma.c; properties: vgpu-props.c.
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
#include "qemu/timer.h"
#include "migration/blocker.h"
#include "qom/object.h"
#include "sysemu/sysemu.h"
#include "trace.h"
#include "vgpu.h"

/* Layout queries start with this many ranges and grow on demand. */
#define VGPU_LAYOUT_INITIAL_RANGES 64

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
    if (trace_event_get_state_backends(TRACE_VGPU_FAULTS) && s->backend) {
        VgpuEventCounts n;

        vgpu_backend_event_counts(s->backend, &n);
        if (n.faults != s->faults_traced) {
            trace_vgpu_faults(n.faults - s->faults_traced, n.faults);
            s->faults_traced = n.faults;
        }
    }
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

/*
 * What one backend access did, for the trace events that need the
 * backend's counts (doorbells the mediator took, round trips to the
 * daemon): read before and after the access, only while one of those
 * events is on.
 */
typedef struct VgpuAccessTrace {
    bool on;
    int64_t start_ns;
    VgpuEventCounts before;
} VgpuAccessTrace;

static void vgpu_trace_begin(VGPUState *s, VgpuAccessTrace *t)
{
    t->on = trace_event_get_state_backends(TRACE_VGPU_DOORBELL)
            || trace_event_get_state_backends(TRACE_VGPU_DAEMON_ROUND_TRIP);
    if (t->on) {
        vgpu_backend_event_counts(s->backend, &t->before);
        t->start_ns = get_clock();
    }
}

/* bar: 0, 1 or 3; value: what was read or written. */
static void vgpu_trace_end(VGPUState *s, VgpuAccessTrace *t, int bar, uint64_t offset,
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

static uint64_t vgpu_bar0_read(void *opaque, hwaddr addr, unsigned size)
{
    VGPUState *s = opaque;
    VgpuAccessTrace t;
    uint32_t value;

    vgpu_trace_begin(s, &t);
    value = vgpu_backend_bar0_read32(s->backend, (uint32_t)addr);
    vgpu_trace_end(s, &t, 0, addr, value);
    trace_vgpu_bar0_read((uint32_t)addr, value);
    return value;
}

static void vgpu_bar0_write(void *opaque, hwaddr addr, uint64_t value, unsigned size)
{
    VGPUState *s = opaque;
    VgpuAccessTrace t;

    trace_vgpu_bar0_write((uint32_t)addr, (uint32_t)value);
    vgpu_trace_begin(s, &t);
    vgpu_backend_bar0_write32(s->backend, (uint32_t)addr, (uint32_t)value);
    vgpu_trace_end(s, &t, 0, addr, (uint32_t)value);
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
        VgpuAccessTrace t;
        uint32_t w;

        vgpu_trace_begin(b->dev, &t);
        w = vgpu_backend_bar_read32(b->dev->backend, b->which, word);
        vgpu_trace_end(b->dev, &t, b->which, word, w);
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
        VgpuAccessTrace t;

        vgpu_trace_begin(b->dev, &t);
        if (n != 4) { /* partial word: read-modify-write */
            uint32_t old = vgpu_backend_bar_read32(b->dev->backend, b->which, word);

            w = (old & ~(uint32_t)mask) | w;
        }
        trace_vgpu_bar_write(b->which, word, w);
        vgpu_backend_bar_write32(b->dev->backend, b->which, word, w);
        vgpu_trace_end(b->dev, &t, b->which, word, w);
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

/* ---------------------------------------------------------------- realize */

/*
 * What the backend reports for the people who run it: a guest's
 * misbehaviour goes to -d guest_errors, the device's own failures to the
 * error log, both to the vgpu_backend_log trace event. Called from
 * backend threads; all are thread safe. With a socket the mediator runs
 * in vgpud: a guest's misbehaviour goes to the daemon's log ("guest
 * error: NAME: ..."), and only the loss of the daemon comes here.
 */
static void vgpu_log_from_backend(void *opaque, VgpuLogKind kind, const char *line)
{
    VGPUState *s = opaque;
    const char *id = DEVICE(s)->id ? DEVICE(s)->id : TYPE_VGPU;

    trace_vgpu_backend_log(kind == VGPU_LOG_GUEST_ERROR ? "guest error"
                                                        : "internal error",
                           line);
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

static void vgpu_release_bar(VgpuBarState *b)
{
    if (b->windows) {
        vgpu_clear_windows(b);
        vgpu_free_windows(b);
        g_ptr_array_free(b->windows, true);
        b->windows = NULL;
    }
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
    vgpu_release_bar(&s->bar1);
    vgpu_release_bar(&s->bar3);
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

static void vgpu_realize(PCIDevice *pdev, Error **errp)
{
    VGPUState *s = VGPU(pdev);
    VgpuPciIdentity id;
    char err[256] = "";
    Error *local_err = NULL;
    VgpuBackendConfig config;

    /* The backend checks every property against the option table
     * (vgpu/option_table.h) and names the one at fault. */
    vgpu_backend_config_init(&config);
    config.vram_bytes = s->vram;
    config.channels = s->channels;
    config.mode = (VgpuMode)s->mode;
    config.bar_remap = s->bar_remap;
    config.lazy_shadow = s->lazy_shadow;
    config.scheduler = s->scheduler ? s->scheduler : VGPU_OPT_SCHEDULER_DEFAULT;
    config.weight = s->weight;
    config.log = vgpu_log_from_backend;
    config.log_opaque = s;
    config.socket = vgpu_has_socket(s) ? s->socket : NULL;
    config.vm_name = s->vm_name && *s->vm_name ? s->vm_name : NULL;
    config.turn_ms = s->turn_ms;
    config.max_gpu_ms = s->max_gpu_ms;
    config.pv = s->pv;
    config.slice_blocks = s->slice_blocks;
    config.ring_ahead = s->ring_ahead;
    config.watchdog_ms = s->watchdog_ms;
    config.engine_backend
        = s->engine_backend && *s->engine_backend ? s->engine_backend : NULL;
    config.turn = vgpu_turn_from_backend;
    config.turn_opaque = s;
    config.daemon_timeout_ms = s->daemon_timeout_ms;
    s->backend = vgpu_backend_create(&config, err, sizeof(err));
    if (!s->backend) {
        error_setg(errp, "vgpu: %s", err);
        return;
    }
    trace_vgpu_backend_created(vgpu_backend_kind(s->backend),
                               vgpu_backend_setting(s->backend, VGPU_OPT_SCHEDULER)
                                   ?: "unknown");
    vgpu_warn_idle_settings(s);

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
    if (!vgpu_has_socket(s)) {
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
    vgpu_class_add_properties(klass);
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
