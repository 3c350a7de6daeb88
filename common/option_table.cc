// SPDX-License-Identifier: GPL-2.0-or-later
// The option table (vgpu/option_table.h): the rows, and the one parse,
// check and help every front end uses.
#include "vgpu/option_table.h"

#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/bits.h"

#define VGPU_STR2(x) #x
#define VGPU_STR(x) VGPU_STR2(x)

extern "C" {

const VgpuOption vgpu_option_rows[] = {
    {.name = VGPU_OPT_VRAM,
     .type = VGPU_OPTION_SIZE,
     .scope = VGPU_SCOPE_VM,
     .unit = "MiB",
     .dflt = VGPU_OPT_VRAM_DEFAULT_MIB,
     .dflt_text = VGPU_STR(VGPU_OPT_VRAM_DEFAULT_MIB) "M",
     .min = VGPU_OPT_VRAM_MIN_MIB,
     .max = VGPU_OPT_VRAM_MAX_MIB,
     .help = "VRAM the VM sees, a whole number of MiB (512M, 1G)"},
    {.name = VGPU_OPT_CHANNELS,
     .type = VGPU_OPTION_COUNT,
     .scope = VGPU_SCOPE_VM,
     .unit = "",
     .dflt = VGPU_OPT_CHANNELS_DEFAULT,
     .dflt_text = VGPU_STR(VGPU_OPT_CHANNELS_DEFAULT),
     .min = 1,
     .max = VGPU_OPT_CHANNELS_MAX,
     .help = "channels the VM may use"},
    {.name = "mode",
     .type = VGPU_OPTION_CHOICE,
     .scope = VGPU_SCOPE_VM,
     .unit = "",
     .dflt_text = "passthrough",
     .choices = "passthrough, fv",
     .help = "passthrough: the VM owns the GPU; fv: full virtualization through the mediator"},
    {.name = VGPU_OPT_BAR_REMAP,
     .type = VGPU_OPTION_BOOL,
     .scope = VGPU_SCOPE_VM,
     .unit = "",
     .dflt = VGPU_OPT_BAR_REMAP_DEFAULT,
     .dflt_text = VGPU_OPT_BAR_REMAP_DEFAULT ? "on" : "off",
     .max = 1,
     .help = "map safe BAR1/BAR3 pages straight onto VRAM; off: every access traps"},
    {.name = VGPU_OPT_LAZY_SHADOW,
     .type = VGPU_OPTION_BOOL,
     .scope = VGPU_SCOPE_VM,
     .unit = "",
     .dflt = VGPU_OPT_LAZY_SHADOW_DEFAULT,
     .dflt_text = VGPU_OPT_LAZY_SHADOW_DEFAULT ? "on" : "off",
     .max = 1,
     .help = "rescan shadow page tables only when a channel is about to run",
     .device = "fv"},
    {.name = VGPU_OPT_PV,
     .type = VGPU_OPTION_BOOL,
     .scope = VGPU_SCOPE_VM,
     .unit = "",
     .dflt = VGPU_OPT_PV_DEFAULT,
     .dflt_text = VGPU_OPT_PV_DEFAULT ? "on" : "off",
     .max = 1,
     .help = "offer the paravirtual page-table interface",
     .device = "fv, embedded"},
    {.name = VGPU_OPT_SCHEDULER,
     .type = VGPU_OPTION_CHOICE,
     .scope = VGPU_SCOPE_HOST,
     .unit = "",
     .dflt_text = VGPU_OPT_SCHEDULER_DEFAULT,
     .choices = "fifo, credit, band",
     .help = "the scheduler shared by every VM (docs/scheduler.md)",
     .device = "fv; with socket the daemon's (reads as it)"},
    {.name = VGPU_OPT_WEIGHT,
     .type = VGPU_OPTION_COUNT,
     .scope = VGPU_SCOPE_VM,
     .unit = "",
     .dflt = VGPU_OPT_WEIGHT_DEFAULT,
     .dflt_text = VGPU_STR(VGPU_OPT_WEIGHT_DEFAULT),
     .min = 1,
     .max = VGPU_OPT_WEIGHT_MAX,
     .help = "this VM's share of the GPU",
     .device = "with socket"},
    {.name = VGPU_OPT_SOCKET,
     .type = VGPU_OPTION_TEXT,
     .scope = VGPU_SCOPE_VM,
     .unit = "",
     .dflt_text = "",
     .help = "take the vGPU from the vgpud daemon listening on this path",
     .device = "fv"},
    {.name = VGPU_OPT_VM_NAME,
     .type = VGPU_OPTION_TEXT,
     .scope = VGPU_SCOPE_VM,
     .unit = "",
     .dflt_text = "qemu-PID",
     .help = "the VM's name at the daemon, up to " VGPU_STR(VGPU_OPT_VM_NAME_MAX) " of [A-Za-z0-9._-]",
     .device = "with socket"},
    {.name = VGPU_OPT_TURN_MS,
     .type = VGPU_OPTION_COUNT,
     .scope = VGPU_SCOPE_HOST,
     .unit = "ms",
     .dflt = VGPU_OPT_TURN_MS_DEFAULT,
     .dflt_text = VGPU_STR(VGPU_OPT_TURN_MS_DEFAULT),
     .min = 0,
     .max = VGPU_OPT_TURN_MS_MAX,
     .zero = "a turn runs every entry up to GP_PUT",
     .help = "a scheduler turn's slice: a turn ends at the first GPFIFO entry boundary after it",
     .device = "fv, embedded"},
    {.name = VGPU_OPT_MAX_GPU_MS,
     .type = VGPU_OPTION_COUNT,
     .scope = VGPU_SCOPE_HOST,
     .unit = "ms",
     .dflt = VGPU_OPT_MAX_GPU_MS_DEFAULT,
     .dflt_text = VGPU_STR(VGPU_OPT_MAX_GPU_MS_DEFAULT),
     .min = 0,
     .max = VGPU_OPT_MAX_GPU_MS_MAX,
     .zero = "no limit",
     .help = "the longest one indivisible piece of work (a method, or one piece of sliced work) may hold the GPU; "
             "longer ends with channel error timeout",
     .device = "fv, embedded"},
    {.name = VGPU_OPT_SLICE_BLOCKS,
     .type = VGPU_OPTION_COUNT,
     .scope = VGPU_SCOPE_VM,
     .unit = "blocks",
     .dflt = VGPU_OPT_SLICE_BLOCKS_DEFAULT,
     .dflt_text = "auto",
     .min = 0,
     .max = VGPU_OPT_SLICE_BLOCKS_MAX,
     .zero = "launches and copies run whole",
     .word = "auto",
     .word_value = VGPU_OPT_SLICE_BLOCKS_AUTO,
     .help = "launches and copies run in pieces a turn may end between: auto, pieces of turn-ms/" VGPU_STR(
         VGPU_OPT_SLICE_TURN_FRACTION) " of GPU time (QEMU and the C API spell it as the largest 32-bit number); N, "
                                       "compute launches in slices of N thread blocks",
     .device = "fv, embedded"},
    {.name = VGPU_OPT_WATCHDOG_MS,
     .type = VGPU_OPTION_COUNT,
     .scope = VGPU_SCOPE_VM,
     .unit = "ms",
     .dflt = VGPU_OPT_WATCHDOG_MS_DEFAULT,
     .dflt_text = VGPU_STR(VGPU_OPT_WATCHDOG_MS_DEFAULT),
     .min = 0,
     .max = VGPU_OPT_WATCHDOG_MS_MAX,
     .zero = "none",
     .help = "the engine time one operation (one method's work, every piece of it) may take before it ends with "
             "channel error timeout",
     .device = "fv, embedded"},
    {.name = VGPU_OPT_RING_AHEAD,
     .type = VGPU_OPTION_BOOL,
     .scope = VGPU_SCOPE_HOST,
     .unit = "",
     .dflt = VGPU_OPT_RING_AHEAD_DEFAULT,
     .dflt_text = VGPU_OPT_RING_AHEAD_DEFAULT ? "on" : "off",
     .max = 1,
     .help = "ring a VM's next GPFIFO entry behind the one on the GPU while its turn has time and no other VM "
             "waits; off: another VM waits behind at most one entry of a turn, not two",
     .device = "fv, embedded"},
    {.name = VGPU_OPT_BACKEND,
     .type = VGPU_OPTION_CHOICE,
     .scope = VGPU_SCOPE_HOST,
     .unit = "",
     .dflt_text = VGPU_OPT_BACKEND_DEFAULT,
     .choices = "model, cuda",
     .help = "who runs the engines' work: the software model or an NVIDIA GPU through CUDA, one worker process "
             "per VM (vgpud) or per vGPU (QEMU's own device, mode=fv) (docs/cuda-worker.md)",
     .device = "with socket the daemon's (reads vgpud)"},
    {.name = VGPU_OPT_WORKER_DEVICE,
     .type = VGPU_OPTION_CHOICE,
     .scope = VGPU_SCOPE_HOST,
     .unit = "",
     .dflt_text = VGPU_OPT_WORKER_DEVICE_DEFAULT,
     .choices = "cuda, fake",
     .help = "with backend cuda, what each VM's worker process runs on: an NVIDIA GPU through libcuda, "
             "or host memory (tests: user kernels on the PTX interpreter, built-ins on the model's kernels) "
             "(docs/cuda-worker.md)",
     .device = "vgpud, and QEMU's own device with backend=cuda (mode fv)"},
    {.name = VGPU_OPT_WORKER_BINARY,
     .type = VGPU_OPTION_TEXT,
     .scope = VGPU_SCOPE_HOST,
     .unit = "",
     .dflt_text = "beside the program, else installed",
     .help = "with backend cuda, the vgpu-worker executable; by default the one beside the program that starts "
             "workers (vgpud, or QEMU with the C API linked in: vgpu-worker, or ../worker/vgpu-worker in a build "
             "tree), else the installed one (libexecdir)",
     .device = "vgpud, and QEMU's own device with backend=cuda (mode fv)"},
    {.name = VGPU_OPT_DAEMON_TIMEOUT_MS,
     .type = VGPU_OPTION_COUNT,
     .scope = VGPU_SCOPE_VM,
     .unit = "ms",
     .dflt = VGPU_OPT_DAEMON_TIMEOUT_MS_DEFAULT,
     .dflt_text = VGPU_STR(VGPU_OPT_DAEMON_TIMEOUT_MS_DEFAULT),
     .min = 1,
     .max = VGPU_OPT_DAEMON_TIMEOUT_MS_MAX,
     .help = "how long to wait for vgpud's first answer; at the default, VGPUD_TIMEOUT decides when set",
     .device = "with socket"},
};

const size_t vgpu_option_row_count = sizeof vgpu_option_rows / sizeof vgpu_option_rows[0];

}  // extern "C"

