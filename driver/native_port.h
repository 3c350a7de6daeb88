// SPDX-License-Identifier: GPL-2.0-or-later
// The native port: the driver straight on the software GPU model (the
// baseline with no virtualization). Register and BAR accesses go to the
// model; map() gives direct host mappings of BAR1/BAR3 pages, built from
// the model's BAR translation and re-checked whenever its BAR generation
// changes. USERD pages are never mapped, so doorbells reach the model.
// It takes the model's message handler: each message counts (WithCountedIrqs).
// This is the only driver file that includes the model's headers.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "driver/pinned_ram.h"
#include "common/error.h"
#include "driver/counted_irqs.h"
#include "driver/port.h"
#include "gpu/gpu.h"
#include "gpu/mem/bar_window.h"

namespace vgpu::driver {

class NativePort final : public WithPinnedRam<WithCountedIrqs<Port>> {
 public:
  [[nodiscard]] static Result<std::unique_ptr<NativePort>> create(gpu::Gpu& gpu, bool direct_maps = true);

  uint32_t read32(Bar bar, uint64_t offset) override;
  void write32(Bar bar, uint64_t offset, uint32_t value) override;
  void fill32(Bar bar, uint64_t offset, uint64_t bytes, uint32_t value) override;
  std::span<std::byte> map(Bar bar, uint64_t offset, uint64_t len) override;
  uint64_t bar_size(Bar bar) const override;
  void relax() override;
  std::string name() const override { return "native"; }
  ~NativePort() override;

  gpu::Gpu& gpu() { return gpu_; }

 private:
  struct Window {
    std::unique_ptr<gpu::BarWindow> win;
    std::vector<uint64_t> page_vram;  // per 4 KiB page: VRAM address mapped, NONE if not
  };
  NativePort(gpu::Gpu& gpu, bool direct) : gpu_(gpu), direct_(direct) {}
  Window* window(Bar bar);
  void revalidate(Bar bar, Window& w);
  bool is_userd(Bar bar, uint64_t page);
  uint32_t* direct_word(Bar bar, uint64_t offset, bool write);

  gpu::Gpu& gpu_;
  bool direct_;
  Window bar1_, bar3_;
  uint64_t generation_ = 0;
  std::optional<uint32_t> userd_base_;  // USERD_BASE as last read; reset when this port writes it
};

}  // namespace vgpu::driver
