// SPDX-License-Identifier: GPL-2.0-or-later
// A PTX module as vgpu reads it (docs/ptx.md): its entries with their
// parameter lists, its module-scope variables laid out in one data
// segment, and (for the interpreter) its functions pre-decoded. The same
// parser runs in the device (the model's interpreter, gpu/ptx/) and in the
// guest's libcuda (which needs the parameter layout to marshal
// cuLaunchKernel's kernelParams, and the variables' offsets for
// cuModuleGetGlobal), so both sides agree on every offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vgpu::ptx {

// Bounds on what one module may ask of the host (docs/ptx.md, "Limits").
struct ModuleLimits {
  uint64_t max_source_bytes = 4u << 20;  // PTX text
  uint32_t max_instructions = 1u << 20;  // all functions together
  uint32_t max_entries = 1024;
  uint64_t max_data_bytes = 64u << 20;  // .global + .const variables
  uint32_t max_static_shared_bytes = 48u << 10;
  uint32_t max_local_bytes = 16u << 10;  // one thread's .local frame of one function
  uint32_t max_param_bytes = 4096;       // one entry's parameter list
  uint32_t max_registers = 1u << 16;     // declared registers of one function
};

// Why a module was refused.
enum class ParseStatus : uint32_t {
  ok = 0,
  parse_error = 1,  // the text is not PTX as the grammar reads it
  unsupported = 2,  // valid PTX outside vgpu's subset (an instruction, a type, a directive)
  too_large = 3,    // beyond ModuleLimits
  bad_version = 4,  // no .version line, or a version newer than vgpu reads
};

struct ParseError {
  ParseStatus status;
  uint32_t line = 0;    // 1-based source line, 0 when none applies
  std::string message;  // names the token or instruction, e.g. "unsupported instruction 'tex.2d'"
};

// One parameter of an entry, in .entry order, naturally aligned (the
// layout cuLaunchKernel's packed buffer and the `extra` form use).
struct Param {
  std::string name;
  uint32_t offset = 0;  // bytes from the start of the parameter buffer
  uint32_t size = 0;    // bytes (a .b8 array's whole size)
  uint32_t align = 1;
};

struct EntryInfo {
  std::string name;
  std::vector<Param> params;
  uint32_t param_bytes = 0;          // end of the last parameter, unpadded
  uint32_t static_shared_bytes = 0;  // module-scope and entry-scope .shared variables it can reach
  uint32_t max_threads = 0;          // .maxntid product, 0 when absent
};

enum class Space : uint8_t { global, constant, shared };

// A module-scope variable. .global and .const ones live in the module's
// data segment in GPU memory at data_va + offset; .shared ones in each
// thread block's shared memory.
struct Variable {
  std::string name;
  Space space = Space::global;
  uint64_t offset = 0;  // in the data segment, or in shared memory
  uint64_t size = 0;
  uint32_t align = 1;
  std::vector<std::byte> init;  // initial bytes (size bytes), empty: zero
  bool external = false;        // `.extern .shared` (dynamic shared memory): size 0, offset = static end
};

struct Program;  // the pre-decoded functions (ptx/program.h), for the interpreter

class Module {
 public:
  std::string_view version() const { return version_; }  // the .version line's value, "7.0"
  std::string_view target() const { return target_; }    // the .target line's first word, "sm_70"
  const std::vector<EntryInfo>& entries() const { return entries_; }
  const std::vector<Variable>& variables() const { return variables_; }
  // Bytes of the data segment the module's .global/.const variables need.
  uint64_t data_bytes() const { return data_bytes_; }
  // Index of the entry with this name, or -1.
  int find_entry(std::string_view name) const;
  const Variable* find_variable(std::string_view name) const;
  // The data segment's initial contents (data_bytes() bytes).
  std::vector<std::byte> initial_data() const;
  const Program& program() const { return *program_; }

 private:
  friend class Parser;
  std::string version_, target_;
  std::vector<EntryInfo> entries_;
  std::vector<Variable> variables_;
  uint64_t data_bytes_ = 0;
  std::shared_ptr<const Program> program_;
};

// Parses PTX text (no NUL needed; a trailing NUL is ignored). The result is
// immutable and may be shared between threads and launches.
[[nodiscard]] std::expected<std::shared_ptr<const Module>, ParseError> parse_module(std::string_view text,
                                                                                    const ModuleLimits& limits = {});

}  // namespace vgpu::ptx
