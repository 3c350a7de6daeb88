// SPDX-License-Identifier: GPL-2.0-or-later
// A GPFIFO channel (nouveau's gf100 channel bring-up): instance block with
// RAMFC and the address space's page directory, a GPFIFO ring and a
// push-buffer ring mapped in the channel's address space and in BAR1,
// bound in the channel table, started and put on the runlist. Submission
// copies words into the push-buffer ring, adds one GPFIFO entry and rings
// the doorbell (GP_PUT in USERD, always a 32-bit BAR1 write).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/error.h"
#include "driver/address_space.h"
#include "driver/bars.h"
#include "driver/fifo.h"
#include "driver/instmem.h"
#include "vgpu/regs.h"

namespace vgpu::driver {

struct ChannelConfig {
  uint32_t gpfifo_entries = 1024;  // power of two, at most 2^MAX_LIMIT2
  uint64_t pushbuf_bytes = 256 * 1024;
  uint64_t timeout_ns = 10'000'000'000;  // waits for ring space
  // Wait on interrupt messages where the port has them; false: poll, as
  // on a port without them (to compare the two).
  bool use_interrupts = true;
};

// What the channel needs from the device.
struct ChannelDeps {
  Port& port;
  InstMem& mem;
  RangeAllocator& heap;
  RangeAllocator& vram;
  Bars& bars;
  Fifo& fifo;
};

class Channel {
 public:
  [[nodiscard]] static Result<std::unique_ptr<Channel>> create(ChannelDeps deps, AddressSpace& as,
                                                               const ChannelConfig& config = {});
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Queues `words` as one GPFIFO entry and rings the doorbell.
  [[nodiscard]] Status submit(std::span<const uint32_t> words);

  // GP_GET from USERD.
  uint32_t gp_get();
  uint32_t gp_put() const { return gp_put_; }
  // CHAN_ERROR code (0 = none) and a message naming it.
  regs::ChannelError error();
  // The same code, read only when it may have changed: on a port with
  // interrupts, once per error message (spec §11.6), else every call. An
  // error stays until the channel is rebound, so the last code read holds.
  regs::ChannelError error_if_signalled();
  // Whether waits on this channel sleep on interrupt messages.
  bool interrupts() const { return config_.use_interrupts && d_.port.has_interrupts(); }
  Error error_status(regs::ChannelError code);

  uint32_t chid() const { return chid_; }
  uint64_t inst() const { return inst_; }
  uint64_t gpfifo_va() const { return gp_va_; }
  uint64_t pushbuf_va() const { return pb_va_; }
  uint64_t submits() const { return submits_; }
  // The GPU has consumed every entry submitted before the first
  // `submitted` ones' end (a fence released in a later entry passed):
  // ring space known without reading GP_GET (a trapped access in a VM).
  void consumed_before(uint64_t submitted);

 private:
  Channel(ChannelDeps deps, AddressSpace& as, const ChannelConfig& c) : d_(deps), as_(as), config_(c) {}
  [[nodiscard]] Status setup();
  void write_ramfc();
  void clear_userd();
  [[nodiscard]] Result<uint64_t> reserve_pushbuf(uint64_t bytes);

  ChannelDeps d_;
  AddressSpace& as_;
  ChannelConfig config_;
  uint32_t chid_ = regs::NUM_CHANNELS;
  bool on_runlist_ = false;
  uint64_t inst_ = 0;
  uint64_t gp_mem_ = 0, gp_va_ = 0, gp_bar1_ = 0;
  uint64_t pb_mem_ = 0, pb_va_ = 0, pb_bar1_ = 0;
  uint32_t gp_put_ = 0;
  uint64_t pb_put_ = 0;
  std::vector<uint64_t> pb_start_;  // push-buffer offset of each in-flight GPFIFO entry
  // GP_GET as last read: never ahead of the device's, so the space it
  // shows is there; USERD is read again only when it shows too little.
  uint32_t gp_get_seen_ = 0;
  std::optional<uint64_t> errors_seen_;  // error-message count at the last CHAN_ERROR read
  regs::ChannelError last_error_ = regs::ChannelError::none;
  uint64_t submits_ = 0;
};

}  // namespace vgpu::driver
