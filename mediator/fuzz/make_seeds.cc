// SPDX-License-Identifier: GPL-2.0-or-later
// Writes the kept seed inputs of the guest-program targets and of `wire`
// (docs/fuzzing.md): real sequences a guest or a client makes (a fill and
// its wait, a copy, a semaphore release in a push buffer, a GPFIFO entry
// and its doorbell, a page-table entry pointing elsewhere, PV batches that
// create, point and map an address space; an ATTACH and its accesses),
// encoded with the decoder's own opcode table (guest_fixture.h's opcode),
// so that a change of the decoder's mixes keeps them meaning the same.
//   fuzz_make_seeds ROOT   (ROOT: the source tree; writes each target's corpus)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mediator/fuzz/guest_fixture.h"
#include "vgpu/classes.h"
#include "vgpud/protocol.h"

namespace {

using namespace vgpu;
using namespace vgpu::fuzz;

struct Seed {
  Surface s;
  std::vector<uint8_t> b;
  Seed& u8(uint32_t v) {
    b.push_back(static_cast<uint8_t>(v));
    return *this;
  }
  Seed& u16(uint32_t v) { return u8(v).u8(v >> 8); }
  Seed& u32(uint32_t v) { return u16(v).u16(v >> 16); }
  Seed& op(Op o) {
    auto code = opcode(s, o);
    if (!code) {
      std::fprintf(stderr, "make_seeds: an operation its target's mix lacks\n");
      std::exit(1);
    }
    return u8(*code);
  }
  // Operations with their arguments, in the decoder's order (guest_ops.cc).
  Seed& fill(uint32_t buffer, uint32_t count) { return op(Op::fill).u8(buffer).u16(count); }
  Seed& wait() { return op(Op::wait); }
  Seed& copy(uint32_t dst, uint32_t src, uint32_t bytes) {
    return op(Op::copy).u8(dst).u8(src).u16(0).u16(0).u16(bytes);
  }
  Seed& word32(uint32_t v) { return u8(4).u32(v); }         // pick_word: a raw word
  Seed& va_of(uint32_t which) { return u8(which).u16(0); }  // pick_va: buffer a, b, pinned, ring, pushbuf
  Seed& gaddr(uint32_t which) { return u8(which).u16(0); }  // pick_gaddr: own buffer, ..., victim (2)
  Seed& reg_read(uint32_t row) { return op(Op::reg_read).u8(row).u8(0); }
  Seed& invalidate() { return op(Op::invalidate).u8(1); }
  // A PTE of buffer `va` pointing at VRAM (kind 0: own buffer a; 2: the
  // victim's sentinel as a naive mediator would see it) or at sysmem.
  Seed& pte_vram(uint32_t va, uint32_t where) {
    return op(Op::pte_write).va_of(va).u8(0).u8(0).u8(0).gaddr(where).u8(1);
  }
  Seed& pte_sysmem(uint32_t va, uint32_t bus) {
    return op(Op::pte_write).va_of(va).u8(0).u8(1).u8(0).u8(bus).u16(16).u8(1);
  }
};

Seed start(Surface s, uint8_t mode) { return Seed{s, {mode}}; }

// A PV operation record: code, flags, space, VA pick, address pick, pages.
void pv_op(Seed& x, regs::pv::Opcode code, uint32_t space, uint32_t va, uint32_t addr_kind, uint32_t pages) {
  x.u8(static_cast<uint32_t>(code)).u8(0).u8(space).va_of(va).u8(addr_kind);
  if (addr_kind % 3 == 0)
    x.gaddr(0);
  else if (addr_kind % 3 == 1)
    x.u8(0);
  else
    x.u8(0).u16(16);
  x.u8(pages);
}

std::vector<std::pair<std::string, Seed>> guest_seeds() {
  std::vector<std::pair<std::string, Seed>> out;
  const char* mode_names[] = {"fvnaive", "fvopt", "pv"};
  for (uint8_t m = 0; m < 3; ++m) {
    const std::string n = mode_names[m];
    out.push_back({"bar/fill-wait-" + n, start(Surface::bar, m).fill(0, 1024).wait().reg_read(0)});
    out.push_back(
        {"bar/registers-" + n, start(Surface::bar, m).reg_read(0).reg_read(10).invalidate().fill(1, 64).wait()});
    out.push_back({"pushbuf/fill-copy-" + n, start(Surface::pushbuf, m).fill(0, 4096).copy(1, 0, 4096).wait()});
    out.push_back(
        {"pagetable/redirect-copy-" + n, start(Surface::pagetable, m).pte_vram(1, 0).copy(1, 0, 4096).wait()});
    out.push_back({"pagetable/victim-pte-" + n, start(Surface::pagetable, m).pte_vram(0, 2).fill(0, 1024).wait()});
    out.push_back({"pagetable/sysmem-pte-" + n, start(Surface::pagetable, m).pte_sysmem(0, 0).copy(0, 2, 4096).wait()});
    out.push_back(
        {"pagetable/foreign-sysmem-" + n, start(Surface::pagetable, m).pte_sysmem(1, 1).fill(1, 1024).wait()});
  }
  // A host semaphore release into buffer a, the pushbuf and GPFIFO paths.
  namespace h = cls::host;
  Seed sem = start(Surface::pushbuf, 1).op(Op::pushbuf).u8(0);
  // kind 0x0b: an increasing header (kind % 5 == 1) of the method that
  // follows (bit 3) on its class's subchannel; the host class's row 0; 4 words.
  sem.u8(0x0b).u8(0).u16(h::SEMAPHORE_A).u8(3);
  sem.u8(1).va_of(0).u8(0).va_of(0).word32(0x1234);
  sem.word32(h::SemDOperation::make(static_cast<uint32_t>(h::SemOp::release)) | h::SemDReleaseSize4::mask);
  out.push_back({"pushbuf/semaphore-release", sem.wait()});
  out.push_back({"pushbuf/gpfifo-entry", start(Surface::pushbuf, 1).op(Op::gp_entry).u8(0).u8(1).u16(0).u16(4).wait()});
  out.push_back({"pushbuf/spin-reset", start(Surface::pushbuf, 0).op(Op::spin).u8(10).op(Op::reset).u8(0).fill(0, 64)});
  for (auto& [name, s] : std::vector<std::pair<std::string, Seed>>{
           {"device/fill-wait", start(Surface::device, 0).fill(0, 1024).wait()},
           {"device/copy-pinned", start(Surface::device, 0).op(Op::pinned_copy).u16(0).copy(1, 0, 4096).wait()},
           {"device/pte-reset",
            start(Surface::device, 0).pte_vram(1, 0).copy(1, 0, 64).wait().op(Op::reset).u8(0).fill(0, 64)},
       })
    out.push_back({name, s});
  // PV: a space created, pointed at a directory, a page mapped, flushed.
  Seed pv = start(Surface::pv, 2).op(Op::pv_batch).u8(1).u8(2);  // slot 1, 3 operations
  pv_op(pv, regs::pv::Opcode::create_space, 3, 0, 0, 0);
  pv_op(pv, regs::pv::Opcode::map, 3, 0, 0, 0);
  pv_op(pv, regs::pv::Opcode::flush, 3, 0, 0, 0);
  pv.u8(0).u8(1);
  out.push_back({"pv/create-map-flush", pv.copy(0, 1, 4096).wait()});
  Seed pvs = start(Surface::pv, 2).op(Op::pv_batch).u8(2).u8(0);  // slot 2, 1 operation
  pv_op(pvs, regs::pv::Opcode::map, 0, 0, 2, 0);                  // buffer a -> a page of its own RAM
  pvs.u8(0).u8(2);
  out.push_back({"pv/map-sysmem", pvs.fill(0, 1024).wait()});
  out.push_back({"pv/fill-wait", start(Surface::pv, 2).fill(0, 1024).wait()});
  return out;
}

// Inputs kept for regression tests rather than as seeds (replayed in
// order with the campaign's settings, not with the corpus): written to
// `regress/CASE/NN` below the target's folder.
std::vector<std::pair<std::string, Seed>> regress_seeds() {
  // A 3 s spin, then more pinned copies than the channel's GPFIFO holds
  // (1,024 entries) over 24 inputs of one kept attacker: the last copies
  // find no ring space behind the spin. The attacker's ring wait must be
  // the campaign's short one (run O's `pagetable` input that ran 20 s).
  constexpr uint32_t SPIN_NS = 3'000'000'000, INPUTS = 24;
  std::vector<std::pair<std::string, Seed>> out;
  for (uint32_t i = 0; i < INPUTS; ++i) {
    Seed in = start(Surface::pagetable, 1);
    uint32_t ops = 0;
    if (i == 0) {
      in.op(Op::launch).u8(static_cast<uint32_t>(cls::Kernel::spin) - 1).word32(SPIN_NS).word32(0);
      for (int w = 2; w < 16; ++w) in.u8(2).u8(0);  // pick_word: a zero byte
      in.u8(0).u8(0);                               // one block of one thread
      ++ops;
    }
    for (; ops < MAX_OPS; ++ops) in.op(Op::pinned_copy).u16(0);
    char name[64];
    std::snprintf(name, sizeof name, "pagetable/ring-behind-spin/%02u", i);
    out.push_back({name, in});
  }
  return out;
}

// wire: op byte (< 6: a structured message), then the message's picks
// (vgpud/fuzz/wire_fuzz.cc).
std::vector<std::pair<std::string, std::vector<uint8_t>>> wire_seeds() {
  Seed w{Surface::bar, {}};
  // ATTACH: version, 2 channels, 64 MiB, weight 1, options bar-remap + lazy shadow, a 3-letter name.
  w.u8(0).u8(0).u8(0).u8(1).u8(1).u8(1).u8(vgpud::proto::OPT_BAR_REMAP | vgpud::proto::OPT_LAZY_SHADOW).u8(2);
  w.u8(1).u8(1).u8(0).u8(0).u8(0);         // REGION_READ of BAR0, the first register row (BOOT_0)
  w.u8(2).u8(2).u8(0).u8(0).u8(0).u32(0);  // REGION_WRITE of the same
  w.u8(1).u8(1).u8(0x81).u32(0x1000);      // REGION_READ of BAR1
  w.u8(3).u8(3);                           // RESET
  Seed cut = w;
  cut.u8(0x81).u8(1).u8(0).u8(0).u8(0).u8(9);  // a read cut after 9 bytes
  return {{"attach-read-write-reset", w.b}, {"attach-cut", cut.b}};
}

void write(const std::filesystem::path& file, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds SOURCE_ROOT\n");
    return 2;
  }
  const std::filesystem::path root = argv[1];
  size_t n = 0;
  for (auto& [name, s] : guest_seeds()) {
    const std::string target = name.substr(0, name.find('/'));
    const std::string file = name.substr(name.find('/') + 1);
    std::filesystem::path dir = target == "bar" || target == "pv" ? root / "mediator/fuzz/corpus" / target
                                : target == "pagetable"           ? root / "shadow/fuzz/corpus"
                                                                  : root / "gpu/fuzz/corpus" / target;
    write(dir / ("seed-" + file), s.b);
    ++n;
  }
  for (auto& [name, s] : regress_seeds())
    write(root / "shadow/fuzz/regress" / name.substr(name.find('/') + 1), s.b), ++n;
  for (auto& [name, bytes] : wire_seeds()) write(root / "vgpud/fuzz/corpus" / ("seed-" + name), bytes), ++n;
  std::printf("wrote %zu seeds\n", n);
  return 0;
}
