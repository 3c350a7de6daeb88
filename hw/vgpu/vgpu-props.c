/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * vgpu: the device's properties. Names, defaults and bounds come from
 * the option table (vgpu/options.h, vgpu/option_table.h: the one
 * definition, shared with vgpud, the C API and the benches); the backend
 * checks the values at realize against it and names the one at fault.
 * Here: each one's description from the table (-device vgpu,help), the effective values
 * qom-get reads (the daemon's scheduler with a socket), the read-only "counters" as a QMP
 * object, and a warning for each setting that would do nothing. See docs/qemu.md.
 */

#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "qapi/qmp/qdict.h"
#include "qapi/qmp/qjson.h"
#include "qapi/visitor.h"
#include "hw/qdev-properties.h"
#include "sysemu/runstate.h"
#include "vgpu.h"
#include "vgpu/option_table.h"

const char *const vgpu_mode_names[] = { "passthrough", "fv" };

bool vgpu_has_socket(const VGPUState *s)
{
    return s->socket && *s->socket;
}

void vgpu_backend_config_of(VGPUState *s, VgpuBackendConfig *config)
{
    vgpu_backend_config_init(config);
    config->vram_bytes = s->vram;
    config->channels = s->channels;
    config->mode = (VgpuMode)s->mode;
    config->bar_remap = s->bar_remap;
    config->lazy_shadow = s->lazy_shadow;
    config->scheduler = s->scheduler ? s->scheduler : VGPU_OPT_SCHEDULER_DEFAULT;
    config->weight = s->weight;
    config->socket = vgpu_has_socket(s) ? s->socket : NULL;
    config->vm_name = s->vm_name && *s->vm_name ? s->vm_name : NULL;
    /* -incoming: a migration's destination, which may share vm-name with
     * its source on one daemon (docs/migration.md §7). */
    config->incoming = runstate_check(RUN_STATE_INMIGRATE);
    config->turn_ms = s->turn_ms;
    config->max_gpu_ms = s->max_gpu_ms;
    config->pv = s->pv;
    config->slice_blocks = s->slice_blocks;
    config->ring_ahead = s->ring_ahead;
    config->watchdog_ms = s->watchdog_ms;
    config->engine_backend
        = s->engine_backend && *s->engine_backend ? s->engine_backend : NULL;
    config->daemon_timeout_ms = s->daemon_timeout_ms;
    config->worker_device = s->worker_device && *s->worker_device
                                ? s->worker_device
                                : VGPU_OPT_WORKER_DEVICE_DEFAULT;
    config->worker_binary
        = s->worker_binary && *s->worker_binary ? s->worker_binary : NULL;
}

/* ---------------------------------------------------------------- mode */

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
    .size = 2,
};

static const PropertyInfo vgpu_prop_mode = {
    .name = "VgpuMode",
    .description = "passthrough/fv",
    .enum_table = &vgpu_mode_lookup,
    .get = vgpu_get_enum,
    .set = vgpu_set_enum,
    .set_default_value = vgpu_set_default_enum,
};

/* ---------------------------------------------------------------- strings */

/*
 * Strings whose reading is the effective value: NULL in the field means
 * "not given" (so that, with a socket, a scheduler that was not asked for
 * is the daemon's without a warning); qom-get reads what the device uses:
 * after realize the backend's answer (vgpu_backend_setting: the daemon's
 * scheduler, the name at the daemon), before it the value given or the
 * default.
 */
static const char *vgpu_str_default(const char *name)
{
    if (!strcmp(name, VGPU_OPT_SCHEDULER)) {
        return VGPU_OPT_SCHEDULER_DEFAULT;
    }
    if (!strcmp(name, VGPU_OPT_BACKEND)) {
        return VGPU_OPT_BACKEND_DEFAULT;
    }
    if (!strcmp(name, VGPU_OPT_WORKER_DEVICE)) {
        return VGPU_OPT_WORKER_DEVICE_DEFAULT;
    }
    return NULL;
}

static void vgpu_get_str(Object *obj, Visitor *v, const char *name, void *opaque,
                         Error **errp)
{
    VGPUState *s = VGPU(obj);
    Property *prop = opaque;
    char **ptr = object_field_prop_ptr(obj, prop);
    const char *value = NULL;
    g_autofree char *copy = NULL;

    if (s->backend) {
        value = vgpu_backend_setting(s->backend, name);
        if (!value && vgpu_has_socket(s) && !strcmp(name, VGPU_OPT_BACKEND)) {
            value = "vgpud"; /* the daemon's engines (vgpud --backend) */
        }
    }
    if (!value) {
        value = *ptr ? *ptr : vgpu_str_default(name);
    }
    copy = g_strdup(value ? value : "");
    visit_type_str(v, name, &copy, errp);
}

