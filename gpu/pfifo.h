// SPDX-License-Identifier: GPL-2.0-or-later
// PFIFO: the channel table, the runlist, and the thread that services
// runnable channels round-robin: GPFIFO fetch, push-buffer decode, host
// class methods, and dispatch of engine work to one thread per engine.
//
// Locking: register state and channel slots are guarded by the model lock
// (Deps::mutex). Register handlers run under it. The run state of each
// channel (ChannelRun) belongs to the PFIFO thread, which executes methods
// without the lock and takes it briefly to publish results. Engine threads
// take it only to post a result or raise a non-stall interrupt.
#pragma once

#include <vector>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>

#include "common/clock.h"
#include "common/log.h"
#include "gpu/channel.h"
#include "gpu/channel_image.h"
#include "gpu/channel_table.h"
#include "gpu/engine_thread.h"
#include "gpu/fault_log.h"
#include "gpu/mem/mmu.h"
#include "gpu/mem/vram.h"
#include "gpu/notify.h"
#include "common/reg_table.h"
#include "gpu/kernels/kernels.h"

namespace vgpu::gpu {

class ModuleCache;  // gpu/engines/module_cache.h

// Engine work of channel `chid`, with the last resort for anything it
// throws (host memory exhausted, a bug): ChannelError::internal and a
// logged internal error, never an exception on an engine thread.
MethodDone run_engine_work(Log& log, uint32_t chid, const std::function<MethodDone()>& work);

class Pfifo {
 public:
  struct Deps {
    Vram& vram;
    Mmu& mmu;
    Clock& clock;
    const kernels::CostModel& cost;
    std::mutex& mutex;  // the model lock
    FaultLog& faults;
    EventQueue& events;
    Log& log;                            // internal errors (a failed method or thread)
    std::function<bool()> unit_enabled;  // PMC.ENABLE PFIFO (lock held)
    std::function<bool()> tick;          // periodic work of the model (lock held): true if it raised anything
    std::function<void()> notify;        // deliver interrupts and events (no lock held)
    std::function<void(uint64_t pdb)> tlb_invalidate;  // a channel's MEM_OP invalidate (no lock held)
    DeviceEngines* device = nullptr;                   // engines' work on a GPU (docs/cuda.md); none: the model
    ModuleCache* modules = nullptr;                    // parsed PTX modules of the device (§10.6)
  };

  explicit Pfifo(Deps deps);
  ~Pfifo();
  Pfifo(const Pfifo&) = delete;
  Pfifo& operator=(const Pfifo&) = delete;

  void start();
  void stop();  // joins the PFIFO thread, then the engine threads

  std::vector<RegRow> registers();
  // PMC.ENABLE cleared PFIFO: forget channels, runlist, errors (lock held).
  void reset();
  // Pending and enabled PFIFO interrupts (lock held).
  uint32_t pending() const { return intr() & intr_en_; }
  // Per message vector: non-stall interrupts, channel errors raised while
  // deliverable, counted from the start; each sends a message (lock held).
  std::array<uint64_t, regs::pci::MSI_VECTORS> raised() const { return raised_; }

  // A BAR1 write landed at this offset; wakes PFIFO if it is a GP_PUT.
  // Releases the GPU wrote after engine work, which PFIFO then did not
  // write (ChannelContext::following_release; docs/cuda.md, "Fences").
  uint64_t device_releases() const { return device_releases_.load(std::memory_order_relaxed); }

  // Migration (docs/migration.md M4, channel_image.h): the run state of a
  // channel that is not runnable, not being serviced and has no engine
  // work outstanding; a run not loaded since its bind has none to carry.
  [[nodiscard]] Result<ChannelImage> save_channel(uint32_t chid);
  // Into a channel bound and not yet run since: taken up when it loads.
  [[nodiscard]] Status restore_channel(uint32_t chid, const ChannelImage& image);
  // Waits until the thread is out of an unrunnable channel's slice (no
  // method of it runs any more); false if it is runnable or the time ran out.
  [[nodiscard]] bool wait_stopped(uint32_t chid, uint64_t timeout_ns);
  void doorbell(uint64_t bar1_offset);
  void wake();
  bool wait_idle(uint64_t timeout_ns);

