// SPDX-License-Identifier: GPL-2.0-or-later
// Guest RAM as the engines' system memory, for the DMA tests on the model
// (sysmem_dma_test.cc) and on the fake device (device_dma_test.cc):
// RAM_BYTES of memfd RAM mapped by sysmem PTEs at SYS_VA (and one page
// past its end), and a linear copy's methods (copy_methods.h).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "gpu/engines/copy_object.h"
#include "gpu/engines/testing/copy_methods.h"
#include "gpu/engines/testing/engine_env.h"

namespace vgpu::gpu::testing {

class SysmemEnv : public EngineEnv {
 protected:
  static constexpr uint64_t RAM_BYTES = 1 * MiB;
  static constexpr uint64_t SYS_VA = 0x40'0000'0000;  // RAM_BYTES mapped, then one page past RAM

  // The RAM as this channel's system memory, mapped at SYS_VA.
  void attach_ram() {
    auto r = MemfdRam::create(RAM_BYTES, "ram");
    ASSERT_TRUE(r.has_value());
    ram_ = *r;
    set_system_memory(ram_);
    for (uint64_t off = 0; off <= RAM_BYTES; off += fmt::SMALL_PAGE)
      ASSERT_TRUE(builder_->set_pte(pd_, SYS_VA + off, fmt::PageSize::small, fmt::pte::make_sysmem(off)).has_value());
  }

  static std::vector<Method> copy(uint64_t src, uint64_t dst, uint32_t bytes) {
    return copy_2d(src, dst, bytes, 1, bytes, bytes);
  }

  // A copy from VRAM that crosses RAM's end: a DMA error at the first byte
  // past RAM, and nothing written into RAM's last page.
  void expect_copy_past_ram_end_faults() {
    write_vec(LINEAR_VA, pattern(8192, 1));
    CopyObject ce;
    auto r = send(ce, copy(LINEAR_VA, SYS_VA + RAM_BYTES - 4096, 8192));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, regs::ChannelError::mmu_fault);
    ASSERT_TRUE(r.error().mmu.has_value());
    EXPECT_EQ(r.error().mmu->reason, regs::FaultReason::dma_error);
    EXPECT_EQ(r.error().mmu->va, SYS_VA + RAM_BYTES);
    EXPECT_EQ(ram_->data()[RAM_BYTES - 4096], std::byte{0});
  }

  std::shared_ptr<MemfdRam> ram_;
};

}  // namespace vgpu::gpu::testing
