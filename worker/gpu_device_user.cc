// SPDX-License-Identifier: GPL-2.0-or-later
// User kernels on the per-VM workers (gpu_device.h, docs/cuda-worker.md
// "User kernels"): a channel's module goes to its VM's worker under a slot
// of its own (module_key), and a launch first makes the worker's compute
// aperture what the channel's page tables map (the conforming 2 MiB blocks
// of the VM's own part, plan_blocks), then queues the launch with the
// guest's parameters as they are: the kernel's pointers are guest VAs,
// mapped at the same addresses in the worker.
#include <algorithm>
#include <cstring>
#include "worker/gpu_device.h"

namespace vgpu::worker {

void WorkerGpuDevice::fail_stream(Stream s, regs::ChannelError code, std::string reason) {
  std::lock_guard lock(streams_mu_);
  if (!pending_[s % NUM_STREAMS]) pending_[s % NUM_STREAMS] = WorkerFailure{code, 0, std::move(reason)};
}

Result<std::optional<std::string>> WorkerGpuDevice::load_in_worker(Vm& vm, Stream s, uint32_t key, std::string_view ptx,
                                                                   uint64_t data_va) {
  if (ptx.size() > PARAM_AREA) return fail(Errc::invalid_argument, "worker: the module's text is over the bulk window");
  std::memcpy(vm.host->bulk(), ptx.data(), ptx.size());
  Command c = make_command(Op::load_module, s, key, 0, ptx.size());
  c.data_va = data_va;
  auto t = vm.host->submit(c, true);
  if (!t) {
    fail_vm(vm, {regs::ChannelError::kernel_error, 0, t.error().what()});
    return std::unexpected(t.error());
  }
  if (auto w = vm.host->wait(*t, deadline_); !w) {
    fail_vm(vm, w.error());
    return fail(Errc::device_error, w.error().reason);
  }
  if (auto why = vm.host->refusal(*t)) return std::optional<std::string>(*why);
  vm.modules[key] = Vm::Module{std::string(ptx), data_va, vm.host->pid()};
  return std::optional<std::string>();
}

Status WorkerGpuDevice::load_user_module(Stream s, uint32_t slot, std::string_view ptx, uint64_t data_va) {
  s %= NUM_STREAMS;
  if (slot >= cls::compute::MAX_MODULE_SLOTS) return fail(Errc::invalid_argument, "worker: module slot out of range");
  Vm* vm = nullptr;
  auto lock = usable(s, vm);
  if (vm == nullptr || !ready(*vm)) return fail(Errc::device_error, "worker: the channel's worker is not running");
  const uint32_t key = module_key(s, slot);
  vm->modules.erase(key);
  auto loaded = load_in_worker(*vm, s, key, ptx, data_va);
  if (!loaded) return std::unexpected(loaded.error());
  if (*loaded) return fail(Errc::invalid_argument, **loaded);
  return {};
}

// The blocks of the VM's part that the runs map by the aperture's rules;
// runs into other VRAM (another VM's) are left out, so they stay unmapped.
bool WorkerGpuDevice::set_aperture(Vm& vm, Stream s, std::span<const gpu::ApertureRun> runs) {
  const int pid = vm.host->pid();
  if (vm.aperture_pid == pid && std::ranges::equal(runs, vm.aperture_runs)) return true;
  std::vector<PageRun> pages;
  pages.reserve(runs.size());
  for (const gpu::ApertureRun& r : runs)
    if (r.phys >= vm.part.base && r.phys + r.bytes <= vm.part.base + vm.part.bytes)
      pages.push_back({r.va, r.phys - vm.part.base, r.bytes, r.writable});
  BlockPlan plan = plan_blocks(pages, vm.part.bytes);
  for (BlockRun& b : plan.runs) b.block += static_cast<uint32_t>(vm.part.base / BLOCK_BYTES);
  if (vm.aperture_pid != pid) vm.aperture.clear();  // a new worker has none mapped
  if (vm.aperture_pid == pid && plan.runs == vm.aperture) {
    vm.aperture_runs.assign(runs.begin(), runs.end());
    return true;
  }
  std::vector<Command> cmds;
  for (const BlockRun& old : vm.aperture)
    if (std::ranges::find(plan.runs, old) == plan.runs.end())
      cmds.push_back(make_command(Op::unmap, s, old.va, 0, old.count));
  for (const BlockRun& b : plan.runs)
    if (std::ranges::find(vm.aperture, b) == vm.aperture.end()) {
      Command c = make_command(Op::map, s, b.va, b.block, b.count);
      if (!b.writable) c.flags = MAP_READ_ONLY;
      cmds.push_back(c);
    }
  for (const Command& c : cmds)
    if (auto t = vm.host->submit(c, false); !t) {
      fail_vm(vm, {regs::ChannelError::kernel_error, 0, t.error().what()});
      return false;
    }
  vm.aperture = std::move(plan.runs);
  vm.aperture_pid = pid;
  vm.aperture_runs.assign(runs.begin(), runs.end());
  return true;
}

void WorkerGpuDevice::launch_user(Stream s, const gpu::DeviceUserLaunch& l) {
  s %= NUM_STREAMS;
  Vm* vm = nullptr;
  auto lock = usable(s, vm);
  if (vm == nullptr || !ready(*vm)) return;
  if (l.slot >= cls::compute::MAX_MODULE_SLOTS || l.params.size() > cls::compute::MAX_PARAM_BYTES)
    return fail_stream(s, regs::ChannelError::bad_argument, "worker: launch slot or parameters out of range");
  const uint32_t key = module_key(s, l.slot);
  auto m = vm->modules.find(key);
  if (m == vm->modules.end())
    return fail_stream(s, regs::ChannelError::internal, "worker: no module of the channel's slot in its worker");
  if (m->second.pid != vm->host->pid()) {  // the worker that had it ended: load it into this one
    const Vm::Module kept = m->second;
    auto again = load_in_worker(*vm, s, key, kept.text, kept.data_va);
    if (!again) return;  // the VM's streams failed
    if (*again) return fail_stream(s, regs::ChannelError::kernel_error, "worker: module refused on reload: " + **again);
  }
  if (!set_aperture(*vm, s, l.aperture)) return;
  const uint64_t params = PARAM_AREA + uint64_t{s} * cls::compute::MAX_PARAM_BYTES;
  if (!l.params.empty()) std::memcpy(vm->host->bulk() + params, l.params.data(), l.params.size());
  Command c = make_command(Op::launch, s);
  c.launch = LaunchArgs{.slot = key,
                        .entry = l.entry,
                        .grid = {l.grid[0], l.grid[1], l.grid[2]},
                        .block = {l.block[0], l.block[1], l.block[2]},
                        .shared_bytes = l.shared_bytes,
                        .param_bytes = static_cast<uint32_t>(l.params.size()),
                        .param_offset = params,
                        .piece_blocks = l.piece_blocks};
  // Fenced: the engine synchronizes right after, and waits for this fence
  // instead of a nop's (one command less through the ring a launch).
  if (auto t = vm->host->submit(c, true); !t) fail_vm(*vm, {regs::ChannelError::kernel_error, 0, t.error().what()});
}

}  // namespace vgpu::worker
