// SPDX-License-Identifier: GPL-2.0-or-later
// Ops grouped by the operand types they take. The decoder refuses the
// other types (decode_ops.cc) and the interpreter gives a group one
// executor (gpu/ptx/exec_int.cc, exec_float.cc), from these same lists.
#pragma once

#include "ptx/program.h"

namespace vgpu::ptx {

// The bit and logic ops: integer types only (and, or, xor and not also
// take .pred).
constexpr bool is_bit_op(Op op) {
  switch (op) {
    case Op::and_:
    case Op::or_:
    case Op::xor_:
    case Op::not_:
    case Op::cnot:
    case Op::shl:
    case Op::shr:
    case Op::popc:
    case Op::clz:
    case Op::brev:
    case Op::bfe:
    case Op::bfi:
    case Op::prmt: return true;
    default: return false;
  }
}

// The ops of float types only.
constexpr bool is_float_only(Op op) {
  switch (op) {
    case Op::fma:
    case Op::rcp:
    case Op::sqrt:
    case Op::rsqrt:
    case Op::ex2:
    case Op::lg2:
    case Op::sin:
    case Op::cos:
    case Op::testp:
    case Op::copysign: return true;
    default: return false;
  }
}

// The ops of integer types only: the bit ops, rem, and the 24-bit
// multiplies and sad.
constexpr bool is_int_only(Op op) {
  return is_bit_op(op) || op == Op::rem || op == Op::mul24 || op == Op::mad24 || op == Op::sad;
}

}  // namespace vgpu::ptx
