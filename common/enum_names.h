// SPDX-License-Identifier: GPL-2.0-or-later
// A table of an enum's values and their names, read both ways: for the
// small enums a user names on a command line or in the environment.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace vgpu {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

// The name of `value` in `table`, "?" when it has none.
template <typename E, size_t N>
constexpr const char* name_of(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& row : table)
    if (row.value == value) return row.name;
  return "?";
}

// The value named `name` in `table`, if any.
template <typename E, size_t N>
constexpr std::optional<E> value_named(const EnumName<E> (&table)[N], std::string_view name) {
  for (const EnumName<E>& row : table)
    if (name == row.name) return row.value;
  return std::nullopt;
}

}  // namespace vgpu
