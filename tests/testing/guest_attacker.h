// SPDX-License-Identifier: GPL-2.0-or-later
// A malicious guest's toolkit for the isolation tests: raw 32-bit BAR
// accesses through a VM's port, exactly as a guest makes them, plus the
// few walks a guest needs to find and corrupt its own tables (page
// directories, BAR instance blocks, GPFIFO rings). Nothing here reaches
// past the port: every effect goes through the mediator's trap paths.
#pragma once

#include <cstdint>
#include <optional>

#include "driver/port.h"
#include "vgpu/formats.h"
#include "vgpu/regs.h"

namespace vgpu::mediator::attack {

class GuestAttacker {
 public:
  explicit GuestAttacker(driver::Port& port) : port_(port) {}

  // ---- BAR0 registers
  uint32_t reg(uint32_t offset) { return port_.read32(driver::Bar::bar0, offset); }
  void set_reg(uint32_t offset, uint32_t value) { port_.write32(driver::Bar::bar0, offset, value); }
  uint32_t reg(Reg32 r) { return reg(r.offset); }
  void set_reg(Reg32 r, uint32_t value) { set_reg(r.offset, value); }

  // ---- BAR1 / BAR3, always through the trap path (never a direct map)
  uint32_t bar_read(driver::Bar bar, uint64_t offset) { return port_.read32(bar, offset); }
  void bar_write(driver::Bar bar, uint64_t offset, uint32_t value) { port_.write32(bar, offset, value); }

  // ---- guest VRAM through the PRAMIN window. The window register is
  // restored afterwards so that the guest's own driver (which caches it)
  // keeps working.
  uint32_t vram32(uint64_t gaddr);
  void set_vram32(uint64_t gaddr, uint32_t value);
  uint64_t vram64(uint64_t gaddr);
  void set_vram64(uint64_t gaddr, uint64_t value);  // low word first
  void copy_vram(uint64_t dst, uint64_t src, uint64_t bytes);

  // ---- page tables (guest addresses)
  static uint64_t pde_addr(uint64_t pd, uint64_t va) { return pd + fmt::PD.index(va) * fmt::PD.entry_bytes; }
  // Where the PTE mapping `va` with pages of `ps` lives; none when the
  // PDE names no such table.
  std::optional<uint64_t> pte_addr(uint64_t pd, uint64_t va, fmt::PageSize ps);
  // The guest address `va` maps to (valid PTE), if any.
  std::optional<uint64_t> translate(uint64_t pd, uint64_t va, fmt::PageSize ps);
  // MMU.INVALIDATE of one page directory, or of all (ALL_PDB).
  void invalidate(uint64_t pd, bool all_pdb = false);

  // ---- BAR1/BAR3: the instance block and page directory the guest set up
  uint64_t bar_inst(driver::Bar bar);
  uint64_t bar_pd(driver::Bar bar);

  // ---- channels
  uint32_t chan_error(uint32_t chid) { return reg(regs::pfifo::CHAN_ERROR[chid].offset); }
  // The BAR1 address of the guest's USERD array (channel 0's), as its
  // PFIFO.USERD_BASE says.
  uint64_t userd_base();
  // Polls CHAN_ERROR until non-zero or about `timeout_ms` pass; the code.
  uint32_t wait_chan_error(uint32_t chid, unsigned timeout_ms = 5000);
  // GP_PUT doorbell of a channel: a BAR1 write into the guest's USERD array.
  void doorbell(uint32_t chid, uint32_t put);
  uint32_t userd_read(uint32_t chid, uint32_t field);

  // A channel built by hand, not by the driver: an instance block at
  // guest address `inst` (zeroed, 4 KiB aligned) naming page directory
  // `pd`, a GPFIFO ring of 2^limit2 entries at `ring_va` and USERD at
  // `userd`; bound to `chid`, made runnable and listed alone in a runlist
  // written at `runlist`. Nothing is mapped: what the channel reaches is
  // what `pd` maps.
  struct RawChannel {
    uint32_t chid;
    uint64_t inst, pd, userd, runlist;
    uint64_t ring_va;
    uint32_t limit2 = 4;
  };
  void bind_raw_channel(const RawChannel& c);

  driver::Port& port() { return port_; }

 private:
  uint64_t window_offset(uint64_t gaddr);  // moves the window; returns the BAR0 offset

  driver::Port& port_;
};

// A stable FNV-1a hash of host VRAM words, for before/after comparisons.
uint64_t checksum(const uint32_t* words, uint64_t count);

}  // namespace vgpu::mediator::attack