  // Poll period of the PFIFO thread: GP_PUT written behind its back,
  // semaphores written by the CPU, the PTIMER alarm.
  static constexpr uint64_t POLL_NS = 1'000'000;
  // Out of work with its engines idle, the thread looks for more this long
  // before it sleeps, as long as the last work arrived within it after the
  // thread ran dry: a stream of short launches then never waits for the
  // wake-up of a sleeping thread (20-30 us to an idle core of a KVM guest),
  // while an idle GPU, or one whose engines compute, sleeps at once and
  // leaves the cores to them (docs/runtime.md, "Launch latency").
  static constexpr uint64_t IDLE_POLL_NS = 50'000;
  // With a device back end, while engine work runs on the GPU the thread
  // polls for its completion this long before it sleeps: a launch of up
  // to this long then costs no wake-up of PFIFO (10-20 us), and a longer
  // one costs a wake-up that is under 1% of it.
  static constexpr uint64_t DEVICE_POLL_NS = 2'000'000;
  static constexpr uint32_t SLICE_METHODS = 256;
  // Push-buffer words fetched at a time (64 KiB): what one channel's
  // segment costs the host, however long the GPFIFO entry.
  static constexpr uint32_t SEGMENT_WINDOW_WORDS = 16384;
  static constexpr uint32_t NONSTALL_ENGINE_HOST = 1;  // NONSTALL_ENGINE bit 0

 private:
  bool wait_out_of_service(std::unique_lock<std::mutex>& l, uint32_t chid,
                           std::chrono::steady_clock::time_point deadline);  // d_.mutex held
  struct Pick {
    uint32_t chid;
    uint64_t epoch;
    std::optional<MethodDone> engine_result;
  };
  enum class Step { done, blocked, engine, yield };
  using Stepped = std::expected<Step, ChannelFault>;
  using Ran = std::expected<void, ChannelFault>;

  // pfifo.cc: the thread.
  void loop();
  std::optional<Pick> pick();  // lock held
  bool schedulable(uint32_t chid) const;
  bool engines_idle() const;           // lock held
  bool has_work(uint32_t chid) const;  // lock held, PFIFO thread
  void drop_stale_runs();              // lock held, PFIFO thread
  void service(Pick pick);
  // Word `index` of the segment in progress, fetching the window holding it.
  Walk<uint32_t> segment_word(ChannelRun& run, uint32_t index);
  // Words [index, index + count) of the segment in progress, if one window
  // holds them (fetching it); nullopt otherwise or on a fault.
  std::optional<std::span<const uint32_t>> segment_words(ChannelRun& run, uint32_t index, uint32_t count);
  // service(), and the last resort for anything it throws: the channel
  // stops with ChannelError::internal and an internal error is logged.
  void service_guarded(Pick pick);
  void internal_failure(uint32_t chid, uint64_t epoch, const char* what);
  void publish(uint32_t chid, ChannelRun& run);  // mirrors and the idle event (delivered after the slice)
  bool all_idle() const;                         // lock held
  uint32_t gp_put(const ChannelRun& run) const { return d_.vram.read32(run.userd + regs::userd::GP_PUT); }

  // pfifo.cc: results, no lock held. fail() is the PFIFO thread's, inside
  // a slice; the others come from any thread.
  void fail(uint32_t chid, uint64_t epoch, ChannelFault fault);
  void raise_nonstall(uint32_t chid, uint64_t epoch);
  void semaphore_written();
  void post_engine_result(uint32_t chid, uint64_t epoch, MethodDone result);

  // channel_load.cc
  Ran load(uint32_t chid, uint32_t chan_inst, ChannelRun& run);
  // A run restored inside a segment, just loaded: busy since now, and its
  // divided work made again by its object (pfifo_migration.cc).
  Ran take_up_restored(uint32_t chid, ChannelRun& run);

