// SPDX-License-Identifier: GPL-2.0-or-later
// The compute object's methods around a launch: constant buffers,
// binding, semaphore reports, and bad input (testing/compute_test.h has
// the fixture).
#include "gpu/engines/testing/compute_test.h"

namespace vgpu::gpu {
namespace {

using namespace testing;  // the fixture, its helpers and the compute class names (compute_test.h)

// ---------------------------------------------------------------- constant buffers and reports

TEST_F(ComputeTest, LoadConstantBufferWritesAtAdvancingOffset) {
  std::vector<Method> m = select_cb(CB_VA, CB_SIZE);
  m.insert(m.end(), {{LOAD_CONSTANT_BUFFER_OFFSET, 8},
                     {LOAD_CONSTANT_BUFFER, 0x11},
                     {LOAD_CONSTANT_BUFFER + 4, 0x22},  // incrementing form: the next array word
                     {LOAD_CONSTANT_BUFFER, 0x33}});
  ASSERT_TRUE(send(compute_, m).has_value());
  EXPECT_EQ(read_vec<uint32_t>(CB_VA + 8, 3), (std::vector<uint32_t>{0x11, 0x22, 0x33}));
  EXPECT_EQ(compute_.state().cb_load_offset, 20u);
}

TEST_F(ComputeTest, LoadConstantBufferPastItsSizeIsBadArgument) {
  std::vector<Method> m = select_cb(CB_VA, 8);
  m.insert(m.end(), {{LOAD_CONSTANT_BUFFER_OFFSET, 4}, {LOAD_CONSTANT_BUFFER, 1}, {LOAD_CONSTANT_BUFFER, 2}});
  expect_error(send(compute_, m), regs::ChannelError::bad_argument, LOAD_CONSTANT_BUFFER);
}

// PFIFO hands a non-incrementing run of LOAD_CONSTANT_BUFFER words over at
// once (ClassObject::method_words): the same bytes and offset as word by word.
TEST_F(ComputeTest, LoadConstantBufferWordsAtOnceAsWordByWord) {
  std::vector<Method> m = select_cb(CB_VA, CB_SIZE);
  m.push_back({LOAD_CONSTANT_BUFFER_OFFSET, 8});
  ASSERT_TRUE(send(compute_, m).has_value());
  ChannelContext ctx = context();
  const std::vector<uint32_t> words{0x11, 0x22, 0x33};
  auto out = compute_.method_words(ctx, LOAD_CONSTANT_BUFFER, words);
  ASSERT_TRUE(out.has_value()) << "taken at once";
  ASSERT_TRUE(out->has_value());
  EXPECT_FALSE(out->value().has_value()) << "no engine work";
  EXPECT_EQ(read_vec<uint32_t>(CB_VA + 8, 3), words);
  EXPECT_EQ(compute_.state().cb_load_offset, 20u);
}

// What would fault part-way (past the buffer's size, onto a second page)
// is left to the word-by-word path, untouched; other methods too.
TEST_F(ComputeTest, LoadConstantBufferWordsLeaveWhatMayFaultPartWay) {
  ChannelContext ctx = context();
  const std::vector<uint32_t> two{1, 2};
  std::vector<Method> m = select_cb(CB_VA, 8);
  m.push_back({LOAD_CONSTANT_BUFFER_OFFSET, 4});
  ASSERT_TRUE(send(compute_, m).has_value());
  EXPECT_FALSE(compute_.method_words(ctx, LOAD_CONSTANT_BUFFER, two).has_value()) << "past the size";
  EXPECT_EQ(compute_.state().cb_load_offset, 4u);

  const uint64_t straddling = CB_VA + fmt::SMALL_PAGE - 4;
  m = select_cb(straddling, CB_SIZE);
  m.push_back({LOAD_CONSTANT_BUFFER_OFFSET, 0});
  ASSERT_TRUE(send(compute_, m).has_value());
  EXPECT_FALSE(compute_.method_words(ctx, LOAD_CONSTANT_BUFFER, two).has_value()) << "onto a second page";
  EXPECT_EQ(compute_.state().cb_load_offset, 0u);

  EXPECT_FALSE(compute_.method_words(ctx, SET_CTA_THREAD_COUNT, two).has_value());
}

// A buffer on an unmapped page faults at its first word, as word by word.
TEST_F(ComputeTest, LoadConstantBufferWordsOnAnUnmappedPageFaultAsTheFirstWord) {
  std::vector<Method> m = select_cb(UNMAPPED_VA, CB_SIZE);
  m.push_back({LOAD_CONSTANT_BUFFER_OFFSET, 0});
  ASSERT_TRUE(send(compute_, m).has_value());
  ChannelContext ctx = context();
  auto out = compute_.method_words(ctx, LOAD_CONSTANT_BUFFER, std::vector<uint32_t>{1, 2, 3});
  ASSERT_TRUE(out.has_value()) << "one page: taken at once";
  ASSERT_FALSE(out->has_value());
  EXPECT_EQ(out->error().code, regs::ChannelError::mmu_fault);
  EXPECT_EQ(out->error().method, LOAD_CONSTANT_BUFFER);
  ASSERT_TRUE(out->error().mmu.has_value());
  EXPECT_EQ(out->error().mmu->va, UNMAPPED_VA);
  EXPECT_EQ(out->error().mmu->unit, regs::FaultUnit::pgraph);
  EXPECT_EQ(compute_.state().cb_load_offset, 0u);
  // Word by word, the same fault.
  m.push_back({LOAD_CONSTANT_BUFFER, 1});
  const MethodDone one = send(compute_, m);
  ASSERT_FALSE(one.has_value());
  ASSERT_TRUE(one.error().mmu.has_value());
  EXPECT_EQ(one.error().mmu->va, UNMAPPED_VA);
}

TEST_F(ComputeTest, BindRecordsSelectedBufferAndUnbinds) {
  std::vector<Method> m = select_cb(CB_VA, CB_SIZE);
  m.push_back({BIND_CONSTANT_BUFFER, BindValid::make(1) | BindSlot::make(3)});
  ASSERT_TRUE(send(compute_, m).has_value());
  EXPECT_TRUE(compute_.state().bound[3].valid);
  EXPECT_EQ(compute_.state().bound[3].va, CB_VA);
  EXPECT_EQ(compute_.state().bound[3].size, CB_SIZE);
  ASSERT_TRUE(send(compute_, {{BIND_CONSTANT_BUFFER, BindSlot::make(3)}}).has_value());
  EXPECT_FALSE(compute_.state().bound[3].valid);
}

TEST_F(ComputeTest, BindBeyondLastSlotIsBadArgument) {
  expect_error(send(compute_, {{BIND_CONSTANT_BUFFER, BindValid::make(1) | BindSlot::make(NUM_CB_SLOTS)}}),
               regs::ChannelError::bad_argument, BIND_CONSTANT_BUFFER);
}

TEST_F(ComputeTest, ReportSemaphoreFourWordsAfterLaunchWithAwaken) {
  const uint64_t sem = LINEAR_VA + 0x3000;
  ASSERT_TRUE(run(Kernel::spin, cls::SpinArgs{1000}).has_value());
  ASSERT_TRUE(send(compute_, {{SET_REPORT_SEMAPHORE_A, hi32(sem)},
                              {SET_REPORT_SEMAPHORE_B, lo32(sem)},
                              {SET_REPORT_SEMAPHORE_C, 0xabc},
                              {SET_REPORT_SEMAPHORE_D, ReportAwaken::make(1)}})
                  .has_value());
  const auto words = read_vec<uint32_t>(sem, 4);
  EXPECT_EQ(words[0], 0xabcu);
  EXPECT_EQ(words[1], 0u);
  EXPECT_EQ(join64(words[3], words[2]), 1000u);
  EXPECT_EQ(nonstalls_, 1);
  EXPECT_EQ(semaphore_writes_, 1);
}

TEST_F(ComputeTest, ReportSemaphoreOneWord) {
  const uint64_t sem = LINEAR_VA + 0x3000;
  write_vec(sem, std::vector<uint32_t>{0, 7});
  ASSERT_TRUE(send(compute_, {{SET_REPORT_SEMAPHORE_A, hi32(sem)},
                              {SET_REPORT_SEMAPHORE_B, lo32(sem)},
                              {SET_REPORT_SEMAPHORE_C, 5},
                              {SET_REPORT_SEMAPHORE_D, ReportSize4::make(1)}})
                  .has_value());
  EXPECT_EQ(read_vec<uint32_t>(sem, 2), (std::vector<uint32_t>{5, 7}));
  EXPECT_EQ(nonstalls_, 0);
}

TEST_F(ComputeTest, ReportOperationOtherThanReleaseIsIllegal) {
  expect_error(send(compute_,
                    {{SET_REPORT_SEMAPHORE_D, ReportOperation::make(uint32_t(cls::compute::ReportOp::trap))}}),
               regs::ChannelError::illegal_method, SET_REPORT_SEMAPHORE_D);
}

// ---------------------------------------------------------------- launch errors

TEST_F(ComputeTest, BadMagicIsBadProgram) {
  write_program(static_cast<uint32_t>(Kernel::spin), 0x1234);
  auto r = send(compute_, launch_sequence(cls::SpinArgs{1}));
  expect_error(r, regs::ChannelError::bad_program);
  EXPECT_EQ(r.error().addr, PROGRAM_VA + PROGRAM_START);
}

TEST_F(ComputeTest, BadVersionIsBadProgram) {
  write_program(static_cast<uint32_t>(Kernel::spin), cls::PROGRAM_MAGIC, cls::PROGRAM_VERSION + 1);
  expect_error(send(compute_, launch_sequence(cls::SpinArgs{1})), regs::ChannelError::bad_program);
}

TEST_F(ComputeTest, UnknownKernelIsBadProgram) {
  write_program(99);
  expect_error(send(compute_, launch_sequence(cls::SpinArgs{1})), regs::ChannelError::bad_program);
}

TEST_F(ComputeTest, UnmappedProgramIsMmuFault) {
  auto seq = launch_sequence(cls::SpinArgs{1});
  seq.insert(seq.end() - 4, {SET_PROGRAM_REGION_A, hi32(UNMAPPED_VA)});
  auto r = send(compute_, seq);
  expect_error(r, regs::ChannelError::mmu_fault);
  ASSERT_TRUE(r.error().mmu.has_value());
  EXPECT_EQ(r.error().mmu->unit, regs::FaultUnit::pgraph);
  EXPECT_FALSE(r.error().mmu->write);
}

TEST_F(ComputeTest, UnboundArgumentBufferIsBadArgument) {
  write_program(static_cast<uint32_t>(Kernel::spin));
  expect_error(send(compute_, launch_sequence(cls::SpinArgs{1}, false)), regs::ChannelError::bad_argument);
}

TEST_F(ComputeTest, ArgumentBufferSmallerThanArgsIsBadArgument) {
  const uint64_t dst = buffer(std::vector<float>(4, 0.0f));
  write_program(static_cast<uint32_t>(Kernel::fill));
  auto seq = launch_sequence(cls::FillArgs{dst, 4, 1.0f});
  // Rebind slot 0 with a selector of 8 bytes just before the launch.
  std::vector<Method> rebind = select_cb(CB_VA, 8);
  rebind.push_back({BIND_CONSTANT_BUFFER, BindValid::make(1) | BindSlot::make(ARG_CB_SLOT)});
  seq.insert(seq.end() - 4, rebind.begin(), rebind.end());
  expect_error(send(compute_, seq), regs::ChannelError::bad_argument);
}

TEST_F(ComputeTest, ZeroGridIsBadArgument) {
  write_program(static_cast<uint32_t>(Kernel::spin));
  auto seq = launch_sequence(cls::SpinArgs{1});
  seq.insert(seq.end() - 4, {SET_CTA_RASTER_SIZE_A, DimLo::make(0) | DimHi::make(1)});
  expect_error(send(compute_, seq), regs::ChannelError::bad_argument);
}

TEST_F(ComputeTest, BlockOverMaxThreadsIsBadArgument) {
  write_program(static_cast<uint32_t>(Kernel::spin));
  auto seq = launch_sequence(cls::SpinArgs{1});
  seq.insert(seq.end() - 4, {SET_CTA_THREAD_DIMENSION_A, DimLo::make(64) | DimHi::make(32)});
  expect_error(send(compute_, seq), regs::ChannelError::bad_argument);
}

TEST_F(ComputeTest, UnmappedBufferIsMmuFaultAtItsAddress) {
  auto r = run(Kernel::fill, cls::FillArgs{UNMAPPED_VA, 16, 1.0f});
  expect_error(r, regs::ChannelError::mmu_fault);
  ASSERT_TRUE(r.error().mmu.has_value());
  EXPECT_EQ(align_down(r.error().mmu->va, fmt::SMALL_PAGE), UNMAPPED_VA);
  EXPECT_TRUE(r.error().mmu->write);
  EXPECT_EQ(r.error().mmu->chid, CHID);
}

TEST_F(ComputeTest, OverflowingSgemmSizesAreBadArgument) {
  expect_error(run(Kernel::sgemm, cls::SgemmArgs{BUFFERS_VA, BUFFERS_VA, BUFFERS_VA, 0x80000000u, 0x80000000u,
                                                 0x80000000u, 1.0f, 0.0f, 0}),
               regs::ChannelError::bad_argument);
}

// A guest maps one big page over 16 GiB of VA with a few legal entries
// (one big-page table named by 128 PDEs) and runs saxpy over it: there is
// no host view of such a range, and a copy would be 32 GiB. The launch
// ends with bad_argument at that buffer, and the host allocates nothing in
// proportion to the guest's range.
TEST_F(ComputeTest, BufferAliasingOnePageOverAHugeRangeIsBadArgumentNotAnAllocation) {
  constexpr uint64_t ALIAS_VA = 0x40'0000'0000;
  constexpr uint64_t PDES = 128;
  auto lpt = builder_->allocate(fmt::LPT.table_bytes());
  ASSERT_TRUE(lpt.has_value());
  for (uint64_t i = 0; i < fmt::LPT.entries(); ++i) vram_->write64(*lpt + i * 8, fmt::pte::make(DATA_PHYS));
  for (uint64_t p = 0; p < PDES; ++p)
    vram_->write64(pd_ + fmt::PD.index(ALIAS_VA + p * fmt::PDE_SPAN) * 8, fmt::pde::make(0, *lpt));
  const uint32_t n = 0xffffffffu;  // 16 GiB of floats, within the aliased range
  ASSERT_LE(uint64_t{n} * sizeof(float), PDES * fmt::PDE_SPAN);
  auto r = run(Kernel::saxpy, cls::SaxpyArgs{ALIAS_VA, ALIAS_VA, n, 1.0f});
  expect_error(r, regs::ChannelError::bad_argument);
  EXPECT_EQ(r.error().addr, ALIAS_VA);
}

// Within the bounce budget, a buffer the MMU cannot window still computes.
TEST_F(ComputeTest, BufferWithoutAViewWithinTheBounceBudgetComputes) {
  // One small page aliased over 65,536 pages (more runs than a window
  // holds); fill writes the same page again and again.
  constexpr uint64_t ALIAS_VA = 0x48'0000'0000;
  auto spt = builder_->allocate(fmt::SPT.table_bytes());
  ASSERT_TRUE(spt.has_value());
  for (uint64_t i = 0; i < fmt::SPT.entries(); ++i) vram_->write64(*spt + i * 8, fmt::pte::make(DATA_PHYS));
  for (uint64_t p = 0; p < 2; ++p)
    vram_->write64(pd_ + fmt::PD.index(ALIAS_VA + p * fmt::PDE_SPAN) * 8, fmt::pde::make(*spt, 0));
  const uint32_t n = static_cast<uint32_t>(Mmu::MAX_WINDOW_RUNS + 1) * 1024;  // floats: MAX_WINDOW_RUNS + 1 pages
  ASSERT_LE(uint64_t{n} * sizeof(float), MAX_BOUNCE_BYTES);
  ASSERT_TRUE(run(Kernel::fill, cls::FillArgs{ALIAS_VA, n, 7.0f}).has_value());
  EXPECT_EQ(vram_->read32(DATA_PHYS + 12), std::bit_cast<uint32_t>(7.0f));
}

TEST_F(ComputeTest, BufferBeyondVaSpaceIsBadArgument) {
  expect_error(run(Kernel::fill, cls::FillArgs{fmt::VA_LIMIT - 16, 0xffffffffu, 1.0f}),
               regs::ChannelError::bad_argument);
}

TEST_F(ComputeTest, InvalidConvolutionShapeIsBadArgument) {
  cls::Conv2dArgs args{};
  args.input = args.filter = args.output = BUFFERS_VA;
  args.n = args.c = args.h = args.w = args.k = 1;
  args.r = args.s = 3;  // larger than the unpadded 1x1 input
  args.stride_h = args.stride_w = 1;
  expect_error(run(Kernel::conv2d, args), regs::ChannelError::bad_argument);
}

TEST_F(ComputeTest, MisalignedBufferIsBadArgument) {
  expect_error(run(Kernel::fill, cls::FillArgs{BUFFERS_VA + 2, 4, 1.0f}), regs::ChannelError::bad_argument);
}

TEST_F(ComputeTest, SpinLongerThanMaximumIsBadArgument) {
  expect_error(run(Kernel::spin, cls::SpinArgs{MAX_SPIN_NS + 1}), regs::ChannelError::bad_argument);
  EXPECT_EQ(clock_.now_ns(), 0u);
}

TEST_F(ComputeTest, UnknownMethodIsIllegal) {
  expect_error(send(compute_, {{0x0800, 0}}), regs::ChannelError::illegal_method, 0x0800);
  EXPECT_STREQ(ComputeObject::method_name(LAUNCH), "LAUNCH");
  EXPECT_STREQ(ComputeObject::method_name(LOAD_CONSTANT_BUFFER + 60), "LOAD_CONSTANT_BUFFER");
  EXPECT_EQ(ComputeObject::method_name(LOAD_CONSTANT_BUFFER + 64), nullptr);
}

}  // namespace
}  // namespace vgpu::gpu