namespace {

// Appends every part (GCC 12's -Wrestrict misfires on "a" + std::string).
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::string s;
  (s.append(parts), ...);
  return s;
}

bool failed(char* err, size_t err_len, const std::string& message) {
  if (err != nullptr && err_len > 0) std::snprintf(err, err_len, "%s", message.c_str());
  return false;
}

std::string with_unit(uint64_t v, const char* unit) {
  std::string s = std::to_string(v);
  if (unit != nullptr && *unit != '\0') s.append(" ").append(unit);
  return s;
}

bool whole(std::string_view text, uint64_t& v) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return !text.empty() && ec == std::errc() && p == text.data() + text.size();
}

// "512M", "1G", "1048576" (bytes) as MiB; false with the message.
bool parse_size_mib(const VgpuOption* o, std::string_view text, uint64_t& mib, char* err, size_t err_len) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  uint64_t n = 0;
  const std::string_view suffix = text.substr(digits);
  const std::string quoted = cat(o->name, ": '", text, "'");
  if (!whole(text.substr(0, digits), n) || suffix.size() > 1)
    return failed(err, err_len, cat(quoted, " is not a size (512M, 1G)"));
  uint64_t unit = 1;
  if (suffix == "K" || suffix == "k") unit = vgpu::KiB;
  if (suffix == "M" || suffix == "m") unit = vgpu::MiB;
  if (suffix == "G" || suffix == "g") unit = vgpu::GiB;
  if (!suffix.empty() && unit == 1) return failed(err, err_len, cat(quoted, " has an unknown suffix (K, M, G)"));
  if (n > ~uint64_t{0} / unit || (n * unit) % vgpu::MiB != 0) {
    const std::string hint = suffix.empty() ? cat(" (a bare number is bytes: ", text, "M for MiB)") : "";
    return failed(err, err_len, cat(quoted, " is not a whole number of MiB", hint));
  }
  mib = n * unit / vgpu::MiB;
  return true;
}

