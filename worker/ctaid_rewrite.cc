// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/ctaid_rewrite.h"

#include <algorithm>
#include <cctype>

namespace vgpu::worker {
namespace {

constexpr const char* AXES[3] = {"x", "y", "z"};

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.'; }

// The index just past the brace that closes the one at `open`, or npos.
size_t close_brace(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); i++) {
    if (s[i] == '{') depth++;
    if (s[i] == '}' && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

// Finds the next `.entry` or `.func` directive at or after `from`.
size_t next_directive(std::string_view s, size_t from, std::string_view word) {
  for (size_t at = s.find(word, from); at != std::string_view::npos; at = s.find(word, at + 1)) {
    bool starts = at == 0 || !ident_char(s[at - 1]);
    bool ends = at + word.size() < s.size() && !ident_char(s[at + word.size()]);
    if (starts && ends) return at;
  }
  return std::string_view::npos;
}

// True if `body` reads `reg` (%ctaid or %nctaid) in any form; `vector`
// set when one read is not of .x/.y/.z.
bool reads(std::string_view body, std::string_view reg, bool& vector) {
  bool any = false;
  for (size_t at = body.find(reg); at != std::string_view::npos; at = body.find(reg, at + 1)) {
    size_t end = at + reg.size();
    bool axis = end + 1 < body.size() && body[end] == '.' &&
                (body[end + 1] == 'x' || body[end + 1] == 'y' || body[end + 1] == 'z') &&
                (end + 2 >= body.size() || !ident_char(body[end + 2]));
    bool whole = end >= body.size() || !ident_char(body[end]) || axis;
    if (!whole) continue;
    any = true;
    if (!axis) vector = true;
  }
  return any;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::string slice_params() {
  std::string p;
  for (const char* a : AXES) p += "\n\t.param .u32 __vgpu_cta_off_" + std::string(a) + ",";
  for (const char* a : AXES) p += "\n\t.param .u32 __vgpu_ncta_" + std::string(a) + ",";
  p.pop_back();
  return p;
}

// Special registers are read only by mov (ptxas refuses them in add).
std::string prologue() {
  std::string p = "\n\t// vgpu: this piece's block offset and the whole grid (docs/cuda-worker.md)\n";
  for (const char* a : AXES) {
    std::string ax(a);
    p += "\t.reg .u32 %__vgpu_ctaid_" + ax + ";\n\t.reg .u32 %__vgpu_nctaid_" + ax + ";\n\t.reg .u32 %__vgpu_off_" +
         ax + ";\n";
    p += "\tmov.u32 %__vgpu_ctaid_" + ax + ", %ctaid." + ax + ";\n";
    p += "\tld.param.u32 %__vgpu_off_" + ax + ", [__vgpu_cta_off_" + ax + "];\n";
    p += "\tadd.u32 %__vgpu_ctaid_" + ax + ", %__vgpu_ctaid_" + ax + ", %__vgpu_off_" + ax + ";\n";
    p += "\tld.param.u32 %__vgpu_nctaid_" + ax + ", [__vgpu_ncta_" + ax + "];\n";
  }
  return p;
}

// Rewrites one entry [at, end): appends the parameters, inserts the
// prologue and renames the reads. Empty on a shape it does not know.
std::string rewrite_entry(std::string_view e, std::string& name) {
  size_t p = std::string_view(".entry").size();
  while (p < e.size() && std::isspace(static_cast<unsigned char>(e[p]))) p++;
  size_t n0 = p;
  while (p < e.size() && ident_char(e[p])) p++;
  name = std::string(e.substr(n0, p - n0));
  size_t open = e.find('{', p);
  size_t paren = e.find('(', p);
  if (open == std::string_view::npos || name.empty()) return "";
  std::string head;
  if (paren != std::string_view::npos && paren < open) {
    size_t close = e.find(')', paren);
    if (close == std::string_view::npos || close > open) return "";
    bool empty = e.substr(paren + 1, close - paren - 1).find_first_not_of(" \t\r\n") == std::string_view::npos;
    head = std::string(e.substr(0, close)) + (empty ? "" : ",") + slice_params() + "\n" +
           std::string(e.substr(close, open + 1 - close));
  } else {
    head = std::string(e.substr(0, p)) + "(" + slice_params() + "\n)" + std::string(e.substr(p, open + 1 - p));
  }
  std::string body(e.substr(open + 1));
  for (const char* a : AXES) {
    body = replace_all(body, "%nctaid." + std::string(a), "%__vgpu_nctaid_" + std::string(a));
    body = replace_all(body, "%ctaid." + std::string(a), "%__vgpu_ctaid_" + std::string(a));
  }
  return head + prologue() + body;
}

}  // namespace

RewrittenModule rewrite_ctaid(std::string_view ptx) {
  RewrittenModule out;
  out.text = std::string(ptx);
  for (size_t at = next_directive(ptx, 0, ".func"); at != std::string_view::npos;
       at = next_directive(ptx, at + 1, ".func")) {
    size_t open = ptx.find('{', at);
    size_t semi = ptx.find(';', at);
    if (open == std::string_view::npos || semi < open) continue;  // a declaration
    size_t end = close_brace(ptx, open);
    bool vector = false;
    std::string_view body = ptx.substr(open, end - open);
    if (reads(body, "%ctaid", vector) || reads(body, "%nctaid", vector)) {
      out.why_not = "a .func reads %ctaid or %nctaid";
      break;
    }
  }
  std::string text;
  size_t done = 0;
  for (size_t at = next_directive(ptx, 0, ".entry"); at != std::string_view::npos;
       at = next_directive(ptx, done, ".entry")) {
    size_t open = ptx.find('{', at);
    size_t end = open == std::string_view::npos ? open : close_brace(ptx, open);
    std::string name;
    if (end == std::string_view::npos) {
      out.why_not = "an .entry without a body";
      break;
    }
    std::string_view e = ptx.substr(at, end - at);
    bool vector = false;
    reads(e, "%ctaid", vector);
    reads(e, "%nctaid", vector);
    if (vector) out.why_not = "an .entry reads %ctaid or %nctaid as a vector";
    std::string r = rewrite_entry(e, name);
    if (r.empty() && out.why_not.empty()) out.why_not = "an .entry of a shape the rewrite does not know";
    out.entries.push_back(name);
    text += std::string(ptx.substr(done, at - done)) + r;
    done = end;
  }
  text += std::string(ptx.substr(done));
  if (out.why_not.empty() && !out.entries.empty()) {
    out.text = std::move(text);
    out.sliceable = true;
  }
  return out;
}

std::vector<GridPiece> grid_pieces(const uint32_t grid[3], uint64_t piece_blocks) {
  int d = grid[2] > 1 ? 2 : grid[1] > 1 ? 1 : 0;
  uint64_t slab = 1;
  for (int i = 0; i < 3; i++)
    if (i != d) slab *= grid[i];
  uint64_t step = piece_blocks == 0 ? grid[d] : std::max<uint64_t>(1, piece_blocks / std::max<uint64_t>(slab, 1));
  std::vector<GridPiece> out;
  for (uint64_t at = 0; at < grid[d]; at += step) {
    GridPiece p{{0, 0, 0}, {grid[0], grid[1], grid[2]}};
    p.offset[d] = static_cast<uint32_t>(at);
    p.grid[d] = static_cast<uint32_t>(std::min<uint64_t>(step, grid[d] - at));
    out.push_back(p);
  }
  return out;
}

}  // namespace vgpu::worker
