// SPDX-License-Identifier: GPL-2.0-or-later
// The worker's life cycle on the fake device (docs/cuda-worker.md,
// "Containment"): spawn, work and fences, a hung worker past its
// deadline, a fault, a crash, respawn, and the error each gives.
#include "worker/worker_host.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <fstream>
#include <thread>

#include <cstring>
#include "common/launch_trace.h"
#include "worker/block_map.h"
#include "worker/testing/index_ptx.h"

namespace vgpu::worker {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t VA = APERTURE_BASE;

WorkerOptions fake(std::vector<std::string> extra = {}) {
  WorkerOptions o;
  o.binary = VGPU_WORKER_BIN;
  o.device = "fake";
  o.extra_args = std::move(extra);
  return o;
}


void run(WorkerHost& h, Command c) {
  auto t = h.submit(c);
  ASSERT_TRUE(t) << t.error().what();
  auto w = h.wait(*t, 5s);
  ASSERT_TRUE(w) << w.error().reason;
}

std::unique_ptr<WorkerHost> spawn(WorkerOptions o) {
  auto h = WorkerHost::spawn(std::move(o));
  EXPECT_TRUE(h) << h.error().what();
  return h ? std::move(*h) : nullptr;
}

uint32_t word_at(WorkerHost& h, uint64_t va) {
  run(h, make_command(Op::read, 0, va, 0, sizeof(uint32_t)));
  uint32_t v;
  memcpy(&v, h.bulk(), sizeof v);
  return v;
}

TEST(WorkerHost, AWorkerStartsReadyOnItsDevice) {
  auto h = spawn(fake());
  ASSERT_TRUE(h);
  WorkerInfo i = h->info();
  EXPECT_GT(i.pid, 0);
  EXPECT_EQ(i.state, WorkerState::ready);
  EXPECT_EQ(i.restarts, 0u);
  EXPECT_EQ(i.device, "fake device (host memory)");
}

TEST(WorkerHost, WorkOnMappedBlocksFencesAndReadsBack) {
  auto h = spawn(fake());
  ASSERT_TRUE(h);
  run(*h, make_command(Op::map, 3, VA, 7, 2));
  run(*h, make_command(Op::fill32, 3, VA + BLOCK_BYTES - 8, 0xabcd1234, 4));  // across the two blocks
  run(*h, make_command(Op::copy, 3, VA + 64, VA + BLOCK_BYTES - 4, 4));
  EXPECT_EQ(word_at(*h, VA + BLOCK_BYTES + 4), 0xabcd1234u);
  EXPECT_EQ(word_at(*h, VA + 64), 0xabcd1234u);
}

TEST(WorkerHost, ManyCommandsInOneDoorbellEachFenceInOrder) {
  auto h = spawn(fake());
  ASSERT_TRUE(h);
  run(*h, make_command(Op::map, 0, VA, 0, 1));
  std::vector<Ticket> tickets;
  for (uint32_t i = 0; i < 2 * RING_SLOTS; i++) {
    auto t = h->submit(make_command(Op::fill32, 1, VA + 4 * i, i, 1));
    ASSERT_TRUE(t);
    tickets.push_back(*t);
  }
  ASSERT_TRUE(h->wait(tickets.back(), 5s));
  for (auto& t : tickets) EXPECT_TRUE(h->wait(t, 0ns));
  EXPECT_EQ(word_at(*h, VA + 4 * 300), 300u);
}

// The ring traffic that VGPU_LAUNCH_TRACE's report divides by its
// launches: counted while the trace is on, not while it is off.
TEST(WorkerHost, TrafficIsCountedOnlyWhileTheLaunchTraceIsOn) {
  auto h = spawn(fake());
  ASSERT_TRUE(h);
  run(*h, make_command(Op::map, 0, VA, 0, 1));
  const WorkerTraffic off = worker_traffic();
  run(*h, make_command(Op::fill32, 0, VA, 1, 1));
  EXPECT_EQ(worker_traffic().commands, off.commands) << "trace off";
  LaunchTrace::enable(true);
  ASSERT_TRUE(h->submit(make_command(Op::fill32, 0, VA, 2, 1), false));
  run(*h, make_command(Op::fill32, 0, VA, 3, 1));
  LaunchTrace::enable(false);
  const WorkerTraffic on = worker_traffic();
  EXPECT_EQ(on.commands - off.commands, 2u);
  EXPECT_EQ(on.fenced - off.fenced, 1u);
  EXPECT_EQ(on.waits - off.waits, 1u);
  EXPECT_LE(on.bells - off.bells, 2u) << "at most one bell a command";
  EXPECT_LE(on.waits_slept - off.waits_slept, on.waits - off.waits);
  EXPECT_EQ(word_at(*h, VA), 3u);
}

// What synchronize waits for after a user launch (gpu_device.cc,
// fence_and_wait): the stream's last command when it carried the fence,
// else nothing (a nop is fenced instead).
TEST(WorkerHost, TheLastFencedCommandOfAStreamIsKnownUntilAnUnfencedOneFollows) {
  auto h = spawn(fake());
  ASSERT_TRUE(h);
  EXPECT_FALSE(h->last_fenced(2)) << "nothing submitted";
  run(*h, make_command(Op::map, 2, VA, 0, 1));
  auto fenced = h->submit(make_command(Op::fill32, 2, VA, 7, 1), true);
  ASSERT_TRUE(fenced);
  auto last = h->last_fenced(2);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->seq, fenced->seq);
  EXPECT_FALSE(h->last_fenced(3)) << "another stream";
  ASSERT_TRUE(h->wait(*last, 5s));
  EXPECT_EQ(word_at(*h, VA), 7u);
  ASSERT_TRUE(h->submit(make_command(Op::fill32, 2, VA, 8, 1), false));
  EXPECT_FALSE(h->last_fenced(2)) << "an unfenced command after it";
}

