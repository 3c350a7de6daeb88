// SPDX-License-Identifier: GPL-2.0-or-later
// The one register header: BAR0 offsets and bit fields of the vgpu device,
// as specified in docs/spec/vgpu.md. Shared by the software GPU model, the
// mediator and the guest driver. Follows Fermi (GF100) where Fermi has the
// feature; vgpu extensions are marked "ext" and listed in the spec's
// deviations section.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include "vgpu/bits.h"

namespace vgpu::regs {

// ---------------------------------------------------------------- identity
namespace pci {
inline constexpr uint16_t VENDOR_ID = 0x1af4;  // QEMU experimental range (1af4:10f0..10ff)
inline constexpr uint16_t DEVICE_ID = 0x10f0;
inline constexpr uint8_t REVISION = 0xa1;
inline constexpr uint8_t CLASS_DISPLAY = 0x03;  // base class: display controller
inline constexpr uint8_t SUBCLASS_3D = 0x02;    // 3D controller (no VGA)
inline constexpr unsigned BAR0_INDEX = 0;       // MMIO, 32-bit, non-prefetchable
inline constexpr unsigned BAR1_INDEX = 1;       // VRAM aperture, 64-bit prefetchable (slots 1+2)
inline constexpr unsigned BAR3_INDEX = 3;       // instance aperture, 64-bit prefetchable (slots 3+4)
inline constexpr uint64_t BAR0_SIZE = 16 * MiB;
inline constexpr uint64_t BAR1_SIZE = 256 * MiB;
inline constexpr uint64_t BAR3_SIZE = 16 * MiB;
// Standard PCI configuration space: the driver sets bus mastering (the
// device does DMA through sysmem PTEs, spec §4.5).
inline constexpr uint32_t CONFIG_COMMAND = 0x04;  // 16 bits
inline constexpr uint16_t COMMAND_BUS_MASTER = 0x0004;
// Interrupt messages (spec §11.6): sent for each interrupt raised while
// deliverable, whatever the line's level, on the vector of its kind.
enum class MsiVector : uint8_t {
  nonstall = 0,  // a channel's non-stall interrupt (PFIFO INTR bit 31)
  error = 1,     // a channel error (PFIFO INTR bit 29, with bit 28 for MMU faults), or the line rose
};
inline constexpr unsigned MSI_VECTORS = 2;
}  // namespace pci

inline constexpr uint32_t CHIPSET_GF100 = 0x0c0;
inline constexpr unsigned NUM_CHANNELS = 128;
inline constexpr unsigned NUM_SUBCHANNELS = 8;
inline constexpr unsigned NUM_PBDMA = 3;
inline constexpr uint32_t ALL_PBDMA = (1u << NUM_PBDMA) - 1;  // PBDMA_ENABLE with every PBDMA on

// A set of channels as the per-channel bit registers hold it
// (CHAN_ERROR_PENDING, NONSTALL_PENDING): bit chid % 32 of word chid / 32.
inline constexpr unsigned CHANNEL_WORDS = NUM_CHANNELS / 32;
constexpr uint32_t channel_word(uint32_t chid) { return chid / 32; }
constexpr uint32_t channel_bit(uint32_t chid) { return 1u << (chid % 32); }
struct ChannelBits {
  std::array<uint32_t, CHANNEL_WORDS> words{};
  constexpr void set(uint32_t chid) { words[channel_word(chid)] |= channel_bit(chid); }
  constexpr void reset(uint32_t chid) { words[channel_word(chid)] &= ~channel_bit(chid); }
  constexpr bool test(uint32_t chid) const { return (words[channel_word(chid)] & channel_bit(chid)) != 0; }
  // The set channels in round-robin order from `start` (which wraps to
  // 0 past the last channel), until fn(chid) returns false.
  template <class Fn>
  constexpr void for_each_from(uint32_t start, Fn fn) const {
    start %= NUM_CHANNELS;
    for (uint32_t n = 0; n <= CHANNEL_WORDS; ++n) {
      const uint32_t w = (channel_word(start) + n) % CHANNEL_WORDS;
      uint32_t bits = words[w];
      if (n == 0) bits &= ~(channel_bit(start) - 1);                       // at or after start
      if (n == CHANNEL_WORDS) bits = words[w] & (channel_bit(start) - 1);  // wrapped: before start
      for (; bits; bits &= bits - 1)
        if (!fn(w * 32 + static_cast<uint32_t>(std::countr_zero(bits)))) return;
    }
  }
  constexpr bool any() const {
    for (uint32_t w : words)
      if (w) return true;
    return false;
  }
  constexpr void clear() { words = {}; }
};

// Reads of a register the device does not implement.
inline constexpr uint32_t BAD_REGISTER = 0xbad00100;
// Reads of a unit held in reset by PMC.ENABLE.
inline constexpr uint32_t BAD_DISABLED_UNIT = 0xbad0da00;

// ---------------------------------------------------------------- PMC
namespace pmc {
inline constexpr Reg32 BOOT_0{0x000000};  // RO  identity
using Boot0Stepping = Field<7, 0>;
using Boot0DeviceLow = Field<19, 15>;  // low 5 bits of the PCI device id
using Boot0Chipset = Field<28, 20>;
inline constexpr uint32_t BOOT_0_VALUE = Boot0Chipset::make(CHIPSET_GF100) |
                                         Boot0DeviceLow::make(pci::DEVICE_ID & 0x1f) |
                                         Boot0Stepping::make(pci::REVISION);
inline constexpr Reg32 BOOT_1{0x000004};     // RW  endian switch; reads 0 (little endian only)
inline constexpr Reg32 INTR_0{0x000100};     // RO  pending interrupts, one bit per unit
inline constexpr Reg32 INTR_EN_0{0x000140};  // RW  bit 0 = hardware interrupts delivered
using IntrEnHardware = Bit<0>;
inline constexpr Reg32 ENABLE{0x000200};        // RW  unit enables; 0 = held in reset
inline constexpr Reg32 PBDMA_ENABLE{0x000204};  // RW  bit n enables PBDMA n
inline constexpr Reg32 INTR_MASK_0{0x000640};   // RW  per-unit interrupt mask, 1 = delivered

// INTR_0 / INTR_MASK_0 unit bits (Fermi numbering).
namespace intr {
using Pfifo = Bit<8>;
using Pgraph = Bit<12>;
using Ptimer = Bit<20>;
using Pbus = Bit<28>;
}  // namespace intr

// ENABLE unit bits (Fermi numbering).
namespace enable {
using Ce0 = Bit<6>;
using Ce1 = Bit<7>;
using Pfifo = Bit<8>;
using Pgraph = Bit<12>;
using Ptimer = Bit<16>;
inline constexpr uint32_t ALL = Ce0::mask | Ce1::mask | Pfifo::mask | Pgraph::mask | Ptimer::mask;
}  // namespace enable
}  // namespace pmc

// ---------------------------------------------------------------- PBUS
namespace pbus {
inline constexpr Reg32 INTR{0x001100};     // RW1C
inline constexpr Reg32 INTR_EN{0x001140};  // RW
using IntrMmioFault = Bit<3>;              // access to a BAR page that faulted

inline constexpr Reg32 PRAMIN_WINDOW{0x001700};  // RW  PRAMIN window base
using PraminBase = Field<23, 0>;                 // address >> 16 (window is 1 MiB aligned)
using PraminTarget = Field<25, 24>;              // 0 = VRAM (only VRAM is supported)
inline constexpr unsigned PRAMIN_BASE_SHIFT = 16;

inline constexpr Reg32 BAR1_INST{0x001704};  // RW  BAR1 instance block
inline constexpr Reg32 BAR3_INST{0x001714};  // RW  BAR3 instance block
using BarInstAddr = Field<27, 0>;            // instance address >> 12
using BarInstTarget = Field<29, 28>;         // 0 = VRAM
using BarInstMode = Bit<31>;                 // 1 = translated through the instance block's page tables
inline constexpr unsigned BAR_INST_SHIFT = 12;
}  // namespace pbus

// PFLUSH: BAR write flush.
namespace pflush {
inline constexpr Reg32 FLUSH{0x070000};  // RW  write 1 = flush; bit 1 reads 1 while pending
using FlushTrigger = Bit<0>;
using FlushPending = Bit<1>;
}  // namespace pflush

// PRAMIN: 1 MiB window into VRAM at BAR0 0x700000.
namespace pramin {
inline constexpr uint32_t BASE = 0x700000;
inline constexpr uint32_t SIZE = 0x100000;
}  // namespace pramin

// ---------------------------------------------------------------- PTIMER
namespace ptimer {
inline constexpr Reg32 INTR_0{0x009100};     // RW1C bit 0 = alarm
inline constexpr Reg32 INTR_EN_0{0x009140};  // RW   bit 0 = alarm enabled
using IntrAlarm = Bit<0>;
inline constexpr Reg32 NUMERATOR{0x009200};    // RW   stored; the count is always nanoseconds
inline constexpr Reg32 DENOMINATOR{0x009210};  // RW   stored; the count is always nanoseconds
inline constexpr Reg32 TIME_0{0x009400};       // RO   nanoseconds, low word (bits 4:0 read 0)
inline constexpr Reg32 TIME_1{0x009410};       // RO   nanoseconds, high word (bits 28:0)
inline constexpr Reg32 ALARM_0{0x009420};      // RW   alarm when TIME_0 bits 31:5 match
using Time0Count = Field<31, 5>;
using Time1Count = Field<28, 0>;
}  // namespace ptimer

// ---------------------------------------------------------------- VRAM size discovery
namespace punits {
inline constexpr Reg32 FBP_COUNT{0x022438};          // RO  number of frame-buffer partitions (1)
inline constexpr Reg32 FBP_DISABLED_MASK{0x022554};  // RO  0
}  // namespace punits
namespace pfb {
inline constexpr RegArray32 FBPA_MIB{0x11020c, 0x1000, 1};  // RO  MiB of VRAM behind FBP n
}  // namespace pfb

// ---------------------------------------------------------------- MMU control (PFB/PFFB)
namespace mmu {
inline constexpr Reg32 CTRL{0x100c80};            // RW/RO MMU control and invalidate status
using CtrlBigPage64K = Bit<0>;                    // RO 0: big pages are 128 KiB (64 KiB unsupported)
using CtrlInvalidateDone = Bit<15>;               // RO 1 once the last invalidate completed
using CtrlFreeSlots = Field<23, 16>;              // RO free invalidate slots (never 0)
inline constexpr Reg32 INVALIDATE_PDB{0x100cb8};  // RW page directory to invalidate
using InvalidatePdbTarget = Field<1, 0>;          // 0 = VRAM
using InvalidatePdbAddr = Field<31, 4>;           // PD address >> 12
inline constexpr Reg32 INVALIDATE{0x100cbc};      // WO trigger
using InvalidatePageAll = Bit<0>;
using InvalidateAllPdb = Bit<1>;   // ignore INVALIDATE_PDB: flush every address space
using InvalidateHubOnly = Bit<2>;  // accepted, no effect (one TLB level)
using InvalidateTrigger = Bit<31>;
}  // namespace mmu

// ---------------------------------------------------------------- PFIFO
namespace pfifo {
inline constexpr Reg32 INTR{0x002100};     // RW1C pending PFIFO interrupts
inline constexpr Reg32 INTR_EN{0x002140};  // RW
using IntrChanTableError = Bit<0>;
using IntrMmuFault = Bit<28>;      // see FAULT_UNIT_PENDING and FAULT_INFO
using IntrChannelError = Bit<29>;  // ext: see CHAN_ERROR_PENDING and CHAN_ERROR
using IntrRunlist = Bit<30>;       // runlist update complete
using IntrNonStall = Bit<31>;      // ext: see NONSTALL_PENDING

inline constexpr Reg32 CTRL{0x002200};  // RW  bit 0 = PFIFO enabled
using CtrlEnable = Bit<0>;
inline constexpr Reg32 PBDMA_ENABLE{0x002204};  // RW  mirror of PMC PBDMA_ENABLE
inline constexpr Reg32 USERD_BASE{0x002254};    // RW  BAR1 VA of the USERD array
using UserdBaseAddr = Field<27, 0>;             // BAR1 VA >> 12
using UserdBaseEnable = Bit<28>;
inline constexpr unsigned USERD_BASE_SHIFT = 12;

inline constexpr Reg32 RUNLIST_BASE{0x002270};  // RW
using RunlistAddr = Field<27, 0>;               // VRAM address >> 12
using RunlistTarget = Field<29, 28>;            // 0 = VRAM
inline constexpr unsigned RUNLIST_SHIFT = 12;
inline constexpr Reg32 RUNLIST_SUBMIT{0x002274};  // WO  writing starts the runlist update
using RunlistCount = Field<11, 0>;
inline constexpr Reg32 RUNLIST_STATUS{0x00227c};  // RO
using RunlistPending = Bit<20>;
inline constexpr Reg32 RUNLIST_INTR{0x002a00};  // RW1C
using RunlistIntrDone = Bit<28>;

inline constexpr Reg32 CHAN_TABLE_ERROR{0x00252c};  // RO  code of the last channel-table error
enum class ChanTableError : uint32_t {
  none = 0x00,
  invalid_target = 0x06,  // runlist not in VRAM, or beyond the VRAM size
  invalid_chid = 0x10,    // ext: a runlist entry names a channel >= NUM_CHANNELS
};
inline constexpr Reg32 FAULT_UNIT_PENDING{0x00259c};  // RW1C bit n = FAULT_INFO[n] holds a fault
inline constexpr Reg32 NONSTALL_ENGINE{0x0025a4};     // RW1C engine non-stall summary (bit 0 = host)
inline constexpr Reg32 PREEMPT{0x002634};             // RW  write chid to preempt; bit 20 = pending
using PreemptChid = Field<6, 0>;
using PreemptPending = Bit<20>;

// ext: the longest one engine job may run, in ms (0: no limit): an
// indivisible operation, or one piece of divided work (a slice of a
// launch, a piece of a copy); work that would run longer ends with channel
// error timeout (docs/spec/vgpu.md §3.5, §11.4). The host's: a vGPU does
// not have it.
inline constexpr Reg32 ENGINE_TIMEOUT{0x002a20};  // RW
inline constexpr Reg32 TIME_LO{0x002a10};         // RO  copy of PTIMER
inline constexpr Reg32 TIME_HI{0x002a14};         // RO

// Channel table.
inline constexpr RegArray32 CHAN_INST{0x003000, 8, NUM_CHANNELS};  // RW
using ChanInstAddr = Field<27, 0>;                                 // instance block address >> 12
using ChanInstTarget = Field<29, 28>;                              // 0 = VRAM
using ChanInstPoll = Bit<30>;
using ChanInstValid = Bit<31>;
inline constexpr unsigned CHAN_INST_SHIFT = 12;
inline constexpr RegArray32 CHAN_STATE{0x003004, 8, NUM_CHANNELS};  // RW
using ChanStateRunnable = Bit<0>;
using ChanStateAcquirePending = Bit<4>;      // RO blocked in a semaphore acquire
using ChanStateEngine = Field<20, 16>;       // 0x1f = none
using ChanStateBusy = Bit<28>;               // RO work fetched or executing
using ChanStateEngineOutstanding = Bit<29>;  // RO engine work the channel started still runs (even unbound)
using ChanStateSliceHeld = Bit<30>;  // RO ext: stopped at a slice boundary of a divided launch (CHAN_SLICE hold)
inline constexpr uint32_t ENGINE_NONE = 0x1f;

// ext: kernel slicing (docs/spec/vgpu.md §10.5), the host's: a compute
// launch of the channel runs in slices of at most ChanSliceBlocks thread
// blocks (0: whole). With ChanSliceHold the channel stops at each slice
// boundary (ChanStateSliceHeld, a slice event for the host) until its
// GP_PUT is written again; without it, PFIFO goes on with the next slice
// in its round robin of channels.
// With ChanSliceTimed, ChanSliceBlocks is instead a time: the engine
// measures the work's speed and sizes each piece (a launch's slice of
// blocks or units, a copy's run of lines) to about that many microseconds.
// With ChanSliceOnDemand as well (timed only, real time), a piece that has
// had its time ends only once SLICE_YIELD asks for the engine (or it has
// run SLICE_LONE_MAX_MS); until then the work goes on as if it were whole.
inline constexpr RegArray32 CHAN_SLICE{0x003400, 4, NUM_CHANNELS};  // RW
using ChanSliceBlocks = Field<23, 0>;
using ChanSliceOnDemand = Bit<29>;
using ChanSliceTimed = Bit<30>;
using ChanSliceHold = Bit<31>;
// ext: the host asks for the engines (docs/spec/vgpu.md §10.5): while
// SliceYieldRequest is set, every on-demand timed piece ends at its next
// unit boundary past its slice time; while clear, such pieces run on (up
// to SLICE_LONE_MAX_MS each, so that the host still hears of the work's
// progress). The host sets it while another VM waits for the GPU.
inline constexpr Reg32 SLICE_YIELD{0x002a24};  // RW
using SliceYieldRequest = Bit<0>;
inline constexpr uint32_t SLICE_LONE_MAX_MS = 1000;

// ext: the watchdog of one operation of the channel (one method's engine
// work, all its pieces together, user launches included), in ms of engine
// time (0: none): an operation that runs longer ends with channel error
// timeout. The host's (per VM, `watchdog-ms`): a vGPU does not have it
// (docs/spec/vgpu.md §3.6). It resets to CHAN_WATCHDOG_RESET_MS, the one
// default (VGPU_OPT_WATCHDOG_MS_DEFAULT is the same), so a guest given the
// GPU whole (pass-through) has the same watchdog as a VM.
inline constexpr RegArray32 CHAN_WATCHDOG{0x002c00, 4, NUM_CHANNELS};  // RW
inline constexpr uint32_t CHAN_WATCHDOG_RESET_MS = 60'000;

// ext: per-channel interrupt attribution (Fermi reports these per PBDMA or
// engine; a shared GPU needs them per channel). One bit per channel.
inline constexpr RegArray32 CHAN_ERROR_PENDING{0x003700, 4, NUM_CHANNELS / 32};  // RW1C
inline constexpr RegArray32 NONSTALL_PENDING{0x003710, 4, NUM_CHANNELS / 32};    // RW1C

// ext: per-channel error record, 16 bytes per channel.
inline constexpr uint32_t CHAN_ERROR_BASE = 0x003800;
inline constexpr uint32_t CHAN_ERROR_STRIDE = 0x10;
inline constexpr RegArray32 CHAN_ERROR{CHAN_ERROR_BASE + 0x0, CHAN_ERROR_STRIDE,
                                       NUM_CHANNELS};  // RW code; write 0 clears
inline constexpr RegArray32 CHAN_ERROR_METHOD{CHAN_ERROR_BASE + 0x4, CHAN_ERROR_STRIDE, NUM_CHANNELS};   // RO
inline constexpr RegArray32 CHAN_ERROR_ADDR_LO{CHAN_ERROR_BASE + 0x8, CHAN_ERROR_STRIDE, NUM_CHANNELS};  // RO
inline constexpr RegArray32 CHAN_ERROR_ADDR_HI{CHAN_ERROR_BASE + 0xc, CHAN_ERROR_STRIDE, NUM_CHANNELS};  // RO
using ChanErrorCode = Field<7, 0>;
using ChanErrorMethodAddr = Field<13, 2>;  // method byte address >> 2, as a header names it
using ChanErrorMethodSubch = Field<18, 16>;

// MMU fault information, one record per fault unit.
inline constexpr uint32_t FAULT_INFO_BASE = 0x002800;
inline constexpr uint32_t FAULT_INFO_STRIDE = 0x10;
inline constexpr unsigned NUM_FAULT_UNITS = 32;
inline constexpr RegArray32 FAULT_INST{FAULT_INFO_BASE + 0x0, FAULT_INFO_STRIDE, NUM_FAULT_UNITS};   // RO
inline constexpr RegArray32 FAULT_VA_LO{FAULT_INFO_BASE + 0x4, FAULT_INFO_STRIDE, NUM_FAULT_UNITS};  // RO
inline constexpr RegArray32 FAULT_VA_HI{FAULT_INFO_BASE + 0x8, FAULT_INFO_STRIDE, NUM_FAULT_UNITS};  // RO
inline constexpr RegArray32 FAULT_TYPE{FAULT_INFO_BASE + 0xc, FAULT_INFO_STRIDE, NUM_FAULT_UNITS};   // RO
using FaultInstAddr = Field<27, 0>;  // instance block >> 12 of the faulting context
using FaultReason = Field<3, 0>;
using FaultHub = Bit<6>;
using FaultWrite = Bit<7>;
using FaultClient = Field<12, 8>;
using FaultChid = Field<22, 16>;  // ext: faulting channel
using FaultChidValid = Bit<23>;   // ext: FaultChid is meaningful
}  // namespace pfifo

// MMU fault units (index into FAULT_INFO) and reasons (Fermi numbering).
enum class FaultUnit : uint32_t {
  pgraph = 0x00,
  bar1 = 0x04,
  bar3 = 0x05,
  pfifo = 0x07,
  ce0 = 0x15,
};

enum class FaultReason : uint32_t {
  pt_not_present = 0x0,
  pt_too_short = 0x1,
  page_not_present = 0x2,
  vm_limit_exceeded = 0x3,
  no_channel = 0x4,
  page_system_only = 0x5,
  page_read_only = 0x6,
  invalid_storage_type = 0xc,
  out_of_vram = 0xd,  // ext: translated address beyond the VRAM size
  dma_error = 0xf,    // ext: a system-memory address (or table) that is not memory: DMA failed
};

// Channel error codes (CHAN_ERROR). ext: Fermi reports these as PBDMA
// interrupt bits; vgpu gives each its own code. A channel with an error is
// stopped (CHAN_STATE runnable cleared) until the driver rebinds it.
enum class ChannelError : uint32_t {
  none = 0x00,
  mmu_fault = 0x01,         // details in FAULT_INFO
  illegal_cmd = 0x02,       // malformed push-buffer header
  illegal_method = 0x03,    // method the bound class does not implement
  illegal_class = 0x04,     // SET_OBJECT of a class the device does not have
  empty_subchannel = 0x05,  // method on a subchannel with no object
  gpentry_invalid = 0x06,   // GPFIFO entry with a bad opcode or outside the address space
  bad_program = 0x07,       // compute program descriptor invalid or kernel unknown
  bad_argument = 0x08,      // kernel or copy arguments out of range
  sem_timeout = 0x09,       // semaphore acquire timed out
  illegal_sem = 0x0a,       // semaphore operation not defined
  bad_instance = 0x0b,      // instance block or RAMFC invalid (signature, ring, limit)
  bad_copy = 0x0c,          // copy-engine launch with invalid parameters
  internal = 0x0d,          // ext: the device failed (a host resource); the operation did not complete
  timeout = 0x0e,       // ext: one GPFIFO entry's engine work ran past ENGINE_TIMEOUT; the operation did not complete
  kernel_error = 0x0f,  // ext: a user kernel trapped, misaligned an access or broke a launch bound (PtxReport)
};

// ---------------------------------------------------------------- BAR1 / USERD
namespace userd {
inline constexpr uint32_t SIZE = 0x1000;  // one page per channel
inline constexpr uint32_t PUT = 0x40;     // RW legacy DMA put (unused)
inline constexpr uint32_t GET = 0x44;     // RO push-buffer get, low
inline constexpr uint32_t REF = 0x48;     // RO reference counter
inline constexpr uint32_t PUT_HI = 0x4c;
inline constexpr uint32_t TOP_LEVEL_GET = 0x58;  // RO
inline constexpr uint32_t TOP_LEVEL_GET_HI = 0x5c;
inline constexpr uint32_t GET_HI = 0x60;  // RO
inline constexpr uint32_t GP_GET = 0x88;  // RO GPFIFO entries consumed
inline constexpr uint32_t GP_PUT = 0x8c;  // RW GPFIFO put index: the doorbell
}  // namespace userd

// ---------------------------------------------------------------- instance block and RAMFC
namespace inst {
inline constexpr uint32_t SIZE = 0x1000;
inline constexpr uint32_t ALIGN = 0x1000;
inline constexpr uint32_t PDB_LO = 0x200;    // page directory base, low word
inline constexpr uint32_t PDB_HI = 0x204;    // address bits 39:32 in bits 7:0
inline constexpr uint32_t LIMIT_LO = 0x208;  // last valid VA byte, low word
inline constexpr uint32_t LIMIT_HI = 0x20c;
using PdbTarget = Field<1, 0>;  // 0 = VRAM (only VRAM is supported)
using PdbVol = Bit<2>;
using PdbAddrLo = Field<31, 12>;  // address bits 31:12, in place
using PdbAddrHi = Field<7, 0>;    // address bits 39:32
}  // namespace inst

namespace ramfc {
inline constexpr uint32_t GP_PUT = 0x00;
inline constexpr uint32_t USERD_LO = 0x08;  // VRAM address of the USERD page
inline constexpr uint32_t USERD_HI = 0x0c;
inline constexpr uint32_t SIGNATURE = 0x10;
inline constexpr uint32_t GP_GET = 0x14;
inline constexpr uint32_t PB_GET = 0x18;
inline constexpr uint32_t PB_GET_HI = 0x1c;
inline constexpr uint32_t REF = 0x28;
inline constexpr uint32_t ACQUIRE = 0x30;  // semaphore acquire timeout setting
inline constexpr uint32_t GP_BASE = 0x48;  // GPFIFO ring VA, low word (8-byte aligned)
inline constexpr uint32_t GP_BASE_HI = 0x4c;
inline constexpr uint32_t SUBDEVICE = 0x94;
inline constexpr uint32_t FEATURE = 0x9c;
using SignatureValue = Field<15, 0>;
inline constexpr uint32_t SIGNATURE_VALUE = 0xface;
using UserdTarget = Field<1, 0>;       // 0 = VRAM
using UserdAddrLo = Field<31, 12>;     // USERD page address bits 31:12, in place (11:2 ignored)
using GpBaseHiAddr = Field<7, 0>;      // ring VA bits 39:32
using GpBaseHiLimit2 = Field<20, 16>;  // log2 of the ring's entry count
using AcquireTimeoutEnable = Bit<31>;
using AcquireTimeout = Field<30, 15>;  // timeout = value << shift microseconds
using AcquireTimeoutShift = Field<14, 11>;
inline constexpr unsigned GP_ENTRY_BYTES = 8;
inline constexpr unsigned MAX_LIMIT2 = 16;  // at most 65536 entries
}  // namespace ramfc

namespace runlist {
inline constexpr uint32_t ENTRY_BYTES = 8;
inline constexpr uint32_t ENTRY_CHID = 0x0;         // dword 0: chid
inline constexpr uint32_t ENTRY_FLAGS = 0x4;        // dword 1, ignored
inline constexpr uint32_t ENTRY_FLAGS_VALUE = 0x4;  // what nouveau writes there
using EntryChid = Field<6, 0>;
}  // namespace runlist


// ---------------------------------------------------------------- PV (ext)
// The paravirtual page-table interface (spec §17): offered by a vGPU with
// pv=on, absent on the physical GPU (its reads give BAD_REGISTER). The
// guest names an area of its own VRAM holding SLOTS batch slots, fills a
// slot with operations and writes the slot's index to DOORBELL: the whole
// batch runs before the write completes.
namespace pv {
inline constexpr Reg32 CAPS{0x0a0000};         // RO  signature and capability bits
using CapsHypercalls = Bit<0>;                 // the hypercall slots and ops below are offered
using CapsSignature = Field<31, 16>;           // reads SIGNATURE when the block exists
inline constexpr uint32_t SIGNATURE = 0x5076;  // "Pv"
inline constexpr Reg32 SLOT_BASE{0x0a0004};    // RW  the slot area in guest VRAM
using SlotBaseAddr = Field<27, 0>;             // address >> SLOT_BASE_SHIFT (SLOT_BYTES aligned)
using SlotBaseEnable = Bit<31>;                // reads 1 once a valid area is set
inline constexpr unsigned SLOT_BASE_SHIFT = 12;
inline constexpr Reg32 DOORBELL{0x0a0008};  // WO  run one slot's batch
using DoorbellSlot = Field<7, 0>;
inline constexpr Reg32 STATUS{0x0a000c};   // RO  the last batch's result (Result), any thread's
inline constexpr Reg32 BATCHES{0x0a0010};  // RO  batches run since reset (wraps)

inline constexpr uint32_t SLOTS = 16;
inline constexpr uint32_t SLOT_BYTES = 16 * 1024;
inline constexpr uint32_t AREA_BYTES = SLOTS * SLOT_BYTES;
inline constexpr uint32_t MAX_OPS = 128;

// Slot layout: a header, MAX_OPS operation records, then the list area
// that MAP_LIST names by byte offset.
namespace slot {
inline constexpr uint32_t COUNT = 0x00;   // guest: operations in the batch, 1..MAX_OPS
inline constexpr uint32_t STATUS = 0x04;  // device: the batch's Result
inline constexpr uint32_t DONE = 0x08;    // device: operations applied (index of the first failure)
inline constexpr uint32_t OPS = 0x40;     // first operation record
inline constexpr uint32_t OP_BYTES = 0x20;
inline constexpr uint32_t LIST = OPS + MAX_OPS * OP_BYTES;  // first byte a list may use
}  // namespace slot
static_assert(slot::LIST < SLOT_BYTES);

// One operation record (OP_BYTES, little endian).
namespace op {
inline constexpr uint32_t CODE = 0x00;    // u32: Opcode and flags
inline constexpr uint32_t SPACE = 0x04;   // u32: address space id
inline constexpr uint32_t VA = 0x08;      // u64: first VA (MAP, MAP_LIST, UNMAP)
inline constexpr uint32_t ADDR = 0x10;    // u64: first VRAM page (MAP), list offset (MAP_LIST), PD (SET_PD)
inline constexpr uint32_t PAGES = 0x18;   // u32: page count (MAP, MAP_LIST, UNMAP)
inline constexpr uint32_t RESULT = 0x1c;  // u32: device: this operation's Result
using Code = Field<7, 0>;
using Big = Bit<8>;       // 128 KiB pages (else 4 KiB)
using ReadOnly = Bit<9>;  // PTE read-only
using Sysmem = Bit<10>;   // targets are system memory: guest-physical pages of the VM's RAM
inline constexpr uint32_t FLAGS = Big::mask | ReadOnly::mask | Sysmem::mask;
}  // namespace op

enum class Opcode : uint8_t {
  nop = 0,
  create_space = 1,   // SPACE: a new, empty address space
  destroy_space = 2,  // SPACE: unmap everything, drop the TLB's entries, free the id
  set_pd = 3,         // SPACE, ADDR: the guest page-directory address channel instance blocks name
  map = 4,            // SPACE, VA, ADDR, PAGES: VA + i*page -> ADDR + i*page (the stride form)
  map_list = 5,       // SPACE, VA, ADDR, PAGES: VA + i*page -> list[i] (u64 page addresses at slot offset ADDR)
  unmap = 6,          // SPACE, VA, PAGES: clear PTEs of that page size
  flush = 7,          // SPACE: TLB invalidate of the space (ordered after every earlier op)
};
inline constexpr uint32_t OPCODES = 8;

// Address space ids: [0, SPACES) are the VM's own, per VM (another VM's
// ids name nothing here); SPACE_BAR1 and SPACE_BAR3 name the BAR tables.
inline constexpr uint32_t SPACES = 256;
inline constexpr uint32_t SPACE_BAR1 = 0xffff0001;
inline constexpr uint32_t SPACE_BAR3 = 0xffff0003;

// Results: per operation (op::RESULT) and per batch (slot::STATUS and
// STATUS: ok, or the first failing operation's code, or a batch code).
enum class Result : uint32_t {
  ok = 0,
  not_run = 1,            // after an earlier failure in the batch (stop on first failure)
  bad_opcode = 2,         // unknown opcode or flag bits
  bad_space = 3,          // id not one of the VM's live address spaces
  space_exists = 4,       // create_space of a live id
  bad_alignment = 5,      // VA or address not a multiple of the page size; PD not TABLE_ALIGN aligned
  bad_range = 6,          // PAGES 0 or over MAX_PAGES, or the VA range beyond the address space
  outside_partition = 7,  // a target page or the PD not wholly in the VM's VRAM
  target_refused = 8,     // a system-memory target outside the VM's RAM (or a VM with none)
  bad_list = 9,           // the list does not lie in the slot's list area
  no_memory = 10,         // reserved VRAM for the shadow tables ran out
  pd_in_use = 11,         // set_pd naming a directory another space or a page-table scan owns
  bad_slot = 0x100,       // batch: DOORBELL slot index >= SLOTS
  bad_count = 0x101,      // batch: COUNT 0 or > MAX_OPS
  not_enabled = 0x102,    // batch: no valid SLOT_BASE (or the vGPU offers no PV)
};
inline constexpr uint32_t MAX_PAGES = 1u << 20;  // per operation
}  // namespace pv

}  // namespace vgpu::regs
