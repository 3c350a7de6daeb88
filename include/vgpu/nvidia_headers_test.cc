// SPDX-License-Identifier: GPL-2.0-or-later
// Our class header (classes.h) and method-header formats (formats.h) checked
// against NVIDIA's and nouveau's headers as Debian 12 ships them, fetched by
// scripts/fetch-nvidia-headers into DIR and built with -Dnvidia_headers=DIR:
//   linux-source-6.1: nvhw/class/cl906f.h (NVIDIA's 0x906F header, a subset:
//                     semaphores, non-stall interrupt, reference, method
//                     header formats), nvif/class.h (class ids)
//   mesa:             nvc0_compute.xml.h (0x90C0 methods under envytools'
//                     rnndb names), nv_object.xml.h (class ids, host methods)
// One expectation per offset, value or bit field; a mismatch names both sides.
//
// Not checked, for want of a Debian source: the whole 0x90B5 layout (we follow
// NVIDIA's open-gpu-doc cl90b5.h; nothing in Debian 12 carries it, and nouveau
// drives 0x90B5 through its own firmware's methods, docs/spec/vgpu.md §9);
// host ILLEGAL, NOP, MEM_OP_A/B, SetObjectClass/Engine and MemOp values;
// compute WAIT_REF_COUNT, SET_LAUNCH_ID and SET_LAUNCH_SIZE (mesa knows
// 0x0360, 0x036c and 0x0a08 only as UNK*), ReportFlushDisable, VaUpper and
// CbSize (mesa declares no such field). regs.h has no counterpart in these
// headers (nouveau spells Fermi's BAR0 registers as bare numbers).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

#include "vgpu/classes.h"
#include "vgpu/formats.h"

// From the fetched folder (-isystem DIR/linux, -isystem DIR/mesa).
#include "nv_object.xml.h"
#include "nvc0_compute.xml.h"
#include "nvhw/class/cl906f.h"
#include "nvif/class.h"