TEST(WorkerHost, AHungWorkerPastItsDeadlineIsKilledAndRespawned) {
  auto h = spawn(fake());
  ASSERT_TRUE(h);
  int first = h->info().pid;
  auto t = h->submit(make_command(Op::spin, 2, 3'600'000'000'000ull));  // an hour
  ASSERT_TRUE(t);
  auto w = h->wait(*t, 50ms);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().error, regs::ChannelError::timeout);
  EXPECT_NE(w.error().reason.find("past its deadline"), std::string::npos) << w.error().reason;
  EXPECT_EQ(h->info().state, WorkerState::dead);  // the failure is reported before any respawn
  EXPECT_EQ(kill(first, 0), -1);                  // killed and reaped
  ASSERT_TRUE(h->ensure_running());
  WorkerInfo i = h->info();
  EXPECT_EQ(i.restarts, 1u);
  EXPECT_NE(i.pid, first);
  EXPECT_EQ(i.state, WorkerState::ready);
  // The new worker starts with no blocks: a VM remaps them at its next launch.
  run(*h, make_command(Op::map, 0, VA, 0, 1));
  run(*h, make_command(Op::fill32, 0, VA, 5, 1));
  EXPECT_EQ(word_at(*h, VA), 5u);
}

TEST(WorkerHost, AFaultIsAnMmuFaultWithTheAddressAndTheWorkerIsRespawned) {
  auto h = spawn(fake());
  ASSERT_TRUE(h);
  auto t = h->submit(make_command(Op::fill32, 4, VA + 0x1230, 1, 1));  // nothing mapped
  ASSERT_TRUE(t);
  auto w = h->wait(*t, 5s);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().error, regs::ChannelError::mmu_fault);
  EXPECT_EQ(w.error().addr, VA + 0x1230);
  EXPECT_NE(w.error().reason.find("fill32: an access to an unmapped address"), std::string::npos) << w.error().reason;
  EXPECT_EQ(h->info().state, WorkerState::dead);
  run(*h, make_command(Op::nop, 4, 0));  // the next command starts a new worker
  EXPECT_EQ(h->info().restarts, 1u);
  EXPECT_EQ(h->info().state, WorkerState::ready);
}

