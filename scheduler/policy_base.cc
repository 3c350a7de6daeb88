// SPDX-License-Identifier: GPL-2.0-or-later
#include "scheduler/policy_base.h"

#include <algorithm>
#include <string>

namespace vgpu::sched {

Status PolicyBase::add_vm(VmId id, uint32_t weight) {
  if (weight == 0) return fail(Errc::invalid_argument, "vm " + std::to_string(id) + ": weight 0 is not positive");
  if (vms_.contains(id)) return fail(Errc::invalid_argument, "vm " + std::to_string(id) + ": already registered");
  Vm v;
  v.weight = weight;
  vms_.emplace(id, std::move(v));
  run_list_.push_back(id);
  total_weight_ += weight;
  return {};
}

Status PolicyBase::remove_vm(VmId id) {
  auto it = vms_.find(id);
  if (it == vms_.end()) return fail(Errc::not_found, "vm " + std::to_string(id) + ": not registered");
  total_weight_ -= it->second.weight;
  vms_.erase(it);
  std::erase(run_list_, id);
  if (last_completed_ == id) last_completed_.reset();
  return {};
}

Status PolicyBase::set_weight(VmId id, uint32_t weight) {
  if (weight == 0) return fail(Errc::invalid_argument, "vm " + std::to_string(id) + ": weight 0 is not positive");
  auto it = vms_.find(id);
  if (it == vms_.end()) return fail(Errc::not_found, "vm " + std::to_string(id) + ": not registered");
  total_weight_ = total_weight_ - it->second.weight + weight;
  it->second.weight = weight;
  return {};
}

uint32_t PolicyBase::weight(VmId id) const {
  auto it = vms_.find(id);
  return it == vms_.end() ? 0 : it->second.weight;
}

Status PolicyBase::arrive(Submission s, uint64_t now_ns) {
  auto it = vms_.find(s.vm);
  if (it == vms_.end()) return fail(Errc::not_found, "vm " + std::to_string(s.vm) + ": not registered");
  advance(now_ns);
  s.arrival_ns = now_ns;
  s.seq = next_seq_++;
  it->second.queue.push_back(s);
  return {};
}

void PolicyBase::complete(VmId id, uint64_t start_ns, uint64_t end_ns) {
  advance(end_ns);
  auto it = vms_.find(id);
  if (it == vms_.end()) return;  // removed while its work ran
  const uint64_t exec = end_ns > start_ns ? end_ns - start_ns : 0;
  Vm& v = it->second;
  v.gpu_ns += exec;
  v.credit_ns -= static_cast<int64_t>(exec);
  v.interval_busy_ns += exec;
  last_completed_ = id;
  on_complete(id, exec);
}

uint64_t PolicyBase::gpu_ns(VmId id) const {
  auto it = vms_.find(id);
  return it == vms_.end() ? 0 : it->second.gpu_ns;
}

size_t PolicyBase::queued(VmId id) const {
  auto it = vms_.find(id);
  return it == vms_.end() ? 0 : it->second.queue.size();
}

void PolicyBase::start(uint64_t now_ns) {
  started_ = true;
  next_period_ns_ = now_ns + params_.period_ns;
  interval_start_ns_ = now_ns;
  // Gdev's credit thread replenishes once as it starts; a VM added later
  // starts with no budget and gets its first at the next period.
  replenish();
}

void PolicyBase::advance(uint64_t now_ns) {
  if (!started_) start(now_ns);
  while (now_ns >= next_period_ns_) {
    update_utilization(next_period_ns_);
    replenish();
    next_period_ns_ += params_.period_ns;
  }
}

void PolicyBase::replenish() {
  const auto limit = static_cast<int64_t>(params_.credit_limit());
  for (auto& [id, v] : vms_) {
    v.credit_ns += static_cast<int64_t>(static_cast<double>(params_.period_ns) * share(v));
    // Gdev: credit beyond the threshold is taken away, debt beyond it is
    // forgiven; either way the VM restarts from zero.
    if (v.credit_ns > limit || v.credit_ns < -limit) v.credit_ns = 0;
  }
}

void PolicyBase::update_utilization(uint64_t boundary_ns) {
  const uint64_t elapsed = boundary_ns - interval_start_ns_;
  if (elapsed == 0) return;
  for (auto& [id, v] : vms_)
    v.utilization = std::min(1.0, static_cast<double>(v.interval_busy_ns) / static_cast<double>(elapsed));
  if (elapsed >= params_.util_interval_ns) {
    for (auto& [id, v] : vms_) v.interval_busy_ns = 0;
    interval_start_ns_ = boundary_ns;
  }
}

double PolicyBase::share(const Vm& v) const {
  return total_weight_ ? static_cast<double>(v.weight) / static_cast<double>(total_weight_) : 0.0;
}

std::optional<VmId> PolicyBase::first_queued() const {
  for (VmId id : run_list_)
    if (!vms_.at(id).queue.empty()) return id;
  return std::nullopt;
}

bool PolicyBase::all_vms_queued() const {
  return std::ranges::all_of(vms_, [](const auto& kv) { return !kv.second.queue.empty(); });
}

void PolicyBase::demote(VmId id) {
  auto it = std::ranges::find(run_list_, id);
  if (it == run_list_.end()) return;
  run_list_.erase(it);
  run_list_.push_back(id);
}

Submission PolicyBase::pop(VmId id) {
  Vm& v = vms_.at(id);
  Submission s = v.queue.front();
  v.queue.pop_front();
  return s;
}

}  // namespace vgpu::sched
