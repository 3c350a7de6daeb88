/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The option table: one row for each user-settable option of a vGPU (name,
 * type, unit, default, bounds, what 0 means, help), the one declaration
 * every front end derives from: QEMU's -device vgpu properties (their
 * descriptions, and the C API's check of their values), vgpud's flags
 * (vgpud/options.cc), the C API's config (vgpu_backend_config_init and its
 * check) and the benchmarks' flags (bench/workloads/args.h option_flag).
 * The names, defaults and bounds themselves are vgpu/options.h's macros
 * (QEMU's DEFINE_PROP_* need constants); the rows here give them their
 * parse, check, messages and help. The same value is accepted or refused
 * with the same message by every front end (tests/option_table_test.cc,
 * scripts/qemu-device-test).
 *
 * Booleans are spelled on|off. 0 means one thing per option, said in the
 * row's `zero` (NULL: 0 is an ordinary value or below the minimum).
 * C and C++: no C++ in this file.
 */
#ifndef VGPU_OPTION_TABLE_H
#define VGPU_OPTION_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "options.h" /* vgpu/options.h, beside this file (QEMU gets both copied) */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum VgpuOptionType {
  VGPU_OPTION_COUNT,  /* a whole number in [min, max] (or the row's word) */
  VGPU_OPTION_SIZE,   /* a size in whole MiB, in [min, max] MiB */
  VGPU_OPTION_BOOL,   /* on or off (1 or 0) */
  VGPU_OPTION_CHOICE, /* one of the row's choices */
  VGPU_OPTION_TEXT,   /* any text (a path, a name) */
} VgpuOptionType;

/* Where an option applies: every VM of its own, or the whole host (a
 * device's value is its embedded mediator's; vgpud's is every VM's). */
typedef enum VgpuOptionScope {
  VGPU_SCOPE_VM,
  VGPU_SCOPE_HOST,
} VgpuOptionScope;

typedef struct VgpuOption {
  const char *name; /* "turn-ms": QEMU's property, vgpud's and the benches' --turn-ms */
  VgpuOptionType type;
  VgpuOptionScope scope;
  const char *unit;      /* "ms", "MiB", "blocks", "" */
  uint64_t dflt;         /* numbers, sizes (MiB) and booleans */
  const char *dflt_text; /* as written: "30", "on", "auto", "band" */
  uint64_t min, max;     /* numbers and sizes (MiB) */
  const char *zero;      /* what 0 means ("no limit"); NULL: nothing of its own */
  const char *word;      /* a word for a value outside [min, max] ("auto"); NULL: none */
  uint64_t word_value;
  const char *choices; /* VGPU_OPTION_CHOICE: "fifo, credit, band" */
  const char *help;    /* one or two sentences, for every front end's help */
  const char *device;  /* where QEMU's device uses it ("fv, embedded"); NULL: always */
} VgpuOption;

/* The rows, in the order help lists them. */
extern const VgpuOption vgpu_option_rows[];
extern const size_t vgpu_option_row_count;

/* The row named `name`, or NULL. */
const VgpuOption *vgpu_option_find(const char *name);

/*
 * A value given as text (a command line's), all of it: a whole number, a
 * size ("512M"; a bare number is bytes), on or off, the row's word, one of
 * its choices. true with *value set (choices and text: 0); false with the
 * message in err, "turn-ms: '7abc' is not a whole number of ms" or the
 * check's below.
 */
bool vgpu_option_parse(const VgpuOption *o, const char *text, uint64_t *value, char *err, size_t err_len);

/*
 * A number against the row's bounds (sizes in MiB): the check every front
 * end makes, QEMU's through the C API. false with "turn-ms: 2000 ms is above
 * the maximum 1000 ms" in err.
 */
bool vgpu_option_check(const VgpuOption *o, uint64_t value, char *err, size_t err_len);

/* The row's help with its bounds, default and what 0 means, one line:
 * QEMU's property description and vgpud's --help. The text is the
 * table's own (static storage). */
const char *vgpu_option_help(const VgpuOption *o);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_OPTION_TABLE_H */