bool one_of(const char* choices, std::string_view text) {
  std::string_view rest = choices;
  while (!rest.empty()) {
    const size_t comma = rest.find(", ");
    if (rest.substr(0, comma) == text) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 2);
  }
  return false;
}

std::string help_line(const VgpuOption& o) {
  std::string s = o.help;
  if (o.type == VGPU_OPTION_COUNT || o.type == VGPU_OPTION_SIZE) {
    s.append("; ").append(std::to_string(o.min)).append(" to ").append(with_unit(o.max, o.unit));
    if (o.word != nullptr) s.append(" or ").append(o.word);
    if (o.zero != nullptr) s.append(" (0: ").append(o.zero).append(")");
  } else if (o.type == VGPU_OPTION_BOOL) {
    s.append("; on or off");
  } else if (o.type == VGPU_OPTION_CHOICE) {
    s.append("; one of ").append(o.choices);
  }
  return s;
}

}  // namespace

extern "C" {

const VgpuOption* vgpu_option_find(const char* name) {
  for (size_t i = 0; i < vgpu_option_row_count; ++i)
    if (std::strcmp(vgpu_option_rows[i].name, name) == 0) return &vgpu_option_rows[i];
  return nullptr;
}

bool vgpu_option_check(const VgpuOption* o, uint64_t value, char* err, size_t err_len) {
  if (o->type != VGPU_OPTION_COUNT && o->type != VGPU_OPTION_SIZE) return true;
  if (o->word != nullptr && value == o->word_value) return true;
  if (value > o->max)
    return failed(err, err_len,
                  cat(o->name, ": ", with_unit(value, o->unit), " is above the maximum ", with_unit(o->max, o->unit)));
  if (value < o->min)
    return failed(err, err_len,
                  cat(o->name, ": ", with_unit(value, o->unit), " is below the minimum ", with_unit(o->min, o->unit)));
  return true;
}

bool vgpu_option_parse(const VgpuOption* o, const char* text, uint64_t* value, char* err, size_t err_len) {
  const std::string_view t = text;
  const std::string quoted = cat(o->name, ": '", t, "'");
  *value = 0;
  switch (o->type) {
    case VGPU_OPTION_BOOL:
      if (t != "on" && t != "off") return failed(err, err_len, cat(quoted, " is not on or off"));
      *value = t == "on";
      return true;
    case VGPU_OPTION_CHOICE:
      if (!one_of(o->choices, t)) return failed(err, err_len, cat(quoted, " is not one of ", o->choices));
      return true;
    case VGPU_OPTION_TEXT: return true;
    case VGPU_OPTION_SIZE:
      if (!parse_size_mib(o, t, *value, err, err_len)) return false;
      return vgpu_option_check(o, *value, err, err_len);
    case VGPU_OPTION_COUNT: break;
  }
  if (o->word != nullptr && t == o->word) {
    *value = o->word_value;
    return true;
  }
  if (!whole(t, *value)) {
    std::string what = cat(quoted, " is not a whole number");
    if (*o->unit != '\0') what.append(" of ").append(o->unit);
    if (o->word != nullptr) what.append(" or ").append(o->word);
    return failed(err, err_len, what);
  }
  return vgpu_option_check(o, *value, err, err_len);
}

const char* vgpu_option_help(const VgpuOption* o) {
  static const std::vector<std::string> lines = [] {
    std::vector<std::string> out;
    for (size_t i = 0; i < vgpu_option_row_count; ++i) out.push_back(help_line(vgpu_option_rows[i]));
    return out;
  }();
  return lines[static_cast<size_t>(o - vgpu_option_rows)].c_str();
}

}  // extern "C"
