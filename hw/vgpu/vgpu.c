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
#include "migration/vmstate.h"
#include "qom/object.h"
#include "sysemu/sysemu.h"
#include "trace.h"
#include "vgpu.h"

/* Layout queries start with this many ranges and grow on demand. */
#define VGPU_LAYOUT_INITIAL_RANGES 64

/*
 * vmstate: vgpu-migration.c. VRAM is a RAMBlock that QEMU migrates; the
 * rest of the device state is the backend's image in the "vgpu" section.
 * A backend that cannot migrate gets a blocker that says why.
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

/*
 * While migration logs VRAM, a window's pages are marked dirty as it goes:
 * the hypervisor's sync of a removed slot is best effort (KVM's PML
 * buffers), so a remap during pre-copy costs a resend, never a lost write.
 */
static void vgpu_clear_windows(VgpuBarState *b)
{
    for (guint i = 0; i < b->windows->len; i++) {
        VgpuDirectWindow *w = g_ptr_array_index(b->windows, i);
        if (b->dev->dirty_logging) {
            memory_region_set_dirty(&b->dev->vram_mr, w->alias.alias_offset,
                                    memory_region_size(&w->alias));
        }
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
void vgpu_update_layout(VGPUState *s)
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

/*
 * A migratable device's VRAM is an ordinary RAMBlock over the backend's
 * memfd (even with bar-remap=off: RAM migration sends it), named
 * <PCI path>/vgpu-vram on both sides. QEMU owns the block's mapping and
 * closes its fd, hence the dup.
 */
static bool vgpu_map_vram_ram(VGPUState *s, int fd, uint64_t size, Error **errp)
{
    Error *local_err = NULL;
    int own = dup(fd);

    if (own < 0) {
        error_setg_errno(errp, errno, "vgpu: cannot duplicate the VRAM memfd");
        return false;
    }
    memory_region_init_ram_from_fd(&s->vram_mr, OBJECT(s), "vgpu-vram", size, RAM_SHARED,
                                   own, 0, &local_err);
    if (local_err) {
        close(own);
        error_propagate_prepend(errp, local_err, "vgpu: VRAM as guest RAM: ");
        return false;
    }
    vmstate_register_ram(&s->vram_mr, DEVICE(s));
    s->vram_ptr = memory_region_get_ram_ptr(&s->vram_mr);
    s->vram_map_size = size;
    vgpu_migration_prefault(s);
    return true;
}

static bool vgpu_map_vram(VGPUState *s, Error **errp)
{
    int fd = vgpu_backend_vram_fd(s->backend);
    uint64_t size = vgpu_backend_vram_size(s->backend);
    void *ptr;

    if (s->migratable) {
        return vgpu_map_vram_ram(s, fd, size, errp);
    }
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
        if (s->migratable) {
            vmstate_unregister_ram(&s->vram_mr, DEVICE(s)); /* QEMU unmaps it */
        } else {
            munmap(s->vram_ptr, s->vram_map_size);
        }
        object_unparent(OBJECT(&s->vram_mr));
        s->vram_ptr = NULL;
    }
    if (s->irq_bh) {
        qemu_bh_delete(s->irq_bh);
        s->irq_bh = NULL;
    }
    vgpu_migration_release(s);
    if (s->backend) {
        vgpu_backend_destroy(s->backend);
        s->backend = NULL;
    }
}

/* The backend, from the properties; it checks each against the option
 * table (vgpu/option_table.h) and names the one at fault. */
static bool vgpu_create_backend(VGPUState *s, Error **errp)
{
    /* Room for backend=cuda's three worker paths tried, each with why. */
    char err[1024] = "";
    VgpuBackendConfig config;

    vgpu_backend_config_of(s, &config);
    config.log = vgpu_log_from_backend;
    config.log_opaque = s;
    config.turn = vgpu_turn_from_backend;
    config.turn_opaque = s;
    s->backend = vgpu_backend_create(&config, err, sizeof(err));
    if (!s->backend) {
        error_setg(errp, "vgpu: %s", err);
        return false;
    }
    trace_vgpu_backend_created(vgpu_backend_kind(s->backend),
                               vgpu_backend_setting(s->backend, VGPU_OPT_SCHEDULER)
                                   ?: "unknown");
    vgpu_warn_idle_settings(s);
    return true;
}

/* BAR0 traps every access; BAR1 and BAR3 are containers over a trapping
 * region, with direct windows onto VRAM laid over it (vgpu_update_layout). */
static void vgpu_register_bars(VGPUState *s, PCIDevice *pdev)
{
    const uint8_t prefetch64 = PCI_BASE_ADDRESS_SPACE_MEMORY
                               | PCI_BASE_ADDRESS_MEM_TYPE_64
                               | PCI_BASE_ADDRESS_MEM_PREFETCH;
    VgpuPciIdentity id;

    vgpu_pci_identity(&id);
    memory_region_init_io(&s->bar0, OBJECT(s), &vgpu_bar0_ops, s, "vgpu-bar0",
                          id.bar0_size);
    pci_register_bar(pdev, id.bar0_index, PCI_BASE_ADDRESS_SPACE_MEMORY, &s->bar0);
    vgpu_init_bar(s, &s->bar1, VGPU_BAR1, vgpu_backend_bar_size(s->backend, VGPU_BAR1),
                  "vgpu-bar1", "vgpu-bar1-trap");
    vgpu_init_bar(s, &s->bar3, VGPU_BAR3, vgpu_backend_bar_size(s->backend, VGPU_BAR3),
                  "vgpu-bar3", "vgpu-bar3-trap");
    pci_register_bar(pdev, id.bar1_index, prefetch64, &s->bar1.container);
    pci_register_bar(pdev, id.bar3_index, prefetch64, &s->bar3.container);
}

/* Interrupts: INTx pin A always; MSI (two vectors: non-stall, error) when
 * the platform has it, with INTx as the fallback when the guest leaves MSI
 * off. */
static void vgpu_init_interrupts(VGPUState *s, PCIDevice *pdev)
{
    Error *local_err = NULL;

    pci_config_set_interrupt_pin(pdev->config, 1);
    s->msi_ok = msi_init(pdev, 0, VGPU_MSI_VECTORS, true, false, &local_err) == 0;
    if (!s->msi_ok) {
        error_free(local_err); /* no MSI on this machine: INTx only */
    }
    s->irq_bh = qemu_bh_new(vgpu_irq_bh, s);
    vgpu_backend_set_irq_handler(s->backend, vgpu_irq_from_backend, s);
    vgpu_backend_set_msg_handler(s->backend, vgpu_msg_from_backend, s);
}

/* System memory: DMA through QEMU's DMA API; in fv mode the mediator
 * learns the guest's RAM from the memory map. Not through vgpud yet. */
static bool vgpu_init_dma(VGPUState *s, Error **errp)
{
    if (vgpu_has_socket(s)) {
        return true;
    }
    vgpu_backend_set_dma(s->backend, vgpu_dma, s);
    return s->mode != VGPU_MODE_FV || vgpu_report_guest_ram(s, errp);
}

static void vgpu_realize(PCIDevice *pdev, Error **errp)
{
    VGPUState *s = VGPU(pdev);

    if (!vgpu_create_backend(s, errp)) {
        return;
    }
    vgpu_register_bars(s, pdev);
    if (!vgpu_migration_setup(s, errp) || !vgpu_map_vram(s, errp)) {
        vgpu_release(s);
        return;
    }
    vgpu_update_layout(s);
    vgpu_init_interrupts(s, pdev);
    if (!vgpu_init_dma(s, errp)) {
        vgpu_release(s);
        return;
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
    dc->vmsd = &vmstate_vgpu;
    set_bit(DEVICE_CATEGORY_DISPLAY, dc->categories);
    vgpu_class_add_properties(klass);
    vgpu_migration_class_init(klass);
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