TEST(WorkerHost, AReadOnlyBlockReadsAndAWriteToItFaults) {
  auto h = spawn(fake());
  ASSERT_TRUE(h);
  run(*h, make_command(Op::map, 0, VA, 0, 1));
  run(*h, make_command(Op::fill32, 0, VA, 9, 1));
  Command ro = make_command(Op::map, 0, VA + BLOCK_BYTES, 0, 1);  // the same block again, read-only
  ro.flags = MAP_READ_ONLY;
  run(*h, ro);
  EXPECT_EQ(word_at(*h, VA + BLOCK_BYTES), 9u);  // one block at two VAs aliases
  auto t = h->submit(make_command(Op::fill32, 0, VA + BLOCK_BYTES + 16, 1, 1));
  ASSERT_TRUE(t);
  auto w = h->wait(*t, 5s);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().error, regs::ChannelError::mmu_fault);
  EXPECT_EQ(w.error().addr, VA + BLOCK_BYTES + 16);
  EXPECT_NE(w.error().reason.find("a write to a read-only block"), std::string::npos) << w.error().reason;
}

TEST(WorkerHost, BytesWrittenToTheBulkWindowBeforeARespawnReachTheNewWorker) {
  auto h = spawn(fake());
  ASSERT_TRUE(h);
  h->kill_and_respawn("test");
  h->kill_and_respawn("test");                                // the second one: no worker since the first failure
  auto t = h->submit(make_command(Op::fill32, 0, VA, 1, 1));  // faults: the worker is reaped
  ASSERT_TRUE(t);
  ASSERT_FALSE(h->wait(*t, 5s));
  uint32_t v = 77;
  memcpy(h->bulk(), &v, sizeof v);  // before the next command starts a worker
  run(*h, make_command(Op::map, 0, VA, 0, 1));
  run(*h, make_command(Op::write, 0, VA, 0, sizeof v));
  EXPECT_EQ(word_at(*h, VA), 77u);
  EXPECT_EQ(h->info().restarts, 3u);
}

TEST(WorkerHost, AFillOfAnySizeFaultsPastTheMappedBlocks) {
  auto h = spawn(fake());
  ASSERT_TRUE(h);
  run(*h, make_command(Op::map, 0, VA, 0, 1));
  auto t = h->submit(make_command(Op::fill32, 0, VA, 3, uint64_t{1} << 60));
  ASSERT_TRUE(t);
  auto w = h->wait(*t, 5s);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().error, regs::ChannelError::mmu_fault);
  EXPECT_EQ(w.error().addr, VA + BLOCK_BYTES);
}

TEST(WorkerHost, CommandsWithoutFencesAreDoneByTheNextFence) {
  auto h = spawn(fake());
  ASSERT_TRUE(h);
  run(*h, make_command(Op::map, 0, VA, 0, 1));
  for (uint32_t i = 0; i < 1000; i++) ASSERT_TRUE(h->submit(make_command(Op::fill32, 1, VA + 4 * i, i + 1, 1), false));
  auto last = h->submit(make_command(Op::nop, 1, 0));
  ASSERT_TRUE(last);
  ASSERT_TRUE(h->wait(*last, 5s));
  EXPECT_EQ(word_at(*h, VA + 4 * 999), 1000u);
}

TEST(WorkerHost, AWorkerThatDiesGivesAKernelErrorNamingTheSignal) {
  auto h = spawn(fake({"--die-at-seq", "2"}));
  ASSERT_TRUE(h);
  run(*h, make_command(Op::nop, 6, 0));
  auto t = h->submit(make_command(Op::nop, 6, 0));
  ASSERT_TRUE(t);
  auto w = h->wait(*t, 5s);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().error, regs::ChannelError::kernel_error);
  EXPECT_NE(w.error().reason.find("worker died: killed by signal"), std::string::npos) << w.error().reason;
  ASSERT_TRUE(h->ensure_running());
  EXPECT_EQ(h->info().restarts, 1u);
}