  // gpfifo.cc
  Ran run_slice(uint32_t chid, ChannelRun& run);
  Ran fetch_entry(ChannelRun& run);
  void finish_entry(ChannelRun& run);
  void advance(ChannelRun& run);
  Stepped execute(uint32_t chid, ChannelRun& run, uint32_t subch, uint32_t method, uint32_t data);
  std::expected<std::optional<uint64_t>, ChannelFault> begin_operation(uint32_t chid, ChannelRun& run,
                                                                       const ClassObject& object, uint32_t method,
                                                                       std::optional<uint32_t> next);
  Stepped start_method_work(uint32_t chid, ChannelRun& run, MethodOutcome outcome, std::optional<uint64_t> budget,
                            uint32_t subch, uint32_t method);
  // With a device back end: the one-word release whose header is word
  // `next` of the segment, directly after the method being executed (the
  // driver's fence), which the method's engine work may write from the
  // GPU (docs/cuda.md, "Fences").
  std::optional<FollowingRelease> release_after(uint32_t chid, ChannelRun& run, uint32_t next);
  std::expected<std::optional<Step>, ChannelFault> execute_words(uint32_t chid, ChannelRun& run, uint32_t subch,
                                                                 uint32_t method);
  // Engine work of a channel's method (or one piece of divided work): on
  // its engine's thread, or on this one when brief and the engine is idle;
  // its result comes back through post_engine_result.
  void start_engine_job(uint32_t chid, uint64_t epoch, EngineId engine, std::function<MethodDone()> work, bool brief);
  // The time the next engine job of the channel may run: ENGINE_TIMEOUT,
  // and what is left of the operation's CHAN_WATCHDOG (none: no limit); 0
  // when the watchdog has nothing left (the work's next piece ends the
  // operation with timeout itself, so a user launch writes its report).
  std::expected<std::optional<uint64_t>, ChannelFault> engine_budget(uint32_t chid, const ChannelRun& run) const;
  // Divided work (§10.5): its next piece to the engine, a slice boundary,
  // and the channel's turn after one.
  void submit_piece(uint32_t chid, ChannelRun& run, std::optional<uint64_t> budget_ns);
  void slice_boundary(uint32_t chid, ChannelRun& run);
  bool runs_on(uint32_t slice, const ChannelRun& run, uint64_t now) const;
  Ran resume_divided(uint32_t chid, ChannelRun& run);

  // pfifo_regs.cc
  uint32_t intr() const;
  void submit_runlist(uint32_t value);
  void kick();  // lock held: wake the PFIFO thread

  Deps d_;
  ChannelTable channels_;
  std::array<ChannelRun, regs::NUM_CHANNELS> runs_;
  regs::ChannelBits loaded_runs_;  // runs_ that may be loaded (lock held): what drop_stale_runs looks at

  // Registers (lock held).
  uint32_t intr_ = 0;  // latched bits: ChanTableError, Runlist
  uint32_t intr_en_ = 0;
  uint32_t ctrl_ = 0;
  uint32_t pbdma_enable_ = 0;
  std::atomic<uint32_t> userd_base_{0};
  uint32_t runlist_base_ = 0;
  uint32_t runlist_intr_ = 0;
  uint32_t chan_table_error_ = 0;
  uint32_t nonstall_engine_ = 0;
  uint32_t preempt_ = 0;
  std::array<uint64_t, regs::pci::MSI_VECTORS> raised_{};  // never reset: compared for change
  std::optional<uint32_t> servicing_;                      // the channel whose slice the PFIFO thread is running

  // The thread.
  std::condition_variable cv_;        // work may be available
  std::condition_variable idle_cv_;   // a channel or engine made progress
  std::atomic<bool> kick_{false};     // written under the mutex; read without it while polling
  std::atomic<bool> waiting_{false};  // the thread waits for a kick (the launch trace's pfifo_busy)
  bool stop_ = false;
  uint64_t last_idle_ns_ = ~uint64_t{0};  // PFIFO thread: how long it last waited for a doorbell
  std::atomic<uint64_t> poll_round_{0};
  std::atomic<uint64_t> sem_epoch_{0};
  uint32_t next_chid_ = 0;
  std::thread thread_;
  std::array<std::unique_ptr<EngineThread>, 2> engines_;

  // ENGINE_TIMEOUT (docs/spec/vgpu.md §3.5).
  std::atomic<uint32_t> engine_timeout_ms_{0};  // ENGINE_TIMEOUT; read by the PFIFO thread
  // CHAN_SLICE (§10.5), read by the PFIFO thread.
  std::array<std::atomic<uint32_t>, regs::NUM_CHANNELS> chan_slice_{};
  // SLICE_YIELD (§10.5): read by the PFIFO thread at slice boundaries and
  // by engine threads inside on-demand pieces (ChannelContext::slice_yield).
  std::atomic<uint32_t> slice_yield_{0};
  // CHAN_WATCHDOG (ms), read by the PFIFO thread.
  std::array<std::atomic<uint32_t>, regs::NUM_CHANNELS> chan_watchdog_{};
  // When each channel's engine work in flight started on its engine (not
  // when it was queued there, behind another channel's work): written by
  // the engine thread before it posts the result, read by PFIFO after.
  std::array<std::atomic<uint64_t>, regs::NUM_CHANNELS> engine_job_start_ns_{};
  // FollowingRelease: the token of each channel's last release its
  // engine wrote from the GPU (stored by the engine thread before it posts
  // the result), and the next token to hand out (PFIFO thread).
  std::array<std::atomic<uint64_t>, regs::NUM_CHANNELS> release_written_{};
  uint64_t next_release_token_ = 0;
  std::atomic<uint64_t> device_releases_{0};
};

}  // namespace vgpu::gpu
