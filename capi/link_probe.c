// SPDX-License-Identifier: GPL-2.0-or-later
// Links the C API from C, as QEMU does, and checks that a default backend
// identifies itself. Exit status 0 on success.
#include <stdio.h>

#include "capi/vgpu_capi.h"

int main(void)
{
    VgpuLimits limits;
    vgpu_limits(&limits);
    VgpuBackendConfig config;
    vgpu_backend_config_init(&config);
    config.vram_bytes = limits.vram_min;
    config.channels = 1;
    config.weight = 1;
    char err[256];
    VgpuBackend *b = vgpu_backend_create(&config, err, sizeof(err));
    if (!b) {
        fprintf(stderr, "vgpu_backend_create: %s\n", err);
        return 1;
    }
    uint32_t boot0 = vgpu_backend_bar0_read32(b, 0);
    char *counters = vgpu_backend_counters_json(b);
    printf("backend %s, BOOT_0 0x%08x, counters %s\n", vgpu_backend_kind(b), boot0,
           counters ? counters : "(none)");
    vgpu_backend_free_string(counters);
    vgpu_backend_destroy(b);
    return 0;
}