TEST(WorkerHost, AWaitOnACommandOfAKilledWorkerGetsItsFailure) {
  auto h = spawn(fake());
  ASSERT_TRUE(h);
  auto spin = h->submit(make_command(Op::spin, 1, 3'600'000'000'000ull));
  auto other = h->submit(make_command(Op::nop, 2, 0));  // behind the spin in the ring
  ASSERT_TRUE(spin && other);
  ASSERT_FALSE(h->wait(*spin, 20ms));
  auto w = h->wait(*other, 1s);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().error, regs::ChannelError::timeout);
}

TEST(WorkerHost, AWorkerRestartedTooOftenIsNotRestartedAgain) {
  WorkerOptions o = fake();
  o.respawn_limit = 2;
  auto h = spawn(o);
  ASSERT_TRUE(h);
  for (int i = 0; i < 3; i++) h->kill_and_respawn("test");
  EXPECT_EQ(h->info().state, WorkerState::dead);
  auto t = h->submit(make_command(Op::nop, 0, 0));
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("restarted too often"), std::string::npos) << t.error().message;
}

TEST(WorkerHost, AMissingBinaryIsAClearStartError) {
  WorkerOptions o = fake();
  o.binary = "/nonexistent/vgpu-worker";
  auto h = WorkerHost::spawn(o);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().message.find("cannot run /nonexistent/vgpu-worker: No such file or directory"), std::string::npos)
      << h.error().message;
}

// QEMU's descriptors (KVM, vhost, tap) are not all CLOEXEC: the worker
// gets its region and doorbell and nothing else of its parent's.
TEST(WorkerHost, AWorkerInheritsOnlyItsRegionAndDoorbell) {
  constexpr int LEAKY_FD = 200;                         // far above what the worker opens itself
  int leaky = fcntl(STDERR_FILENO, F_DUPFD, LEAKY_FD);  // no CLOEXEC, as a careless parent's
  ASSERT_GE(leaky, LEAKY_FD);
  auto h = spawn(fake());
  ASSERT_TRUE(h);
  const std::string fds = "/proc/" + std::to_string(h->pid()) + "/fd/";
  char target[PATH_MAX];
  EXPECT_LT(readlink((fds + std::to_string(leaky)).c_str(), target, sizeof target), 0);
  ssize_t n = readlink((fds + std::to_string(SHM_FD)).c_str(), target, sizeof target);
  ASSERT_GT(n, 0);
  EXPECT_NE(std::string(target, n).find("memfd:vgpu-worker"), std::string::npos) << std::string(target, n);
  n = readlink((fds + std::to_string(BELL_FD)).c_str(), target, sizeof target);
  ASSERT_GT(n, 0);
  EXPECT_NE(std::string(target, n).find("eventfd"), std::string::npos) << std::string(target, n);
  close(leaky);
}

// A starter killed without stopping its worker (QEMU under SIGKILL): the
// worker sees the starter's pidfd and ends instead of holding its device.
TEST(WorkerHost, AWorkerEndsWhenTheProcessThatStartedItDies) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t starter = fork();
  ASSERT_GE(starter, 0);
  if (starter == 0) {
    auto h = WorkerHost::spawn(fake());
    const int pid = h ? (*h)->pid() : -1;
    ssize_t n = write(fds[1], &pid, sizeof pid);
    _exit(n == sizeof pid ? 0 : 1);  // no destructor: the worker is not told to stop
  }
  close(fds[1]);
  int worker = -1;
  ASSERT_EQ(read(fds[0], &worker, sizeof worker), static_cast<ssize_t>(sizeof worker));
  close(fds[0]);
  ASSERT_GT(worker, 0);
  int status = 0;
  ASSERT_EQ(waitpid(starter, &status, 0), starter);
  // The orphan is reparented (to init or a subreaper), which may not reap
  // it at once: a zombie has ended.
  const auto ended = [worker] {
    std::ifstream stat("/proc/" + std::to_string(worker) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    const size_t close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
  };
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (!ended() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(ended()) << "worker " << worker << " outlived its starter";
}

TEST(WorkerHost, TheCudaDeviceWithoutAGpuIsAClearStartError) {
  WorkerOptions o = fake();
  o.device = "cuda";
  auto h = WorkerHost::spawn(o);
  if (h) GTEST_SKIP() << "a GPU is present: " << (*h)->info().device;
  EXPECT_NE(h.error().message.find("did not start: worker: "), std::string::npos) << h.error().message;
}

constexpr const char* EMPTY_KERNEL = R"(.version 6.0
.target sm_70
.address_size 64

.visible .entry k(.param .u64 out)
{
	ret;
}
)";

