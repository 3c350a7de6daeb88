/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * vgpu: live migration of an embedded (mode=fv) vGPU (docs/migration.md
 * §4-§6, step M5).
 *
 * - VRAM is the partition's memfd as an ordinary RAMBlock (vgpu.c,
 *   vgpu_map_vram), so QEMU's RAM migration sends it with pre-copy. Guest
 *   writes through the BAR windows are logged by KVM or TCG; everything
 *   the device writes itself is in the backend's dirty log, folded into
 *   QEMU's bitmap before each sync by a precopy notifier.
 * - The device state is one opaque, versioned image made by the backend,
 *   carried in the "vgpu" VMState section after RAM.
 * - The vGPU is frozen (at a fence boundary, no work of the VM on the GPU)
 *   whenever the VM stops and thawed when it runs; the destination is
 *   frozen before the load, so the imported channels run from resume on.
 * - What the backend cannot move (mode=passthrough, a daemon's vGPU)
 *   keeps a migration blocker that names the reason; what the image
 *   refuses at the stop (say, a launch held between slices) fails the
 *   migration with the backend's message, and the source runs on.
 */

#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qapi/error.h"
#include "exec/memory.h"
#include "hw/pci/pci.h"
#include "migration/blocker.h"
#include "migration/migration.h"
#include "migration/misc.h"
#include "migration/qemu-file-types.h"
#include "migration/register.h"
#include "migration/vmstate.h"
#include "sysemu/runstate.h"
#include "sysemu/tcg.h"
#include "exec/address-spaces.h"
#include "qemu/rcu.h"
#include "trace.h"
#include "vgpu.h"

/* The freeze may take a launch's remaining time, at most max-gpu-ms; this
 * much more covers the drain of the engines. Without max-gpu-ms the wait
 * is bounded by VGPU_FREEZE_UNBOUNDED_MS. */
#define VGPU_FREEZE_SLACK_MS 100
#define VGPU_FREEZE_UNBOUNDED_MS 2000
#define VGPU_LIVE_SECTION "vgpu-live"
#define VGPU_LIVE_VERSION 1
#define VGPU_LIVE_END 0x76677075u /* "vgpu": the live section's only word */

QEMU_BUILD_BUG_ON(sizeof(unsigned long) != sizeof(uint64_t)); /* bitmap layout */

static uint32_t vgpu_freeze_ms(const VGPUState *s)
{
    return s->max_gpu_ms ? s->max_gpu_ms + VGPU_FREEZE_SLACK_MS
                         : VGPU_FREEZE_UNBOUNDED_MS;
}

/* Fails the migration with msg: QEMU's error-desc (query-migrate) names
 * it, and QEMU logs it when the migration fails. */
static void vgpu_migration_fail(const char *msg)
{
    Error *err = NULL;

    error_setg(&err, "%s", msg);
    migrate_set_error(migrate_get_current(), err);
    error_free(err);
}

/* ---------------------------------------------------------------- freeze */

static bool vgpu_freeze(VGPUState *s, char *err, size_t err_len)
{
    int64_t start = get_clock();

    if (s->frozen) {
        return true;
    }
    if (vgpu_backend_freeze(s->backend, vgpu_freeze_ms(s), err, err_len) != 0) {
        trace_vgpu_migration_freeze(false, (get_clock() - start) / 1000);
        return false;
    }
    s->frozen = true;
    trace_vgpu_migration_freeze(true, (get_clock() - start) / 1000);
    return true;
}

/*
 * Every stop freezes (QMP stop, the stop for migration, an error stop),
 * every start thaws: the vCPUs are stopped first and started last, so the
 * VM makes no BAR access while frozen. A handler cannot fail: a freeze
 * that timed out is tried again by pre_save, which can.
 */
static void vgpu_vm_state_change(void *opaque, bool running, RunState state)
{
    VGPUState *s = opaque;
    char err[256] = "";

    if (!running) {
        if (!vgpu_freeze(s, err, sizeof(err))) {
            warn_report("%s", err);
        }
        return;
    }
    if (s->frozen) {
        vgpu_backend_thaw(s->backend);
        s->frozen = false;
    }
    g_clear_pointer(&s->sent_image, g_free);
    s->sent_image_len = 0;
    /* Messages owed from before the move (post_load) go out now. */
    qemu_bh_schedule(s->irq_bh);
}

/* ---------------------------------------------------------------- dirty log */

/* The pages the device wrote since the last take, into QEMU's bitmap. */
static void vgpu_fold_dirty(VGPUState *s)
{
    const uint64_t pages = s->vram_map_size / VGPU_DIRTY_PAGE_BYTES;
    unsigned long *bits = (unsigned long *)s->dirty_bitmap;
    int64_t marked
        = vgpu_backend_dirty_log_take(s->backend, s->dirty_bitmap, s->dirty_words);
    uint64_t p = 0;

    if (marked <= 0) {
        return;
    }
    while ((p = find_next_bit(bits, pages, p)) < pages) {
        uint64_t end = find_next_zero_bit(bits, pages, p);

        memory_region_set_dirty(&s->vram_mr, p * VGPU_DIRTY_PAGE_BYTES,
                                (end - p) * VGPU_DIRTY_PAGE_BYTES);
        p = end;
    }
    memset(s->dirty_bitmap, 0, s->dirty_words * sizeof(uint64_t));
    s->dirty_pages_folded += marked;
    trace_vgpu_migration_dirty(marked);
}

static void vgpu_dirty_log_on(VGPUState *s)
{
    char err[256] = "";

    if (s->dirty_logging) {
        return;
    }
    if (vgpu_backend_dirty_log_start(s->backend, err, sizeof(err)) != 0) {
        warn_report("%s", err); /* save_setup already checked the backend */
        return;
    }
    s->dirty_logging = true;
}

/*
 * TCG: a vCPU's store to a RAM page marks it dirty only while the page's
 * TLB entry is "not dirty"; the first store marks the page and makes the
 * entry a fast one, which marks nothing more. QEMU 7.2's sync of an
 * aligned RAM block clears the migration bits without putting such
 * entries back (only its unaligned path calls tlb_reset_dirty). Measured
 * (docs/migration.md, "TCG"): a guest program that used the vGPU and then
 * rewrote a 1 MiB buffer reached the destination with 252-289 pages a few
 * rewrites old; the same loop in a guest that never opened the device
 * lost nothing in our runs, and we did not find why. So after each sync
 * every RAM page's entries go back to "not dirty"
 * (cpu_physical_memory_test_and_clear_dirty resets them): a fast entry
 * made after that was made by a store that marked its page, so nothing a
 * vCPU writes is missed. The client cleared is CODE: a clean CODE bit only
 * makes the next store look for translated code on the page, which is
 * always safe. Not under KVM, whose log_clear would drop real dirty bits.
 */
static bool vgpu_rearm_range(Int128 start, Int128 len, const MemoryRegion *mr,
                             hwaddr offset_in_region, void *opaque)
{
    MemoryRegion *region = (MemoryRegion *)mr; /* the accessors are not const */

    if (memory_region_is_ram(region) && !memory_region_is_ram_device(region)
        && !memory_region_is_rom(region)) {
        memory_region_reset_dirty(region, offset_in_region, int128_get64(len),
                                  DIRTY_MEMORY_CODE);
    }
    return false;
}

static void vgpu_rearm_tcg(void)
{
    if (!tcg_enabled()) {
        return;
    }
    WITH_RCU_READ_LOCK_GUARD()
    {
        flatview_for_each_range(address_space_to_flatview(&address_space_memory),
                                vgpu_rearm_range, NULL);
    }
}

/*
 * RAM's first sync comes before PRECOPY_NOTIFY_SETUP (its save_setup runs
 * first), so logging starts at the first sync: that pass sends every page
 * anyway, and from then on every write of the device is in the log.
 */
static int vgpu_precopy_notify(NotifierWithReturn *n, void *data)
{
    VGPUState *s = container_of(n, VGPUState, precopy_notifier);
    PrecopyNotifyData *pnd = data;

    switch (pnd->reason) {
    case PRECOPY_NOTIFY_SETUP:
        vgpu_dirty_log_on(s);
        break;
    case PRECOPY_NOTIFY_AFTER_BITMAP_SYNC:
        vgpu_rearm_tcg();
        break;
    case PRECOPY_NOTIFY_BEFORE_BITMAP_SYNC:
        if (s->dirty_logging) {
            vgpu_fold_dirty(s);
        } else {
            vgpu_dirty_log_on(s);
        }
        break;
    case PRECOPY_NOTIFY_CLEANUP:
        if (s->dirty_logging) {
            vgpu_backend_dirty_log_stop(s->backend);
            s->dirty_logging = false;
        }
        break;
    default:
        break;
    }
    return 0;
}

/*
 * The source's move completed. With QEMU's return path (libvirt turns it
 * on; QMP users with migrate-set-capabilities return-path) completion
 * means the destination loaded the state, so what the backend holds for
 * this VM (a daemon's vGPU: VRAM, channels, shadows) is freed now rather
 * than when this QEMU quits. Without it the destination may still refuse
 * the state and this VM be resumed, so nothing is freed.
 */
static void vgpu_migration_state_notify(Notifier *n, void *data)
{
    VGPUState *s = container_of(n, VGPUState, migration_state);
    MigrationState *ms = data;

    if (migration_has_finished(ms) && migrate_use_return_path() && !s->migrated_away) {
        vgpu_backend_migrated(s->backend);
        s->migrated_away = true;
        trace_vgpu_migration_migrated();
    }
}

/* ---------------------------------------------------------------- live section */

/* What QEMU's RAM migration would do wrong with VRAM, refused up front. */
static int vgpu_save_setup(QEMUFile *f, void *opaque)
{
    if (migrate_ignore_shared()) {
        vgpu_migration_fail("vgpu: x-ignore-shared would skip VRAM (a shared memfd); "
                            "turn it off");
        return -EINVAL;
    }
    if (migrate_postcopy_ram()) {
        vgpu_migration_fail("vgpu: postcopy is not supported: engines write VRAM pages "
                            "that cannot be fetched on fault");
        return -EINVAL;
    }
    qemu_put_be32(f, VGPU_LIVE_END);
    return 0;
}

static int vgpu_save_complete(QEMUFile *f, void *opaque)
{
    qemu_put_be32(f, VGPU_LIVE_END); /* VRAM itself is in RAM's section */
    return 0;
}

static int vgpu_live_load(QEMUFile *f, void *opaque, int version_id)
{
    uint32_t word = qemu_get_be32(f);

    if (word != VGPU_LIVE_END) {
        error_report("vgpu: migration stream has 0x%08x where the %s section ends", word,
                     VGPU_LIVE_SECTION);
        return -EINVAL;
    }
    return 0;
}

static const SaveVMHandlers vgpu_live_handlers = {
    .save_setup = vgpu_save_setup,
    .save_live_complete_precopy = vgpu_save_complete,
    .load_state = vgpu_live_load,
};

/* ---------------------------------------------------------------- device section */

static int vgpu_pre_save(void *opaque)
{
    VGPUState *s = opaque;
    char err[256] = "";
    uint8_t *data = NULL;
    size_t len = 0;
    int64_t start = get_clock();

    /* Stopped already; a freeze that timed out at the stop is tried again. */
    if (!vgpu_freeze(s, err, sizeof(err))
        || vgpu_backend_save_state(s->backend, &data, &len, err, sizeof(err)) != 0) {
        vgpu_migration_fail(err);
        return -EINVAL;
    }
    g_free(s->image);
    s->image = g_memdup2(data, len);
    s->image_len = len;
    vgpu_backend_free_state(data);
    s->msi_owed = 0;
    for (unsigned v = 0; v < VGPU_MSI_VECTORS; v++) {
        if (qatomic_read(&s->irq_msgs[v]) != s->irq_msgs_sent[v]) {
            s->msi_owed |= 1u << v;
        }
    }
    s->saved_irq_level = qatomic_read(&s->irq_level);
    trace_vgpu_migration_save(len, (get_clock() - start) / 1000);
    return 0;
}

static int vgpu_post_save(void *opaque)
{
    VGPUState *s = opaque;

    g_free(s->sent_image);
    s->sent_image = g_steal_pointer(&s->image);
    s->sent_image_len = s->image_len;
    s->image_len = 0;
    return 0;
}

/* The destination: frozen before anything is loaded, so that the image's
 * channels stay stopped until the VM runs. */
static int vgpu_pre_load(void *opaque)
{
    VGPUState *s = opaque;
    char err[256] = "";

    if (!vgpu_freeze(s, err, sizeof(err))) {
        error_report("%s", err);
        return -EINVAL;
    }
    return 0;
}

/*
 * x-fail-import=on (tests, docs/migration.md §9): the destination hands the
 * backend the image cut by its last byte, so the backend's own codec
 * refuses it and the load fails through the path a bad image takes (the
 * vGPU reset, QEMU's load failed); the source must run on unchanged.
 */
static uint32_t vgpu_import_len(const VGPUState *s)
{
    uint32_t cut = s->image_len ? s->image_len - 1 : 0;

    if (!s->fail_import) {
        return s->image_len;
    }
    error_report("vgpu: x-fail-import: the image is cut to %u of its %u bytes", cut,
                 s->image_len);
    return cut;
}

static int vgpu_post_load(void *opaque, int version_id)
{
    VGPUState *s = opaque;
    char err[256] = "";
    int64_t start = get_clock();
    int ret = vgpu_backend_load_state(s->backend, s->image, vgpu_import_len(s), err,
                                      sizeof(err));

    trace_vgpu_migration_load(s->image_len, ret == 0, (get_clock() - start) / 1000);
    g_clear_pointer(&s->image, g_free);
    s->image_len = 0;
    if (ret != 0) {
        error_report("%s", err);
        vgpu_backend_reset(s->backend);
        return -EINVAL;
    }
    for (unsigned v = 0; v < VGPU_MSI_VECTORS; v++) {
        qatomic_set(&s->irq_msgs[v], (s->msi_owed >> v) & 1);
        s->irq_msgs_sent[v] = 0;
    }
    qatomic_set(&s->irq_level, s->saved_irq_level);
    s->layout_valid = false; /* BAR windows from the imported instances */
    vgpu_update_layout(s);
    return 0;
}

const VMStateDescription vmstate_vgpu = {
    .name = TYPE_VGPU,
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = vgpu_pre_save,
    .post_save = vgpu_post_save,
    .pre_load = vgpu_pre_load,
    .post_load = vgpu_post_load,
    .fields = (VMStateField[]) { VMSTATE_PCI_DEVICE(parent_obj, VGPUState),
                                 VMSTATE_INT32(saved_irq_level, VGPUState),
                                 VMSTATE_UINT32(msi_owed, VGPUState),
                                 VMSTATE_UINT32(image_len, VGPUState),
                                 VMSTATE_VBUFFER_ALLOC_UINT32(image, VGPUState, 0, NULL,
                                                              image_len),
                                 VMSTATE_END_OF_LIST() },
};

/* ---------------------------------------------------------------- digest */

/*
 * Read-only "x-migration-digest" (docs/migration.md §9): SHA-256 of VRAM
 * and of the backend's image, "vram:<hex> image:<hex>", for comparing a
 * stopped source with a destination started with -S before it runs.
 * Export only reads, so asking changes nothing.
 */
static char *vgpu_get_digest(Object *obj, Error **errp)
{
    VGPUState *s = VGPU(obj);
    char err[256] = "";
    uint8_t *data = NULL;
    size_t len = 0;
    g_autofree char *vram = NULL;
    g_autofree char *image = NULL;

    if (!s->migratable || !s->frozen) {
        error_setg(errp, "vgpu: the digest needs a migratable vGPU and the VM stopped");
        return NULL;
    }
    vram = g_compute_checksum_for_data(G_CHECKSUM_SHA256, s->vram_ptr, s->vram_map_size);
    if (s->migrated_away && s->sent_image) {
        /* The backend's vGPU is gone; this mapping of VRAM and the image
         * sent are what the source was at the stop. */
        image = g_compute_checksum_for_data(G_CHECKSUM_SHA256, s->sent_image,
                                            s->sent_image_len);
        return g_strdup_printf("vram:%s image:%s", vram, image);
    }
    if (vgpu_backend_save_state(s->backend, &data, &len, err, sizeof(err)) != 0) {
        error_setg(errp, "%s", err);
        return NULL;
    }
    image = g_compute_checksum_for_data(G_CHECKSUM_SHA256, data, len);
    vgpu_backend_free_state(data);
    return g_strdup_printf("vram:%s image:%s", vram, image);
}

void vgpu_migration_class_init(ObjectClass *klass)
{
    object_class_property_add_str(klass, "x-migration-digest", vgpu_get_digest, NULL);
    object_class_property_set_description(
        klass, "x-migration-digest",
        "read-only, VM stopped: SHA-256 of VRAM and of the device state image");
}

/* ---------------------------------------------------------------- setup */

bool vgpu_migration_setup(VGPUState *s, Error **errp)
{
    char err[256] = "";

    if (vgpu_backend_migratable(s->backend, err, sizeof(err)) != 0
        || vgpu_backend_vram_fd(s->backend) < 0) {
        if (!*err) {
            snprintf(err, sizeof(err),
                     "vgpu: migration needs the backend's VRAM as a memfd");
        }
        error_setg(&s->migration_blocker, "%s", err);
        if (migrate_add_blocker(s->migration_blocker, errp) < 0) {
            g_clear_pointer(&s->migration_blocker, error_free);
            return false;
        }
        return true;
    }
    s->migratable = true;
    s->dirty_words
        = DIV_ROUND_UP(vgpu_backend_vram_size(s->backend) / VGPU_DIRTY_PAGE_BYTES,
                       BITS_PER_LONG);
    s->dirty_bitmap = g_new0(uint64_t, s->dirty_words);
    s->vm_state = qdev_add_vm_change_state_handler(DEVICE(s), vgpu_vm_state_change, s);
    s->precopy_notifier.notify = vgpu_precopy_notify;
    precopy_add_notifier(&s->precopy_notifier);
    s->migration_state.notify = vgpu_migration_state_notify;
    add_migration_state_change_notifier(&s->migration_state);
    register_savevm_live(VGPU_LIVE_SECTION, VMSTATE_INSTANCE_ID_ANY, VGPU_LIVE_VERSION,
                         &vgpu_live_handlers, s);
    return true;
}

/*
 * A destination's VRAM is a fresh memfd (its own, or its daemon's): every
 * page QEMU's RAM load writes would be a first-touch fault that allocates
 * and zeroes a 4 KiB shmem page, and the pages pending at the stop are
 * loaded while the VM is stopped (~234,000 faults and ~1.1 s of the
 * destination's system time for 1 GiB: docs/migration.md §21). So the
 * destination populates the mapping when it starts, before the move:
 * contents are unchanged (zeros), and the stop only copies. A kernel
 * without MADV_POPULATE_WRITE (5.14) leaves it to the faults.
 */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
void vgpu_migration_prefault(VGPUState *s)
{
    int64_t t0 = qemu_clock_get_us(QEMU_CLOCK_REALTIME);
    int err = 0;

    if (!s->migratable || !s->vram_ptr || !runstate_check(RUN_STATE_INMIGRATE)) {
        return;
    }
    if (madvise(s->vram_ptr, s->vram_map_size, MADV_POPULATE_WRITE) != 0) {
        err = errno;
    }
    trace_vgpu_migration_prefault(s->vram_map_size, err,
                                  qemu_clock_get_us(QEMU_CLOCK_REALTIME) - t0);
}

void vgpu_migration_release(VGPUState *s)
{
    if (s->migratable) {
        unregister_savevm(NULL, VGPU_LIVE_SECTION, s);
        precopy_remove_notifier(&s->precopy_notifier);
        remove_migration_state_change_notifier(&s->migration_state);
        qemu_del_vm_change_state_handler(s->vm_state);
        if (s->dirty_logging) {
            vgpu_backend_dirty_log_stop(s->backend);
            s->dirty_logging = false;
        }
        g_clear_pointer(&s->dirty_bitmap, g_free);
        g_clear_pointer(&s->image, g_free);
        g_clear_pointer(&s->sent_image, g_free);
        s->migratable = false;
    }
    if (s->migration_blocker) {
        migrate_del_blocker(s->migration_blocker);
        g_clear_pointer(&s->migration_blocker, error_free);
    }
}
