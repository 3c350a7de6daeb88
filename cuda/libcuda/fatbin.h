// SPDX-License-Identifier: GPL-2.0-or-later
// NVIDIA's fat binary (what nvcc -fatbin writes and a program embeds), as
// measured on nvcc 13.0's output (docs/cuda-programs.md, "Fat binaries";
// cuda/libcuda/testdata/README.md): the one codec of the format in vgpu.
// Everything is little endian; every offset and flag is named once below.
//
//   container: a 16-byte header, then entries back to back up to the end:
//   entry:     a header (64 bytes or more), then its payload (padded to 8)
//
// parse() checks every size and offset against the bytes it is given and
// answers a malformed container with an Error, never a read outside them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <vector>

#include "cuda/include/cuda.h"

namespace vgpu::cuda::fatbin {

// A little-endian field: its offset in its header and its width in bytes.
struct Field {
  uint32_t at;
  uint32_t bytes;
};

// The container's header.
inline constexpr uint32_t MAGIC = 0xBA55ED50;
inline constexpr uint16_t CONTAINER_VERSION = 1;  // the only version seen
namespace container {
inline constexpr Field MAGIC_FIELD{0x00, 4};
inline constexpr Field VERSION{0x04, 2};
inline constexpr Field HEADER_SIZE{0x06, 2};  // 16: where the first entry starts
inline constexpr Field BODY_SIZE{0x08, 8};    // bytes of entries after the header
inline constexpr uint32_t HEADER_BYTES = 16;
}  // namespace container

// An entry's header: 64 bytes of fixed fields, then variable parts (the
// options, the source name) that fields of the 64 point into.
namespace entry {
inline constexpr Field KIND{0x00, 2};               // Kind
inline constexpr Field VERSION{0x02, 2};            // 0x0101 in every binary seen
inline constexpr Field HEADER_SIZE{0x04, 4};        // 64, 72, 80, 112, 128 seen
inline constexpr Field PAYLOAD_SIZE{0x08, 8};       // stored bytes, padded to 8
inline constexpr Field COMPRESSED_SIZE{0x10, 4};    // 0 when stored plain
inline constexpr Field OPTIONS{0x14, 4};            // 0, or where in the header the options' {offset, size} are
inline constexpr Field CODE_MINOR{0x18, 2};         // PTX: the ISA version (9.0); ELF: the cubin's (1.8)
inline constexpr Field CODE_MAJOR{0x1a, 2};         //
inline constexpr Field ARCH{0x1c, 4};               // 75: sm_75 (ELF) or compute_75 (PTX)
inline constexpr Field NAME_OFFSET{0x20, 4};        // the source file's name in the header (nvcc -G), or 0
inline constexpr Field NAME_SIZE{0x24, 4};          //
inline constexpr Field FLAGS{0x28, 8};              // FLAG_*
inline constexpr Field RESERVED{0x30, 8};           // 0 in every binary seen
inline constexpr Field UNCOMPRESSED_SIZE{0x38, 8};  // when compressed: the payload's size after
inline constexpr uint32_t BASE_BYTES = 0x40;
inline constexpr uint32_t MAX_HEADER_BYTES = 4096;  // larger is refused
// At OPTIONS, relative to the entry: the options' bytes (ptxas's command
// line for PTX: "-O1 "; a binary descriptor for sm_100+ ELF).
inline constexpr Field OPTIONS_OFFSET{0x00, 4};
inline constexpr Field OPTIONS_SIZE{0x04, 4};
inline constexpr uint32_t PAYLOAD_ALIGN = 8;
}  // namespace entry

enum class Kind : uint16_t { ptx = 1, elf = 2 };

inline constexpr uint64_t FLAG_64BIT = 0x1;
inline constexpr uint64_t FLAG_DEBUG = 0x2;            // nvcc -G
inline constexpr uint64_t FLAG_LINUX = 0x10;           // the host
inline constexpr uint64_t FLAG_LZ4 = 0x2000;           // the LZ4 block format (-Xfatbin=-compress-mode=speed)
inline constexpr uint64_t FLAG_ZSTD = 0x8000;          // a zstd frame (nvcc 13's default for PTX)
inline constexpr uint64_t FLAG_SM100_ELF = 0x1000000;  // seen on sm_100 and sm_120 ELF; meaning unknown

// The CUDA runtime's __fatBinC_Wrapper_t, what a program registers and
// may hand cuModuleLoadData: it points to the container.
inline constexpr uint32_t WRAPPER_MAGIC = 0x466243B1;
namespace wrapper {
inline constexpr Field MAGIC_FIELD{0x00, 4};
inline constexpr Field VERSION{0x04, 4};  // 1, or 2 for relocatable (-rdc) code
inline constexpr Field DATA{0x08, 8};     // the container's address
inline constexpr Field FILENAME_OR_FATBINS{0x10, 8};
inline constexpr uint32_t BYTES = 24;
inline constexpr uint32_t MIN_VERSION = 1, MAX_VERSION = 2;
}  // namespace wrapper

// Larger containers are refused before they are read.
inline constexpr uint64_t MAX_CONTAINER_BYTES = 256u << 20;

enum class Compression { none, lz4, zstd };

struct Entry {
  uint16_t kind = 0;  // Kind, or another value (kept, not used)
  uint16_t version = 0;
  uint32_t header_bytes = 0;
  uint64_t payload_bytes = 0;
  uint32_t compressed_bytes = 0;
  uint16_t code_major = 0, code_minor = 0;
  uint32_t arch = 0;
  uint64_t flags = 0;
  uint64_t uncompressed_bytes = 0;
  uint64_t offset = 0;                 // of its header in the container
  std::span<const std::byte> options;  // in the header; empty when none
  std::span<const std::byte> name;     // the source file's name; empty when none
  std::span<const std::byte> payload;  // as stored: compressed_bytes when compressed, else payload_bytes
  Compression compression = Compression::none;