namespace vgpu {
namespace {

// One row: a value of ours and the macro of the same meaning in their header.
struct Same {
  const char* ours;
  uint64_t our_value;
  const char* theirs;
  uint64_t their_value;
};

// A bit field of ours against theirs written NVIDIA's way, "hi:lo".
struct SameField {
  const char* ours;
  unsigned our_hi, our_lo;
  const char* theirs;
  unsigned their_hi, their_lo;
};

// Rows are made by macros because only the preprocessor can spell a macro's
// name, and a mismatch must name both sides.
// clang-format would take #ours inside the braces for a directive.
// clang-format off
#define SAME(ours, theirs) Same{#ours, static_cast<uint64_t>(ours), #theirs, static_cast<uint64_t>(theirs)}
// NVIDIA's "hi:lo" field macros: (1 ? hi:lo) is hi, (0 ? hi:lo) is lo (nouveau's DRF trick).
#define SAME_FIELD(ours, theirs) SameField{#ours, ours::hi, ours::lo, #theirs, (1 ? theirs), (0 ? theirs)}
// rnndb's masks: a field of ours against theirs written as a mask.
#define SAME_MASK(ours, theirs) Same{#ours "::mask", ours::mask, #theirs, static_cast<uint64_t>(theirs)}
// clang-format on

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// ns: the namespace the rows' names of ours are in, for the message.
void expect_same(std::span<const Same> rows, const char* ns, const char* source) {
  for (const Same& r : rows) {
    EXPECT_EQ(hex(r.our_value), hex(r.their_value))
        << ns << r.ours << " differs from " << r.theirs << " (" << source << ")";
  }
}

void expect_same(std::span<const SameField> rows, const char* ns, const char* source) {
  for (const SameField& r : rows) {
    EXPECT_EQ(std::to_string(r.our_hi) + ":" + std::to_string(r.our_lo),
              std::to_string(r.their_hi) + ":" + std::to_string(r.their_lo))
        << ns << r.ours << " differs from " << r.theirs << " (" << source << ")";
  }
}

constexpr const char* CL906F = "linux-source-6.1 nvhw/class/cl906f.h";
constexpr const char* NVIF_CLASS = "linux-source-6.1 nvif/class.h";
constexpr const char* MESA_OBJECT = "mesa nv_object.xml.h";
constexpr const char* MESA_COMPUTE = "mesa nvc0_compute.xml.h";

TEST(NvidiaHeaders, ClassIdsMatchNouveauAndMesa) {
  const Same nvif[] = {
      SAME(cls::CHANNEL_GPFIFO, FERMI_CHANNEL_GPFIFO),
      SAME(cls::DMA_COPY, FERMI_DMA),
      SAME(cls::COMPUTE, FERMI_COMPUTE_A),
  };
  expect_same(nvif, "vgpu::", NVIF_CLASS);
  const Same mesa[] = {
      SAME(cls::DMA_COPY, BLOB_NVC0_PCOPY0_CLASS),
      SAME(cls::COMPUTE, NVC0_COMPUTE_CLASS),
  };
  expect_same(mesa, "vgpu::", MESA_OBJECT);
}

TEST(NvidiaHeaders, HostMethodsMatchNvidiaCl906f) {
  using namespace cls::host;
  const Same methods[] = {
      SAME(SEMAPHORE_A, NV906F_SEMAPHOREA),
      SAME(SEMAPHORE_B, NV906F_SEMAPHOREB),
      SAME(SEMAPHORE_C, NV906F_SEMAPHOREC),
      SAME(SEMAPHORE_D, NV906F_SEMAPHORED),
      SAME(NON_STALL_INTERRUPT, NV906F_NON_STALL_INTERRUPT),
      SAME(SET_REFERENCE, NV906F_SET_REFERENCE),
      SAME(SemOp::acquire, NV906F_SEMAPHORED_OPERATION_ACQUIRE),
      SAME(SemOp::release, NV906F_SEMAPHORED_OPERATION_RELEASE),
      SAME(SemOp::acq_geq, NV906F_SEMAPHORED_OPERATION_ACQ_GEQ),
      SAME(SemOp::acq_and, NV906F_SEMAPHORED_OPERATION_ACQ_AND),
      // Our bits are named for what a 1 means.
      SAME(SemDReleaseWfiDisable::max, NV906F_SEMAPHORED_RELEASE_WFI_DIS),
      SAME(SemDReleaseSize4::max, NV906F_SEMAPHORED_RELEASE_SIZE_4BYTE),
  };
  expect_same(methods, "cls::host::", CL906F);
  const SameField fields[] = {
      SAME_FIELD(SemAHi, NV906F_SEMAPHOREA_OFFSET_UPPER),
      SAME_FIELD(SemBLo, NV906F_SEMAPHOREB_OFFSET_LOWER),
      SAME_FIELD(SemDOperation, NV906F_SEMAPHORED_OPERATION),
      SAME_FIELD(SemDAcquireSwitch, NV906F_SEMAPHORED_ACQUIRE_SWITCH),
      SAME_FIELD(SemDReleaseWfiDisable, NV906F_SEMAPHORED_RELEASE_WFI),
      SAME_FIELD(SemDReleaseSize4, NV906F_SEMAPHORED_RELEASE_SIZE),
  };
  expect_same(fields, "cls::host::", CL906F);
}

TEST(NvidiaHeaders, MethodHeaderFormatsMatchNvidiaCl906f) {
  using namespace fmt::mthd;
  const SameField fields[] = {
      SAME_FIELD(Opcode, NV906F_DMA_SEC_OP),            // the header's operation
      SAME_FIELD(Count, NV906F_DMA_METHOD_COUNT),       // data words
      SAME_FIELD(Count, NV906F_DMA_IMMD_DATA),          // or the immediate data
      SAME_FIELD(Subch, NV906F_DMA_METHOD_SUBCHANNEL),  // subchannel
      SAME_FIELD(Addr, NV906F_DMA_METHOD_ADDRESS),      // method address >> 2
      SAME_FIELD(LegacyTert, NV906F_DMA_TERT_OP),       // legacy forms' tertiary operation
  };
  expect_same(fields, "fmt::mthd::", CL906F);
  const Same ops[] = {
      SAME(Op::legacy_inc, NV906F_DMA_SEC_OP_GRP0_USE_TERT),
      SAME(Op::inc, NV906F_DMA_SEC_OP_INC_METHOD),
      SAME(Op::legacy_non_inc, NV906F_DMA_SEC_OP_GRP2_USE_TERT),
      SAME(Op::non_inc, NV906F_DMA_SEC_OP_NON_INC_METHOD),
      SAME(Op::immediate, NV906F_DMA_SEC_OP_IMMD_DATA_METHOD),
      SAME(Op::one_inc, NV906F_DMA_SEC_OP_ONE_INC),
      SAME(Op::reserved, NV906F_DMA_SEC_OP_RESERVED6),
      SAME(Op::end_segment, NV906F_DMA_SEC_OP_END_PB_SEGMENT),
  };
  expect_same(ops, "fmt::mthd::", CL906F);
}

TEST(NvidiaHeaders, HostMethodsMatchMesa) {
  using namespace cls::host;
  const Same methods[] = {
      SAME(SET_OBJECT, NV01_SUBCHAN_OBJECT),
      SAME(SEMAPHORE_A, NV84_SUBCHAN_SEMAPHORE_ADDRESS_HIGH),
      SAME(SEMAPHORE_B, NV84_SUBCHAN_SEMAPHORE_ADDRESS_LOW),
      SAME(SEMAPHORE_C, NV84_SUBCHAN_SEMAPHORE_SEQUENCE),
      SAME(SEMAPHORE_D, NV84_SUBCHAN_SEMAPHORE_TRIGGER),
      SAME(NON_STALL_INTERRUPT, NV84_SUBCHAN_NOTIFY_INTR),
      SAME(FB_FLUSH, NV84_SUBCHAN_WRCACHE_FLUSH),
      SAME(SET_REFERENCE, NV10_SUBCHAN_REF_CNT),
      SAME(YIELD, NV40_SUBCHAN_YIELD),
      SAME(SemOp::acquire, NV84_SUBCHAN_SEMAPHORE_TRIGGER_ACQUIRE_EQUAL),
      SAME(SemOp::release, NV84_SUBCHAN_SEMAPHORE_TRIGGER_WRITE_LONG),
      SAME(SemOp::acq_geq, NV84_SUBCHAN_SEMAPHORE_TRIGGER_ACQUIRE_GEQUAL),
  };
  expect_same(methods, "cls::host::", MESA_OBJECT);
}

TEST(NvidiaHeaders, ComputeMethodsMatchMesa) {
  using namespace cls::compute;
  const Same methods[] = {
      SAME(SET_SHADER_SHARED_MEMORY_WINDOW, NVC0_COMPUTE_SHARED_BASE),
      SAME(SET_CTA_RASTER_SIZE_A, NVC0_COMPUTE_GRIDDIM_YX),
      SAME(SET_CTA_RASTER_SIZE_B, NVC0_COMPUTE_GRIDDIM_Z),
      SAME(SET_SHADER_SHARED_MEMORY_SIZE, NVC0_COMPUTE_SHARED_SIZE),
      SAME(SET_CTA_THREAD_COUNT, NVC0_COMPUTE_THREADS_ALLOC),
      SAME(SET_CTA_BARRIER_COUNT, NVC0_COMPUTE_BARRIER_ALLOC),
      SAME(BEGIN_GRID, NVC0_COMPUTE_COMPUTE_BEGIN),
      SAME(SET_CTA_REGISTER_COUNT, NVC0_COMPUTE_CP_GPR_ALLOC),
      SAME(SET_L1_CONFIGURATION, NVC0_COMPUTE_CACHE_SPLIT),
      SAME(LAUNCH, NVC0_COMPUTE_LAUNCH),
      SAME(SET_CTA_THREAD_DIMENSION_A, NVC0_COMPUTE_BLOCKDIM_YX),
      SAME(SET_CTA_THREAD_DIMENSION_B, NVC0_COMPUTE_BLOCKDIM_Z),
      SAME(SET_CTA_PROGRAM_START, NVC0_COMPUTE_CP_START_ID),
      SAME(SET_GRID_PARAM, NVC0_COMPUTE_GRIDID),
      SAME(END_GRID, NVC0_COMPUTE_COMPUTE_END),
      SAME(SET_PROGRAM_REGION_A, NVC0_COMPUTE_CODE_ADDRESS_HIGH),
      SAME(SET_PROGRAM_REGION_B, NVC0_COMPUTE_CODE_ADDRESS_LOW),
      SAME(BIND_CONSTANT_BUFFER, NVC0_COMPUTE_CB_BIND),
      SAME(INVALIDATE_SHADER_CACHES_NO_WFI, NVC0_COMPUTE_FLUSH),
      SAME(SET_REPORT_SEMAPHORE_A, NVC0_COMPUTE_QUERY_ADDRESS_HIGH),
      SAME(SET_REPORT_SEMAPHORE_B, NVC0_COMPUTE_QUERY_ADDRESS_LOW),
      SAME(SET_REPORT_SEMAPHORE_C, NVC0_COMPUTE_QUERY_SEQUENCE),
      SAME(SET_REPORT_SEMAPHORE_D, NVC0_COMPUTE_QUERY_GET),
      SAME(SET_CONSTANT_BUFFER_SELECTOR_A, NVC0_COMPUTE_CB_SIZE),
      SAME(SET_CONSTANT_BUFFER_SELECTOR_B, NVC0_COMPUTE_CB_ADDRESS_HIGH),
      SAME(SET_CONSTANT_BUFFER_SELECTOR_C, NVC0_COMPUTE_CB_ADDRESS_LOW),
      SAME(LOAD_CONSTANT_BUFFER_OFFSET, NVC0_COMPUTE_CB_POS),
      SAME(LOAD_CONSTANT_BUFFER, NVC0_COMPUTE_CB_DATA(0)),
      SAME(LOAD_CONSTANT_BUFFER_WORDS, NVC0_COMPUTE_CB_DATA__LEN),
      SAME(ReportOp::release, NVC0_COMPUTE_QUERY_GET_MODE_WRITE),
      SAME(ReportOp::trap, NVC0_COMPUTE_QUERY_GET_MODE_WRITE_INTR_NRHOST),
  };
  expect_same(methods, "cls::compute::", MESA_COMPUTE);
  const Same fields[] = {
      SAME_MASK(DimLo, NVC0_COMPUTE_GRIDDIM_YX_X__MASK),
      SAME_MASK(DimHi, NVC0_COMPUTE_GRIDDIM_YX_Y__MASK),
      SAME_MASK(DimLo, NVC0_COMPUTE_BLOCKDIM_YX_X__MASK),
      SAME_MASK(DimHi, NVC0_COMPUTE_BLOCKDIM_YX_Y__MASK),
      SAME_MASK(BindValid, NVC0_COMPUTE_CB_BIND_VALID),
      SAME_MASK(BindSlot, NVC0_COMPUTE_CB_BIND_INDEX__MASK),
      SAME_MASK(ReportOperation, NVC0_COMPUTE_QUERY_GET_MODE__MASK),
      SAME_MASK(ReportAwaken, NVC0_COMPUTE_QUERY_GET_INTR),
      SAME_MASK(ReportSize4, NVC0_COMPUTE_QUERY_GET_SHORT),
  };
  expect_same(fields, "cls::compute::", MESA_COMPUTE);
}

}  // namespace
}  // namespace vgpu