static void vgpu_set_str(Object *obj, Visitor *v, const char *name, void *opaque,
                         Error **errp)
{
    Property *prop = opaque;
    char **ptr = object_field_prop_ptr(obj, prop);
    char *str;

    if (!visit_type_str(v, name, &str, errp)) {
        return;
    }
    g_free(*ptr);
    *ptr = str;
}

static void vgpu_release_str(Object *obj, const char *name, void *opaque)
{
    Property *prop = opaque;

    g_free(*(char **)object_field_prop_ptr(obj, prop));
}

static const PropertyInfo vgpu_prop_str = {
    .name = "str",
    .get = vgpu_get_str,
    .set = vgpu_set_str,
    .release = vgpu_release_str,
};

#define VGPU_PROP_STR(_n, _f) DEFINE_PROP(_n, VGPUState, _f, vgpu_prop_str, char *)

/* ---------------------------------------------------------------- the list */

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
    VGPU_PROP_STR(VGPU_OPT_SCHEDULER, scheduler),
    DEFINE_PROP_UINT32(VGPU_OPT_WEIGHT, VGPUState, weight, VGPU_OPT_WEIGHT_DEFAULT),
    DEFINE_PROP_STRING("x-counters-file", VGPUState, counters_file),
    DEFINE_PROP_BOOL("x-fail-import", VGPUState, fail_import, false),
    DEFINE_PROP_STRING(VGPU_OPT_SOCKET, VGPUState, socket),
    VGPU_PROP_STR(VGPU_OPT_VM_NAME, vm_name),
    DEFINE_PROP_UINT32(VGPU_OPT_TURN_MS, VGPUState, turn_ms, VGPU_OPT_TURN_MS_DEFAULT),
    DEFINE_PROP_UINT32(VGPU_OPT_MAX_GPU_MS, VGPUState, max_gpu_ms,
                       VGPU_OPT_MAX_GPU_MS_DEFAULT),
    DEFINE_PROP_UINT32(VGPU_OPT_SLICE_BLOCKS, VGPUState, slice_blocks,
                       VGPU_OPT_SLICE_BLOCKS_DEFAULT),
    DEFINE_PROP_BOOL(VGPU_OPT_RING_AHEAD, VGPUState, ring_ahead,
                     VGPU_OPT_RING_AHEAD_DEFAULT),
    DEFINE_PROP_UINT32(VGPU_OPT_WATCHDOG_MS, VGPUState, watchdog_ms,
                       VGPU_OPT_WATCHDOG_MS_DEFAULT),
    VGPU_PROP_STR(VGPU_OPT_BACKEND, engine_backend),
    VGPU_PROP_STR(VGPU_OPT_WORKER_DEVICE, worker_device),
    DEFINE_PROP_STRING(VGPU_OPT_WORKER_BINARY, VGPUState, worker_binary),
    DEFINE_PROP_UINT32(VGPU_OPT_DAEMON_TIMEOUT_MS, VGPUState, daemon_timeout_ms,
                       VGPU_OPT_DAEMON_TIMEOUT_MS_DEFAULT),
    DEFINE_PROP_END_OF_LIST(),
};

/* -device vgpu,help: each option's line is the option table's
 * (vgpu/option_table.h, the same text as vgpud --help), after where the
 * device uses it; QEMU adds the type and default. The properties that are
 * QEMU's alone: */
static const struct {
    const char *name;
    const char *description;
} vgpu_qemu_descriptions[] = {
    { "x-counters-file",
      "when QEMU exits, write the counters (JSON, one line) to this file" },
    { "counters", "read-only: the backend's counters, a JSON object" },
    { "x-fail-import", "tests: as a migration destination, refuse the source's device "
                       "state (the load fails, the source runs on)" },
};

static void vgpu_describe_from_table(ObjectClass *klass)
{
    for (size_t i = 0; i < vgpu_option_row_count; i++) {
        const VgpuOption *o = &vgpu_option_rows[i];
        g_autofree char *line = NULL;

        if (!object_class_property_find(klass, o->name)) {
            continue; /* a row QEMU's device does not have */
        }
        line = o->device ? g_strdup_printf("%s: %s", o->device, vgpu_option_help(o))
                         : g_strdup(vgpu_option_help(o));
        object_class_property_set_description(klass, o->name, line);
    }
    for (size_t i = 0; i < ARRAY_SIZE(vgpu_qemu_descriptions); i++) {
        object_class_property_set_description(klass, vgpu_qemu_descriptions[i].name,
                                              vgpu_qemu_descriptions[i].description);
    }
}