  bool is_ptx() const { return kind == static_cast<uint16_t>(Kind::ptx); }
  bool is_elf() const { return kind == static_cast<uint16_t>(Kind::elf); }
  std::string arch_name() const;  // "compute_75" for PTX, "sm_75" otherwise
};

struct Container {
  uint16_t version = 0;
  uint16_t header_bytes = 0;
  uint64_t body_bytes = 0;
  std::vector<Entry> entries;
};

// Why a fat binary cannot be used: the CUresult cuModuleLoadData answers
// and a message for the error log.
struct Error {
  CUresult result = CUDA_ERROR_INVALID_IMAGE;
  std::string message;
};

// A field of a header (0 when `bytes` is too short for it: callers check
// sizes first, this keeps a mistake from reading past them).
uint64_t get(std::span<const std::byte> bytes, Field f);

// The container's size (header + body) from its first 16 bytes: an Error
// when they are not a container header or it is larger than max_bytes.
std::expected<uint64_t, Error> container_size(std::span<const std::byte> header, uint64_t max_bytes);

// The container at the start of `bytes` (bytes after its end are ignored).
// Its entries' spans point into `bytes`: keep them while they are used.
std::expected<Container, Error> parse(std::span<const std::byte> bytes);

// The entry's payload as its producer wrote it (decompressed), at most
// max_bytes long (an Error when it says it is longer).
std::expected<std::vector<std::byte>, Error> unpack(const Entry& e, uint64_t max_bytes);

// The LZ4 block format (FLAG_LZ4): exactly `size` bytes out, else an Error.
std::expected<std::vector<std::byte>, Error> lz4_decode(std::span<const std::byte> in, uint64_t size);

// What the device runs: its architecture (compute capability 7.0 -> 70)
// and the newest PTX ISA version it reads.
struct Target {
  uint32_t arch = 70;
  uint16_t ptx_major = 9, ptx_minor = 0;
};

// The PTX entry to run (docs/cuda-programs.md, "Fat binaries"): among PTX
// entries whose ISA version the target reads (all PTX entries when none
// does), the highest arch not above target.arch; when every arch is above
// it, the lowest; ties go to the newer ISA version, then the first entry.
// No PTX entry: NO_BINARY_FOR_GPU, the message naming the nvcc option that
// adds PTX.
std::expected<size_t, Error> choose_ptx(const Container& c, const Target& t);

// parse, choose_ptx and unpack: the chosen PTX text up to its NUL.
// Longer than max_text_bytes: INVALID_PTX.
std::expected<std::string, Error> extract_ptx(std::span<const std::byte> bytes, const Target& t,
                                              uint64_t max_text_bytes);

}  // namespace vgpu::cuda::fatbin
