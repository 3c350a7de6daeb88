// SPDX-License-Identifier: GPL-2.0-or-later
#include <cstring>

#include "ptx/parser.h"

namespace vgpu::ptx {

int Module::find_entry(std::string_view name) const {
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].name == name) return static_cast<int>(i);
  return -1;
}

const Variable* Module::find_variable(std::string_view name) const {
  for (auto& v : variables_)
    if (v.name == name) return &v;
  return nullptr;
}

std::vector<std::byte> Module::initial_data() const {
  std::vector<std::byte> out(data_bytes_);
  for (auto& v : variables_) {
    if (v.space == Space::shared || v.init.empty()) continue;
    std::memcpy(out.data() + v.offset, v.init.data(), v.init.size());
  }
  return out;
}

std::expected<std::shared_ptr<const Module>, ParseError> parse_module(std::string_view text,
                                                                      const ModuleLimits& limits) {
  if (text.size() > limits.max_source_bytes)
    return std::unexpected(ParseError{ParseStatus::too_large, 0,
                                      "PTX text of " + std::to_string(text.size()) + " bytes is over the limit of " +
                                          std::to_string(limits.max_source_bytes)});
  auto toks = tokenize(text);
  if (!toks)
    return std::unexpected(ParseError{ParseStatus::parse_error, toks.error().line,
                                      toks.error().message + " at line " + std::to_string(toks.error().line)});
  Parser p(std::move(*toks), limits);
  return p.run();
}

}  // namespace vgpu::ptx
