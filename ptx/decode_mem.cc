// SPDX-License-Identifier: GPL-2.0-or-later
// Decoders of memory, call, synchronisation and warp instructions.
#include "ptx/decode.h"

namespace vgpu::ptx {
namespace {

constexpr uint32_t kAllLanes = 0xffffffffu;  // a membermask naming every lane of the warp

constexpr std::pair<std::string_view, AtomOp> kAtomOps[] = {{"add", AtomOp::add},   {"min", AtomOp::min},
                                                            {"max", AtomOp::max},   {"inc", AtomOp::inc},
                                                            {"dec", AtomOp::dec},   {"and", AtomOp::and_},
                                                            {"or", AtomOp::or_},    {"xor", AtomOp::xor_},
                                                            {"exch", AtomOp::exch}, {"cas", AtomOp::cas}};
constexpr std::pair<std::string_view, ShflMode> kShflModes[] = {{"up", ShflMode::up},
                                                                {"down", ShflMode::down},
                                                                {"bfly", ShflMode::bfly},
                                                                {"idx", ShflMode::idx}};
constexpr std::pair<std::string_view, VoteMode> kVoteModes[] = {{"all", VoteMode::all},
                                                                {"any", VoteMode::any},
                                                                {"uni", VoteMode::uni},
                                                                {"ballot", VoteMode::ballot}};

}  // namespace

// call[.uni] [(ret, ...),] name[, (arg, ...)];
Status Decoder::call() {
  PTX_TRY(no_words_left());
  std::vector<std::string_view> rets, args;
  auto names = [&](std::vector<std::string_view>& out) -> Status {
    if (p.accept(")")) return {};
    do {
      const Token& t = p.next();
      if (t.kind != Token::Kind::word) return bad("bad call argument '" + std::string(t.text) + "'");
      out.push_back(t.text);
    } while (p.accept(","));
    return p.expect(")");
  };
  if (p.accept("(")) {
    PTX_TRY(names(rets));
    PTX_TRY(p.expect(","));
  }
  const Token& fn = p.next();
  if (fn.kind != Token::Kind::word) return bad("expected a function name");
  if (fn.text[0] == '%')
    return p.error_at(ParseStatus::unsupported, line,
                      "unsupported instruction '" + std::string(opcode) + "' (indirect call)");
  if (p.accept(",")) {
    PTX_TRY(p.expect("("));
    PTX_TRY(names(args));
    if (p.accept(","))
      return p.error_at(ParseStatus::unsupported, line,
                        "unsupported instruction '" + std::string(opcode) + "' (call through a prototype)");
  }
  PTX_TRY(p.expect(";"));
  auto it = p.func_index_.find(std::string(fn.text));
  if (it == p.func_index_.end()) return bad("call to undeclared function '" + std::string(fn.text) + "'");
  const Function& callee = p.prog_->functions[it->second];
  if (callee.is_entry) return p.error_at(ParseStatus::unsupported, line, "unsupported call of an entry");
  if (rets.size() != callee.ret_params.size() || args.size() != callee.params.size())
    return bad("wrong number of arguments for '" + callee.name + "'");
  CallSite site;
  site.callee = it->second;
  auto copy = [&](std::string_view name, const Function::Slot& slot, std::vector<CallSite::Copy>& out) -> Status {
    const Symbol* s = p.lookup_symbol(name);
    if (!s) {
      if (name[0] == '%')
        return p.error_at(ParseStatus::unsupported, line, "unsupported register argument '" + std::string(name) + "'");
      return bad("unknown parameter '" + std::string(name) + "'");
    }
    if (s->base != AddrBase::fparam) return bad("'" + std::string(name) + "' is not a .param variable");
    uint32_t size = static_cast<uint32_t>(std::min<uint64_t>(s->size, slot.size));
    out.push_back({static_cast<uint32_t>(s->offset), slot.offset, size});
    return {};
  };
  for (size_t i = 0; i < args.size(); ++i) PTX_TRY(copy(args[i], callee.params[i], site.args));
  for (size_t i = 0; i < rets.size(); ++i) PTX_TRY(copy(rets[i], callee.ret_params[i], site.rets));
  in.target = static_cast<uint32_t>(p.prog_->calls.size());
  p.pending_calls_.push_back({in.target, callee.name, line});
  p.prog_->calls.push_back(std::move(site));
  return push();
}

Status Decoder::memory() {
  PTX_TRY(no_words_left());
  PTX_TRY(one_type());
  if (in.type == Type::pred) return unsupported();
  if (type_bytes(in.type) * in.vec > 16) return unsupported();
  PTX_TRY(count(2));
  bool load = in.op == Op::ld;
  size_t vi = load ? 0 : 1;
  PTX_TRY(address(in.src[0], load ? 1 : 0, 2));
  const RawOperand& v = ops[vi];
  if (in.vec > 1) {
    if (v.op.kind != Operand::Kind::vec || v.op.count != in.vec)
      return bad("expected a vector of " + std::to_string(in.vec));
    in.dst[0] = v.op;
  } else if (load) {
    PTX_TRY(dest(in.dst[0], 0));
  } else {
    PTX_TRY(value(in.dst[0], 1, in.type));  // st's value travels in dst[0]
  }
  return push();
}

// atom.space.op.type d, [a], b[, c]   red.space.op.type [a], b
Status Decoder::atomic() {
  if (!take_one(kAtomOps, in.sub)) return bad("no operation");
  take("noftz");
  PTX_TRY(no_words_left());
  PTX_TRY(one_type());
  if (in.vec != 1 || in.type == Type::pred || type_bytes(in.type) < 4) return unsupported();
  if (in.space != StateSpace::generic && in.space != StateSpace::global && in.space != StateSpace::shared)
    return bad("atomic on this space");
  auto op = static_cast<AtomOp>(in.sub);
  if (is_float(in.type) && op != AtomOp::add && op != AtomOp::exch) return unsupported();
  bool red = in.op == Op::red;
  size_t n = (red ? 2 : 3) + (op == AtomOp::cas ? 1 : 0);
  PTX_TRY(count(n));
  size_t a = red ? 0 : 1;
  if (!red) PTX_TRY(dest(in.dst[0], 0));
  PTX_TRY(address(in.src[0], a, 2));
  PTX_TRY(value(in.src[1], a + 1, in.type));
  if (op == AtomOp::cas) PTX_TRY(value(in.src[2], a + 2, in.type));
  return push();
}

// bar.sync a[, b]   barrier.sync[.aligned] a[, b]   bar.warp.sync mask
Status Decoder::barrier() {
  bool warp = take("warp");
  bool sync = take("sync");
  if (!sync && (take("arrive") || take("red"))) return unsupported();
  PTX_TRY(no_words_left());
  if (warp) {
    in.op = Op::nop;
    PTX_TRY(count(1));
    PTX_TRY(value(in.src[0], 0, Type::b32));
    return push();
  }
  if (ops.empty() || ops.size() > 2) return bad("expected 1 or 2 operands");
  PTX_TRY(value(in.src[0], 0, Type::u32));
  if (ops.size() == 2) PTX_TRY(value(in.src[1], 1, Type::u32));
  return push();
}

Status Decoder::nop() {
  if (opcode.starts_with("fence.proxy") || opcode.starts_with("fence.mbarrier")) return unsupported();
  words.clear();
  PTX_TRY(count(0));
  return push();
}

// shfl[.sync].mode.b32 d[|p], a, b, c[, membermask]
Status Decoder::shfl() {
  bool sync = take("sync");
  if (!take_one(kShflModes, in.sub)) return bad("no mode");
  PTX_TRY(no_words_left());
  PTX_TRY(one_type());
  if (type_bytes(in.type) != 4 || in.type == Type::f32) {
    if (in.type != Type::b32 && in.type != Type::f32) return unsupported();
  }
  PTX_TRY(count(sync ? 5 : 4));
  if (ops[0].pair) {
    in.dst[1] = ops[0].second;
    ops[0].pair = false;
  }
  PTX_TRY(dest(in.dst[0], 0));
  PTX_TRY(value(in.src[0], 1, Type::b32));
  PTX_TRY(value(in.src[1], 2, Type::u32));
  PTX_TRY(value(in.src[2], 3, Type::u32));
  PTX_TRY(membermask(in.src[3], 4, sync));
  return push();
}

Status Decoder::membermask(Operand& out, size_t i, bool sync) {
  if (sync) return value(out, i, Type::u32);
  out.kind = Operand::Kind::imm;
  out.imm = kAllLanes;
  return {};
}

// vote[.sync].mode.pred d, p[, membermask]   vote[.sync].ballot.b32 d, p[, membermask]
Status Decoder::vote() {
  bool sync = take("sync");
  if (!take_one(kVoteModes, in.sub)) return bad("no mode");
  PTX_TRY(no_words_left());
  PTX_TRY(one_type());
  bool ballot = in.sub == static_cast<uint8_t>(VoteMode::ballot);
  if (ballot ? in.type != Type::b32 : in.type != Type::pred) return unsupported();
  PTX_TRY(dest_and_values({Type::pred}, sync ? 1 : 0));
  PTX_TRY(membermask(in.src[1], 2, sync));
  return push();
}

Status Decoder::activemask() {
  PTX_TRY(no_words_left());
  PTX_TRY(one_type());
  PTX_TRY(dest_and_values({}));
  return push();
}

}  // namespace vgpu::ptx
