// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-option-table: the option table (vgpu/option_table.h) as JSON, one
// object a row, for the scripts that check a front end against it
// (scripts/qemu-device-test: QEMU's help and refusals).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "vgpu/option_table.h"

int main() {
  static const char* const TYPES[] = {"count", "size", "bool", "choice", "text"};
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (size_t i = 0; i < vgpu_option_row_count; ++i) {
    const VgpuOption& o = vgpu_option_rows[i];
    char over[256] = "";
    vgpu_option_check(&o, o.max + 1, over, sizeof over);
    rows.push_back({{"name", o.name},
                    {"type", TYPES[o.type]},
                    {"unit", o.unit},
                    {"default", o.dflt_text},
                    {"min", o.min},
                    {"max", o.max},
                    {"zero", o.zero ? o.zero : ""},
                    {"help", vgpu_option_help(&o)},
                    {"device", o.device ? o.device : ""},
                    {"above_max_message", over}});
  }
  std::puts(rows.dump(1).c_str());
  return 0;
}
