/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * vgpu: system memory. The device's DMA through QEMU's DMA API, and the
 * guest's RAM as the memory map has it (mode=fv). See vgpu.c.
 */

#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qemu/rcu.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "exec/address-spaces.h"
#include "sysemu/dma.h"
#include "trace.h"
#include "vgpu.h"

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
int vgpu_dma(void *opaque, uint64_t addr, void *buf, uint64_t len, VgpuDmaOp op)
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

    /* Not RAM for the GPU: devices' RAM (a vgpu's VRAM is a RAMBlock when
     * it migrates, mapped through its BAR windows) and ROM. */
    if (!memory_region_is_ram(region) || memory_region_is_ram_device(region)
        || memory_region_is_rom(region)
        || object_dynamic_cast(memory_region_owner(region), TYPE_VGPU)) {
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

bool vgpu_report_guest_ram(VGPUState *s, Error **errp)
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
