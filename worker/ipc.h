// SPDX-License-Identifier: GPL-2.0-or-later
// The shared memory between the mediator and one VM's CUDA worker
// (docs/cuda-worker.md, "IPC"): a header with the worker's state and last
// error, a single-producer/single-consumer command ring, one fence word
// per stream (written by the GPU with a stream memory operation) and a
// bulk window for bytes that travel with commands.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include "common/error.h"

namespace vgpu::worker {

inline constexpr uint32_t IPC_MAGIC = 0x6b726f77;  // "work"
inline constexpr uint32_t IPC_VERSION = 3;         // 2: the module refusal record; 3: built-in kernels
inline constexpr uint32_t RING_SLOTS = 256;
inline constexpr uint32_t NUM_STREAMS = 128;  // channel ids (regs::NUM_CHANNELS)
inline constexpr size_t BULK_BYTES = 8u << 20;
inline constexpr size_t ERROR_MESSAGE_BYTES = 224;
inline constexpr size_t PAGE_BYTES = 4096;
// The descriptor numbers the worker finds its region and doorbell at.
inline constexpr int SHM_FD = 3;
inline constexpr int BELL_FD = 4;
// The worker's exit status after it wrote a device error to the header.
inline constexpr int EXIT_DEVICE_ERROR = 3;
inline constexpr int EXIT_BAD_SETUP = 4;

enum class Op : uint32_t {
  nop = 0,
  map = 1,          // a: VA, b: first block, c: blocks (flags: MAP_READ_ONLY)
  unmap = 2,        // a: VA, c: blocks
  fill32 = 3,       // a: VA, b: 32-bit value, c: words
  copy = 4,         // a: destination VA, b: source VA, c: bytes
  write = 5,        // a: VA, b: bulk offset, c: bytes (bulk -> device)
  read = 6,         // a: VA, b: bulk offset, c: bytes (device -> bulk)
  spin = 7,         // a: nanoseconds the engine is busy
  load_module = 8,  // a: slot, b: bulk offset, c: bytes of PTX text, data_va: its data segment
  launch = 9,       // Launch in the slot's bytes
  stop = 10,        // the worker exits cleanly
  kernel = 11,      // a: cls::Kernel (saxpy, madd, sgemm, conv2d, mriq), c: bytes of `args`
};
const char* op_name(Op op);

// A user launch: the entry by name's index in the module's text order.
struct LaunchArgs {
  uint32_t slot, entry;
  uint32_t grid[3], block[3];
  uint32_t shared_bytes;
  uint32_t param_bytes;  // the packed parameters at bulk offset `param_offset`
  uint64_t param_offset;
  uint32_t piece_blocks;  // 0: the whole grid at once
};

// The largest built-in argument block (cls::MriqArgs: nine pointers and two counts).
inline constexpr size_t KERNEL_ARGS_BYTES = 80;

struct Command {
  Op op;
  uint32_t stream;
  uint32_t seq;    // the fence value written when the command is done
  uint32_t flags;  // FENCE
  uint64_t a, b, c;
  union {
    LaunchArgs launch;
    // kernel: the kernel's argument block (cls::SaxpyArgs, ... as the
    // model reads them) with device VAs in its pointer fields.
    alignas(8) std::byte args[KERNEL_ARGS_BYTES];
  };
  uint64_t data_va;  // load_module: where the guest put the module's variables (SET_MODULE_DATA)
};
inline constexpr uint32_t FENCE = 1;          // write fence[stream] = seq after the work
inline constexpr uint32_t MAP_READ_ONLY = 2;  // map: the blocks are mapped read-only
static_assert(sizeof(Command) <= 128);
// A command with its operands; whoever submits it sets seq and flags.
inline Command make_command(Op op, uint32_t stream, uint64_t a = 0, uint64_t b = 0, uint64_t c = 0) {
  Command k{};
  k.op = op;
  k.stream = stream;
  k.a = a;
  k.b = b;
  k.c = c;
  return k;
}

enum class WorkerState : uint32_t { starting = 0, ready = 1, failed = 2, dead = 3 };
const char* state_name(WorkerState s);

// The worker's reason for a device error, in the header.
struct ErrorRecord {
  std::atomic<uint32_t> set;  // 1 once the rest is written
  uint32_t cuda_code;         // CUresult, or FAKE_FAULT on the fake device
  uint32_t seq, stream;
  uint64_t addr;  // a faulting VA where known
  char message[ERROR_MESSAGE_BYTES];
};
inline constexpr uint32_t CUDA_ILLEGAL_ADDRESS = 700;  // CUDA_ERROR_ILLEGAL_ADDRESS

// The worker's answer to a load_module its device refused (the text does
// not parse, its variables cannot be placed, the driver refuses it with
// the context intact): the worker goes on and the command's fence passes;
// the mediator reads the reason here (the last refusal: seq and stream
// name the command).
struct ModuleRefusal {
  std::atomic<uint32_t> seq;  // written last; 0: none since the worker started
  uint32_t stream;
  uint32_t cuda_code;  // 0: refused before the driver saw it
  char message[ERROR_MESSAGE_BYTES];
};

struct alignas(64) Header {
  uint32_t magic, version;
  std::atomic<uint32_t> state;  // WorkerState
  std::atomic<uint32_t> pid;
  char device_name[96];
  ErrorRecord error;
  ModuleRefusal refusal;
};

struct alignas(64) RingIndex {
  std::atomic<uint32_t> value;
  std::atomic<uint32_t> sleeping;  // head: the worker is about to block on its eventfd
  char pad[56];
};

struct Region {
  Header header;
  RingIndex head;  // written by the mediator
  RingIndex tail;  // written by the worker
  alignas(128) Command slots[RING_SLOTS];
  alignas(PAGE_BYTES) std::atomic<uint32_t> fence[NUM_STREAMS];
  alignas(PAGE_BYTES) std::byte bulk[BULK_BYTES];
};

// A mapping of the region; the mediator creates it, the worker attaches
// to the inherited descriptor.
class Shared {
 public:
  static Result<std::unique_ptr<Shared>> create();
  static Result<std::unique_ptr<Shared>> attach(int fd);
  ~Shared();
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;
  Region& region() { return *region_; }
  int fd() const { return fd_; }

 private:
  Shared(int fd, Region* region) : fd_(fd), region_(region) {}
  int fd_;
  Region* region_;
};

// True once fence `value` reached `seq` (modulo 2^32).
inline bool fence_passed(uint32_t value, uint32_t seq) { return static_cast<int32_t>(value - seq) >= 0; }

// The ring's two ends. push fails (false) when the ring is full; pop
// returns false when it is empty.
[[nodiscard]] bool ring_push(Region& r, const Command& c);
[[nodiscard]] bool ring_pop(Region& r, Command& c);
bool ring_empty(const Region& r);

}  // namespace vgpu::worker
