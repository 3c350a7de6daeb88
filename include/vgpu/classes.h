// SPDX-License-Identifier: GPL-2.0-or-later
// Object classes of the vgpu device and their methods (docs/spec/vgpu.md):
// channel 0x906F, copy 0x90B5 (NVIDIA's published layout) and the compute
// subset of 0x90C0, plus the built-in kernel program descriptor and the
// argument layout of each kernel (a vgpu deviation: there is no shader ISA).
#pragma once

#include <cstdint>
#include <type_traits>

#include "vgpu/bits.h"

namespace vgpu::cls {

inline constexpr uint32_t CHANNEL_GPFIFO = 0x906f;
inline constexpr uint32_t DMA_COPY = 0x90b5;
inline constexpr uint32_t COMPUTE = 0x90c0;

// ---------------------------------------------------------------- 0x906F host methods
namespace host {
inline constexpr uint32_t SET_OBJECT = 0x0000;
using SetObjectClass = Field<15, 0>;
using SetObjectEngine = Field<20, 16>;
inline constexpr uint32_t ILLEGAL = 0x0004;
inline constexpr uint32_t NOP = 0x0008;
inline constexpr uint32_t SEMAPHORE_A = 0x0010;  // VA bits 39:32 in 7:0
inline constexpr uint32_t SEMAPHORE_B = 0x0014;  // VA bits 31:2
inline constexpr uint32_t SEMAPHORE_C = 0x0018;  // payload
inline constexpr uint32_t SEMAPHORE_D = 0x001c;  // trigger
inline constexpr uint32_t NON_STALL_INTERRUPT = 0x0020;
inline constexpr uint32_t FB_FLUSH = 0x0024;
inline constexpr uint32_t MEM_OP_A = 0x0028;
inline constexpr uint32_t MEM_OP_B = 0x002c;
inline constexpr uint32_t SET_REFERENCE = 0x0050;
inline constexpr uint32_t YIELD = 0x0080;

using SemAHi = Field<7, 0>;
using SemBLo = Field<31, 2>;
using SemDOperation = Field<3, 0>;
using SemDAcquireSwitch = Bit<12>;
using SemDReleaseWfiDisable = Bit<20>;
using SemDReleaseSize4 = Bit<24>;  // 1 = 4-byte release, 0 = 16-byte (payload, 0, timestamp)
enum class SemOp : uint32_t { acquire = 1, release = 2, acq_geq = 4, acq_and = 8 };
inline constexpr uint32_t SEM_RELEASE_16_BYTES = 16;
inline constexpr uint32_t SEM_RELEASE_4_BYTES = 4;

using MemOpBOperation = Field<31, 27>;
enum class MemOp : uint32_t { sysmembar_flush = 5, soft_flush = 6, mmu_tlb_invalidate = 9 };
}  // namespace host

// ---------------------------------------------------------------- 0x90B5 copy
namespace copy {
inline constexpr uint32_t NOP = 0x0100;
inline constexpr uint32_t SET_SEMAPHORE_A = 0x0240;  // VA bits 39:32
inline constexpr uint32_t SET_SEMAPHORE_B = 0x0244;  // VA bits 31:0
inline constexpr uint32_t SET_SEMAPHORE_PAYLOAD = 0x0248;
inline constexpr uint32_t ADDRESSING_MODE = 0x0250;  // must be virtual / local FB (0)
inline constexpr uint32_t LAUNCH_DMA = 0x0300;
inline constexpr uint32_t OFFSET_IN_UPPER = 0x0400;
inline constexpr uint32_t OFFSET_IN_LOWER = 0x0404;
inline constexpr uint32_t OFFSET_OUT_UPPER = 0x0408;
inline constexpr uint32_t OFFSET_OUT_LOWER = 0x040c;
inline constexpr uint32_t PITCH_IN = 0x0410;
inline constexpr uint32_t PITCH_OUT = 0x0414;
inline constexpr uint32_t LINE_LENGTH_IN = 0x0418;
inline constexpr uint32_t LINE_COUNT = 0x041c;

using LaunchTransferType = Field<1, 0>;  // 0 none, 1 pipelined, 2 non-pipelined
using LaunchFlush = Bit<2>;
using LaunchSemaphoreType = Field<4, 3>;  // 0 none, 1 one word, 2 four words
using LaunchInterruptType = Field<6, 5>;  // 0 none, 1 blocking, 2 non-blocking
using LaunchSrcPitch = Bit<7>;            // must be 1: block-linear is not supported
using LaunchDstPitch = Bit<8>;            // must be 1
using LaunchMultiLine = Bit<9>;
using LaunchRemap = Bit<10>;  // must be 0
enum class Transfer : uint32_t { none = 0, pipelined = 1, non_pipelined = 2 };
enum class SemRelease : uint32_t { none = 0, one_word = 1, four_words = 2 };
enum class Interrupt : uint32_t { none = 0, blocking = 1, non_blocking = 2 };
using VaUpper = Field<7, 0>;                                // *_UPPER and SET_SEMAPHORE_A: VA bits 39:32
inline constexpr uint32_t ADDRESSING_VIRTUAL_LOCAL_FB = 0;  // SRC/DST virtual, local FB: the only mode
}  // namespace copy

// ---------------------------------------------------------------- 0x90C0 compute (subset)
namespace compute {
inline constexpr uint32_t SET_SHADER_SHARED_MEMORY_WINDOW = 0x0214;
inline constexpr uint32_t SET_CTA_RASTER_SIZE_A = 0x0238;  // grid x 15:0, y 31:16
inline constexpr uint32_t SET_CTA_RASTER_SIZE_B = 0x023c;  // grid z 15:0
inline constexpr uint32_t SET_SHADER_SHARED_MEMORY_SIZE = 0x024c;
inline constexpr uint32_t SET_CTA_THREAD_COUNT = 0x0250;
inline constexpr uint32_t SET_CTA_BARRIER_COUNT = 0x0254;
inline constexpr uint32_t BEGIN_GRID = 0x029c;
inline constexpr uint32_t SET_CTA_REGISTER_COUNT = 0x02c0;
inline constexpr uint32_t SET_L1_CONFIGURATION = 0x0308;
inline constexpr uint32_t WAIT_REF_COUNT = 0x0360;
inline constexpr uint32_t LAUNCH = 0x0368;
inline constexpr uint32_t SET_LAUNCH_ID = 0x036c;
inline constexpr uint32_t SET_CTA_THREAD_DIMENSION_A = 0x03ac;  // block x 15:0, y 31:16
inline constexpr uint32_t SET_CTA_THREAD_DIMENSION_B = 0x03b0;  // block z 15:0
inline constexpr uint32_t SET_CTA_PROGRAM_START = 0x03b4;       // offset from the program region
inline constexpr uint32_t SET_GRID_PARAM = 0x0780;
inline constexpr uint32_t END_GRID = 0x0a04;
inline constexpr uint32_t SET_LAUNCH_SIZE = 0x0a08;
inline constexpr uint32_t SET_PROGRAM_REGION_A = 0x1608;  // VA bits 39:32
inline constexpr uint32_t SET_PROGRAM_REGION_B = 0x160c;  // VA bits 31:0
inline constexpr uint32_t BIND_CONSTANT_BUFFER = 0x1694;
inline constexpr uint32_t INVALIDATE_SHADER_CACHES_NO_WFI = 0x1698;
inline constexpr uint32_t SET_REPORT_SEMAPHORE_A = 0x1b00;          // VA bits 39:32
inline constexpr uint32_t SET_REPORT_SEMAPHORE_B = 0x1b04;          // VA bits 31:0
inline constexpr uint32_t SET_REPORT_SEMAPHORE_C = 0x1b08;          // payload
inline constexpr uint32_t SET_REPORT_SEMAPHORE_D = 0x1b0c;          // trigger
inline constexpr uint32_t SET_CONSTANT_BUFFER_SELECTOR_A = 0x2380;  // size in bytes, 16:0
inline constexpr uint32_t SET_CONSTANT_BUFFER_SELECTOR_B = 0x2384;  // VA bits 39:32
inline constexpr uint32_t SET_CONSTANT_BUFFER_SELECTOR_C = 0x2388;  // VA bits 31:0
inline constexpr uint32_t LOAD_CONSTANT_BUFFER_OFFSET = 0x238c;
inline constexpr uint32_t LOAD_CONSTANT_BUFFER = 0x2390;  // 16 words, inline upload
// ext: PTX modules (§10.6). The text, the module's data segment (its
// .global/.const variables) and the report record are GPU VAs.
inline constexpr uint32_t SET_MODULE_SOURCE_A = 0x3400;     // VA bits 39:32
inline constexpr uint32_t SET_MODULE_SOURCE_B = 0x3404;     // VA bits 31:0
inline constexpr uint32_t SET_MODULE_SOURCE_SIZE = 0x3408;  // bytes of PTX text
inline constexpr uint32_t SET_MODULE_DATA_A = 0x340c;       // VA bits 39:32
inline constexpr uint32_t SET_MODULE_DATA_B = 0x3410;       // VA bits 31:0
inline constexpr uint32_t SET_MODULE_DATA_SIZE = 0x3414;    // bytes
inline constexpr uint32_t SET_PTX_REPORT_A = 0x3418;        // VA bits 39:32
inline constexpr uint32_t SET_PTX_REPORT_B = 0x341c;        // VA bits 31:0
inline constexpr uint32_t LOAD_MODULE = 0x3420;             // data: module slot
inline constexpr uint32_t UNLOAD_MODULE = 0x3424;           // data: module slot
// ext: a user launch in one method (§10.6): its data words, sent as one
// non-incrementing run, are a UserLaunchWords header and the parameters.
inline constexpr uint32_t LAUNCH_USER = 0x3428;

using DimLo = Field<15, 0>;
using DimHi = Field<31, 16>;
using CbSize = Field<16, 0>;
using BindValid = Bit<0>;
using BindSlot = Field<12, 8>;
using ReportOperation = Field<1, 0>;  // 0 = release
enum class ReportOp : uint32_t { release = 0, trap = 3 };
using VaUpper = Field<7, 0>;  // *_A methods holding VA bits 39:32
using ReportFlushDisable = Bit<2>;
using ReportAwaken = Bit<20>;  // raise the non-stall interrupt
using ReportSize4 = Bit<28>;   // 1 = one word, 0 = four words
inline constexpr unsigned NUM_CB_SLOTS = 18;
inline constexpr unsigned ARG_CB_SLOT = 0;  // kernels read their arguments from slot 0
inline constexpr unsigned LOAD_CONSTANT_BUFFER_WORDS = 16;
inline constexpr uint32_t MAX_THREADS_PER_BLOCK = 1024;
inline constexpr uint32_t MAX_GRID_DIM = 65535;
// ext: PTX modules (§10.6).
inline constexpr uint32_t MAX_MODULE_SLOTS = 64;         // per compute object (channel)
inline constexpr uint32_t MAX_MODULE_BYTES = 4u << 20;   // PTX text
inline constexpr uint32_t MAX_PARAM_BYTES = 4096;        // one entry's parameters (constant buffer slot 0)
inline constexpr uint32_t MAX_SHARED_BYTES = 48u << 10;  // static + dynamic shared memory of a block
// ext: the compute aperture (§10.7): memory a device back end can map for
// user kernels at the guest's own VAs, in 2 MiB blocks of 2 MiB-aligned,
// physically contiguous VRAM.
inline constexpr uint64_t APERTURE_BASE = uint64_t{0x80} << 32;  // 512 GiB
inline constexpr uint64_t APERTURE_END = uint64_t{0x100} << 32;  // 1 TiB, the 40-bit VA limit
inline constexpr uint64_t APERTURE_BLOCK = uint64_t{2} << 20;
using EntryIndex = Field<15, 0>;    // ProgramDescriptor::entry of a user kernel: the .entry's index
using EntryModule = Field<23, 16>;  // ... and its module slot
}  // namespace compute

// ---------------------------------------------------------------- built-in kernels
// ext: the "program" at PROGRAM_REGION + CTA_PROGRAM_START is this descriptor.
struct ProgramDescriptor {
  uint32_t magic;    // PROGRAM_MAGIC
  uint32_t version;  // PROGRAM_VERSION
  uint32_t kernel;   // Kernel
  uint32_t entry;    // Kernel::user: compute::EntryModule, EntryIndex; built-in kernels: 0, not checked
};
inline constexpr uint32_t PROGRAM_MAGIC = 0x4b504756;  // "VGPK"
inline constexpr uint32_t PROGRAM_VERSION = 1;

enum class Kernel : uint32_t {
  fill = 1,
  saxpy = 2,
  madd = 3,
  sgemm = 4,
  conv2d = 5,
  mriq = 6,
  spin = 7,
  user = 8,  // ext: an entry of a loaded PTX module (§10.6)
};

// ext: the first words of LAUNCH_USER's run (§10.6); the entry's
// parameter buffer follows (its .param list packed as for slot 0).
struct UserLaunchWords {
  uint32_t entry;         // compute::EntryModule, EntryIndex
  uint32_t grid_xy;       // compute::DimLo = x, DimHi = y
  uint32_t grid_z;        // compute::DimLo
  uint32_t block_xy;      // compute::DimLo = x, DimHi = y
  uint32_t block_z;       // compute::DimLo
  uint32_t shared_bytes;  // dynamic shared memory
  uint32_t report_a;      // report VA bits 39:32 (compute::VaUpper); 0 and 0: no report
  uint32_t report_b;      // report VA bits 31:0
};
inline constexpr uint32_t USER_LAUNCH_HEADER_WORDS = sizeof(UserLaunchWords) / sizeof(uint32_t);

// ext: what LOAD_MODULE, and a user launch that fails, write at the
// SET_PTX_REPORT VA (§10.6): 256 bytes, little endian.
enum class PtxStatus : uint32_t {
  ok = 0,
  parse_error = 1,     // line: where
  unsupported = 2,     // an instruction or directive outside the subset, named in message
  too_large = 3,       // a module limit (text, instructions, data, shared, params)
  bad_version = 4,     // no .version, or newer than the device reads
  bad_slot = 5,        // slot >= MAX_MODULE_SLOTS, or (launch) no module in it, or no such entry
  data_too_small = 6,  // SET_MODULE_DATA_SIZE below what the module's variables need (data_bytes: the need)
  mmu_fault = 7,       // addr: the faulting VA
  misaligned = 8,      // addr: the VA
  trap = 9,            // the kernel executed trap
  timeout = 10,        // the launch ran past its time bound
  resource = 11,       // a launch bound: shared memory, call depth, local memory, geometry, parameter size
  illegal = 12,        // an instruction the device cannot execute with its operands
};
struct PtxReport {
  uint32_t status;      // PtxStatus
  uint32_t line;        // PTX source line, 0 if none
  uint64_t addr;        // faulting VA (mmu_fault, misaligned)
  uint64_t data_bytes;  // LOAD_MODULE: bytes the module's data segment needs
  uint32_t entries;     // LOAD_MODULE: .entry count
  uint32_t sequence;    // incremented by the device on every report it writes to this object
  char message[224];    // NUL-terminated
};

// Argument blocks, read from constant buffer slot ARG_CB_SLOT. All
// pointers are GPU virtual addresses in the channel's address space;
// matrices are row major, float32, densely packed.
struct FillArgs {  // dst[i] = value, i < count
  uint64_t dst;
  uint32_t count;
  float value;
};
struct SaxpyArgs {  // y[i] = a * x[i] + y[i]
  uint64_t x;
  uint64_t y;
  uint32_t n;
  float a;
};
struct MaddArgs {  // c = a + b, rows x cols
  uint64_t a;
  uint64_t b;
  uint64_t c;
  uint32_t rows;
  uint32_t cols;
};
struct SgemmArgs {  // c = alpha * a(m x k) * b(k x n) + beta * c(m x n)
  uint64_t a;
  uint64_t b;
  uint64_t c;
  uint32_t m;
  uint32_t n;
  uint32_t k;
  float alpha;
  float beta;
  uint32_t reserved;
};
struct Conv2dArgs {  // out(N,K,P,Q) = sum_c,r,s in(N,C,H,W) * filter(K,C,R,S)
  uint64_t input;    // NCHW
  uint64_t filter;   // KCRS
  uint64_t output;   // NKPQ, P = (H + 2 pad_h - R) / stride_h + 1, Q likewise
  uint32_t n, c, h, w;
  uint32_t k, r, s;
  uint32_t pad_h, pad_w;
  uint32_t stride_h, stride_w;
  uint32_t reserved;
};
struct MriqArgs {                // Parboil MRI-Q computeQ
  uint64_t kx, ky, kz, phi_mag;  // num_k each
  uint64_t x, y, z;              // num_x each
  uint64_t qr, qi;               // num_x each (outputs)
  uint32_t num_k;
  uint32_t num_x;
};
struct SpinArgs {  // occupy the engine for duration_ns
  uint64_t duration_ns;
};
// Longest spin a launch may ask for; longer is bad_argument (the engine is
// not preemptible, so one launch must not hold it for long).
inline constexpr uint64_t MAX_SPIN_NS = 10'000'000'000;  // 10 s

static_assert(std::is_trivially_copyable_v<SgemmArgs>);
static_assert(sizeof(ProgramDescriptor) == 16);
static_assert(sizeof(FillArgs) == 16);
static_assert(sizeof(SaxpyArgs) == 24);
static_assert(sizeof(MaddArgs) == 32);
static_assert(sizeof(SgemmArgs) == 48);
static_assert(sizeof(Conv2dArgs) == 72);
static_assert(sizeof(MriqArgs) == 80);
static_assert(sizeof(SpinArgs) == 8);
static_assert(sizeof(PtxReport) == 256);

}  // namespace vgpu::cls