Result<Ticket> submit_load(WorkerHost& h, const std::string& ptx) {
  memcpy(h.bulk(), ptx.c_str(), ptx.size() + 1);
  Command c = make_command(Op::load_module, 0, 0, 0, ptx.size() + 1);
  c.data_va = VA;
  return h.submit(c);
}

// A module the device refuses (text that does not parse here; on the GPU
// also one the driver refuses with the context intact) is reported for
// its command, and the worker goes on: same pid, no restart, work runs.
TEST(WorkerHost, ARefusedModuleIsReportedAndTheWorkerGoesOn) {
  auto h = spawn(fake());
  ASSERT_TRUE(h);
  const int pid = h->info().pid;
  auto bad = submit_load(*h, "this is not PTX");
  ASSERT_TRUE(bad);
  ASSERT_TRUE(h->wait(*bad, 5s)) << "a refusal passes its fence";
  auto why = h->refusal(*bad);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("load_module"), std::string::npos) << *why;
  EXPECT_NE(why->find("the module does not parse"), std::string::npos) << *why;
  auto good = submit_load(*h, EMPTY_KERNEL);
  ASSERT_TRUE(good);
  ASSERT_TRUE(h->wait(*good, 5s));
  EXPECT_FALSE(h->refusal(*good)) << *h->refusal(*good);
  run(*h, make_command(Op::map, 0, VA, 0, 1));
  run(*h, make_command(Op::fill32, 0, VA, 0x1234, 16));
  EXPECT_EQ(word_at(*h, VA), 0x1234u);
  EXPECT_EQ(h->info().pid, pid);
  EXPECT_EQ(h->info().restarts, 0u);
  EXPECT_EQ(h->info().state, WorkerState::ready);
}


Result<Ticket> submit_launch(WorkerHost& h, uint64_t out, uint32_t blocks, uint32_t piece_blocks) {
  memcpy(h.bulk(), &out, sizeof out);
  Command c = make_command(Op::launch, 0, 0);
  c.launch = LaunchArgs{0, 0, {blocks, 1, 1}, {32, 1, 1}, 0, sizeof out, 0, piece_blocks};
  return h.submit(c);
}

// The fake device runs a launch on the interpreter over its mapped blocks,
// in the pieces the GPU's worker launches; an access outside them is the
// GPU's fault (700) with the VA.
TEST(WorkerHost, TheFakeDeviceRunsKernelsInPiecesAndFaultsOutsideItsBlocks) {
  auto h = spawn(fake());
  ASSERT_TRUE(h);
  auto good = submit_load(*h, testing::INDEX_PTX);
  ASSERT_TRUE(good && h->wait(*good, 5s));
  ASSERT_FALSE(h->refusal(*good)) << *h->refusal(*good);
  run(*h, make_command(Op::map, 0, VA, 0, 1));
  constexpr uint32_t BLOCKS = 5;
  auto t = submit_launch(*h, VA, BLOCKS, 2);
  ASSERT_TRUE(t);
  ASSERT_TRUE(h->wait(*t, 5s));
  for (uint32_t i : {0u, 31u, 32u, 100u, BLOCKS * 32 - 1}) EXPECT_EQ(word_at(*h, VA + 4 * i), i + 1);
  EXPECT_EQ(word_at(*h, VA + 4 * BLOCKS * 32), 0u) << "nothing past the grid";

  const uint64_t unmapped = VA + BLOCK_BYTES;
  auto bad = submit_launch(*h, unmapped, 1, 0);
  ASSERT_TRUE(bad);
  auto w = h->wait(*bad, 5s);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().error, regs::ChannelError::mmu_fault);
  EXPECT_EQ(w.error().addr, unmapped);
  EXPECT_NE(w.error().reason.find("interpreter"), std::string::npos) << w.error().reason;
}

}  // namespace
}  // namespace vgpu::worker