/* ---------------------------------------------------------------- counters */

/* Read-only QOM property "counters": the backend's counters as an object
 * (qom-get returns it as JSON, not a string). */
static void vgpu_get_counters(Object *obj, Visitor *v, const char *name, void *opaque,
                              Error **errp)
{
    VGPUState *s = VGPU(obj);
    QObject *counters;
    char *json;

    if (!s->backend) {
        counters = QOBJECT(qdict_new());
    } else {
        json = vgpu_backend_counters_json(s->backend);
        if (!json) {
            error_setg(errp, "vgpu: counters are not available (out of memory)");
            return;
        }
        counters = qobject_from_json(json, errp);
        vgpu_backend_free_string(json);
        if (!counters) {
            return;
        }
    }
    visit_type_any(v, name, &counters, errp);
    qobject_unref(counters);
}

/* ---------------------------------------------------------------- counters at exit */

/*
 * x-counters-file=PATH: when QEMU exits (guest power-off included: QEMU
 * does not unrealize devices then), the backend's counters JSON is written
 * to PATH, one line. For scripts that want the counters of a whole run
 * without a QMP connection (scripts/run-guest).
 */
void vgpu_write_counters_file(VGPUState *s)
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

void vgpu_exit_notify(Notifier *n, void *data)
{
    VGPUState *s = container_of(n, VGPUState, exit_notifier);

    vgpu_write_counters_file(s);
}

/* ---------------------------------------------------------------- the class */

/* A string's default for help and device-list-properties: shown, not
 * stored (the field stays NULL, "not given"; vgpu_get_str reads it). */
static void vgpu_show_default_str(ObjectClass *klass, const char *name, const char *value)
{
    ObjectProperty *op = object_class_property_find(klass, name);

    object_property_set_default_str(op, value);
    op->init = NULL;
}

void vgpu_class_add_properties(ObjectClass *klass)
{
    device_class_set_props(DEVICE_CLASS(klass), vgpu_properties);
    object_class_property_add(klass, "counters", "any", vgpu_get_counters, NULL, NULL,
                              NULL);
    vgpu_show_default_str(klass, VGPU_OPT_SCHEDULER, VGPU_OPT_SCHEDULER_DEFAULT);
    vgpu_show_default_str(klass, VGPU_OPT_BACKEND, VGPU_OPT_BACKEND_DEFAULT);
    vgpu_show_default_str(klass, VGPU_OPT_WORKER_DEVICE, VGPU_OPT_WORKER_DEVICE_DEFAULT);
    vgpu_describe_from_table(klass);
}

/* ---------------------------------------------------------------- warnings */

/*
 * Settings that are valid but would do nothing here: warned, not refused
 * (the VM runs as it would without them). The settings of the embedded
 * mediator's time isolation are refused with a socket by the backend
 * instead: there the daemon's values differ from what the VM asked.
 */
void vgpu_warn_idle_settings(VGPUState *s)
{
    const char *id = DEVICE(s)->id ? DEVICE(s)->id : TYPE_VGPU;
    const char *daemons;

    if (!vgpu_has_socket(s)) {
        if (s->vm_name) {
            warn_report(
                "%s: vm-name=%s does nothing without socket: it names the VM at a "
                "vgpud daemon",
                id, s->vm_name);
        }
        if (s->weight != VGPU_OPT_WEIGHT_DEFAULT) {
            warn_report(
                "%s: weight=%u does nothing without socket: an embedded GPU serves "
                "this VM alone",
                id, s->weight);
        }
        if (s->daemon_timeout_ms != VGPU_OPT_DAEMON_TIMEOUT_MS_DEFAULT) {
            warn_report("%s: daemon-timeout-ms=%u does nothing without socket: it "
                        "bounds the wait for a vgpud daemon's first answer",
                        id, s->daemon_timeout_ms);
        }
        if (s->scheduler && s->mode == VGPU_MODE_PASSTHROUGH) {
            warn_report(
                "%s: scheduler=%s does nothing with mode=passthrough: the VM owns "
                "the GPU",
                id, s->scheduler);
        }
        return;
    }
    daemons = vgpu_backend_setting(s->backend, VGPU_OPT_SCHEDULER);
    if (s->scheduler && daemons && strcmp(s->scheduler, daemons) != 0) {
        warn_report(
            "%s: scheduler=%s does nothing: the vgpud daemon at %s schedules every "
            "VM with %s (vgpud --scheduler)",
            id, s->scheduler, s->socket, daemons);
    }
}
