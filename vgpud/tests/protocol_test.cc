// SPDX-License-Identifier: GPL-2.0-or-later
// The protocol's checks (vgpud/protocol.h): what a client may send.
#include "vgpud/protocol.h"

#include <gtest/gtest.h>

#include "vgpu/regs.h"

namespace vgpu::vgpud::proto {
namespace {

constexpr uint64_t SIZES[NUM_REGIONS] = {16 * MiB, 256 * MiB, 0, 16 * MiB};

Header header_of(const std::vector<std::byte>& m) { return load<Header>(m); }
std::span<const std::byte> payload_of(const std::vector<std::byte>& m) { return std::span(m).subspan(sizeof(Header)); }

TEST(Protocol, ReadAndWriteRequestsPassTheirChecks) {
  const auto r = read_request(7, REGION_BAR0, 0x100);
  ASSERT_TRUE(check_header(header_of(r)));
  auto a = parse_access(payload_of(r), false, SIZES);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->offset, 0x100u);
  const auto w = write_request(8, REGION_BAR1, 0x2000, 0xdead);
  EXPECT_TRUE(header_of(w).flags & FLAG_NO_REPLY);
  ASSERT_TRUE(check_header(header_of(w)));
  auto b = parse_access(payload_of(w), true, SIZES);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->value, 0xdeadu);
}

TEST(Protocol, HeaderSizeOutsideBoundsIsRefused) {
  Header h{.command = static_cast<uint16_t>(Command::region_read), .size = 8};
  EXPECT_FALSE(check_header(h));
  h.size = MAX_CLIENT_MESSAGE + 1;
  EXPECT_FALSE(check_header(h));
}

TEST(Protocol, RepliesUnknownCommandsAndUnknownFlagsAreRefused) {
  Header h{.command = static_cast<uint16_t>(Command::region_read), .size = 32, .flags = TYPE_REPLY};
  EXPECT_FALSE(check_header(h));
  h.flags = 1u << 9;
  EXPECT_FALSE(check_header(h));
  h.flags = 0;
  h.command = 77;
  EXPECT_FALSE(check_header(h));
  h.command = static_cast<uint16_t>(Command::layout);
  EXPECT_FALSE(check_header(h)) << "LAYOUT goes from the daemon to the client only";
}

TEST(Protocol, AttachReadAndResetMustBeAnswered) {
  for (Command c : {Command::attach, Command::region_read, Command::reset}) {
    Header h{.command = static_cast<uint16_t>(c), .size = 32};
    EXPECT_TRUE(check_header(h)) << command_name(h.command);
    h.flags = FLAG_NO_REPLY;
    EXPECT_FALSE(check_header(h)) << command_name(h.command) << " must be answered";
  }
  EXPECT_STREQ(command_name(static_cast<uint16_t>(Command::region_write)), "region write");
  EXPECT_STREQ(command_name(77), "command") << "not a command: the generic word";
}

TEST(Protocol, PostedReadIsRefused) {
  Header h{.command = static_cast<uint16_t>(Command::region_read), .size = 32, .flags = FLAG_NO_REPLY};
  EXPECT_FALSE(check_header(h));
}

TEST(Protocol, WritesThatMayChangeTheLayoutAreAnswered) {
  EXPECT_TRUE(write_is_posted(REGION_BAR1, 0x8c)) << "a doorbell";
  EXPECT_TRUE(write_is_posted(REGION_BAR3, 0x1000));
  EXPECT_TRUE(write_is_posted(REGION_BAR0, regs::pramin::BASE + 8));
  EXPECT_TRUE(write_is_posted(REGION_BAR0, regs::pflush::FLUSH.offset));
  EXPECT_TRUE(write_is_posted(REGION_BAR0, regs::mmu::INVALIDATE_PDB.offset));
  EXPECT_FALSE(write_is_posted(REGION_BAR0, regs::pbus::BAR1_INST.offset));
  EXPECT_FALSE(write_is_posted(REGION_BAR0, regs::pbus::BAR3_INST.offset));
  EXPECT_FALSE(write_is_posted(REGION_BAR0, regs::pmc::ENABLE.offset));
  EXPECT_FALSE(write_is_posted(REGION_BAR0, regs::pfifo::USERD_BASE.offset));
  EXPECT_FALSE(write_is_posted(REGION_BAR0, regs::pfifo::CHAN_INST[5].offset));
  EXPECT_FALSE(write_is_posted(REGION_BAR0, regs::pv::DOORBELL.offset)) << "its results are read right after";
  EXPECT_FALSE(write_is_posted(REGION_BAR0, regs::pv::SLOT_BASE.offset));
  EXPECT_FALSE(header_of(write_request(1, REGION_BAR0, regs::mmu::INVALIDATE.offset, 1)).flags & FLAG_NO_REPLY);
}

TEST(Protocol, AccessOutsideItsBarUnalignedOrWideIsRefused) {
  EXPECT_FALSE(parse_access(payload_of(read_request(0, REGION_BAR0, 16 * MiB)), false, SIZES));
  EXPECT_FALSE(parse_access(payload_of(read_request(0, REGION_BAR0, 16 * MiB - 2)), false, SIZES));
  EXPECT_FALSE(parse_access(payload_of(read_request(0, REGION_BAR0, 0x101)), false, SIZES));
  EXPECT_FALSE(parse_access(payload_of(read_request(0, 2, 0)), false, SIZES)) << "BAR2 does not exist";
  EXPECT_FALSE(parse_access(payload_of(read_request(0, 9, 0)), false, SIZES));
  EXPECT_FALSE(parse_access(payload_of(read_request(0, REGION_BAR0, ~uint64_t{3})), false, SIZES));
  auto m = read_request(0, REGION_BAR0, 0);
  RegionAccess a = load<RegionAccess>(payload_of(m));
  a.count = 8;
  EXPECT_FALSE(parse_access(bytes_of(a), false, SIZES));
}

TEST(Protocol, AccessPayloadOfTheWrongLengthIsRefused) {
  const auto w = write_request(0, REGION_BAR0, 0, 1);
  EXPECT_FALSE(parse_access(payload_of(w), false, SIZES)) << "a read with data";
  EXPECT_FALSE(parse_access(payload_of(w).first(sizeof(RegionAccess)), true, SIZES)) << "a write without";
}

TEST(Protocol, AttachChecksVersionOptionsAndName) {
  AttachRequest r;
  std::strcpy(r.name, "guest-1.a_b");
  r.options = OPT_BAR_REMAP | OPT_LAZY_SHADOW;
  EXPECT_TRUE(parse_attach(bytes_of(r)));
  r.options |= OPT_INCOMING;  // a migration's destination (version 4)
  EXPECT_TRUE(parse_attach(bytes_of(r)));
  AttachRequest bad = r;
  bad.version = VERSION - 1;
  EXPECT_FALSE(parse_attach(bytes_of(bad)));
  bad = r;
  bad.options = 1u << 7;
  EXPECT_FALSE(parse_attach(bytes_of(bad)));
  bad = r;
  std::strcpy(bad.name, "a/b");
  EXPECT_FALSE(parse_attach(bytes_of(bad)));
  bad = r;
  std::memset(bad.name, 'x', NAME_BYTES);
  EXPECT_FALSE(parse_attach(bytes_of(bad))) << "no terminating NUL";
  bad = r;
  bad.name[0] = 0;
  EXPECT_FALSE(parse_attach(bytes_of(bad)));
  bad = r;
  bad.name[20] = 'z';  // junk after the NUL
  EXPECT_FALSE(parse_attach(bytes_of(bad)));
  EXPECT_FALSE(parse_attach(bytes_of(r).first(10)));
}

TEST(Protocol, RefusalCarriesItsReasonAndCode) {
  const auto m = refusal(3, Command::attach, Refusal::vram_exhausted, "no VRAM");
  const Header h = header_of(m);
  EXPECT_EQ(h.id, 3);
  EXPECT_EQ(h.flags, TYPE_REPLY | FLAG_ERROR);
  EXPECT_EQ(h.error, static_cast<uint32_t>(Refusal::vram_exhausted));
  auto rest = check_hello(h, payload_of(m), 3);
  ASSERT_TRUE(rest) << rest.error().message;
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(rest->data()), rest->size()), "no VRAM");
}

TEST(Protocol, FirstReplyMustCarryTheMagicAndOurVersion) {
  const auto ok = attach_reply(0, AttachReply{.vm_id = 7});
  auto rest = check_hello(header_of(ok), payload_of(ok), 0);
  ASSERT_TRUE(rest);
  EXPECT_EQ(load<AttachReply>(*rest).vm_id, 7u);
  EXPECT_EQ(check_hello(header_of(ok), payload_of(ok), 1).error().code, Errc::unsupported) << "another id";
  auto other = ok;
  Hello h{MAGIC, VERSION + 1};
  std::memcpy(other.data() + sizeof(Header), &h, sizeof h);
  auto v = check_hello(header_of(other), payload_of(other), 0);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, Errc::invalid_argument);
  EXPECT_NE(v.error().message.find("version " + std::to_string(VERSION + 1)), std::string::npos) << v.error().message;
  h = Hello{0x50545448, VERSION};  // "HTTP"
  std::memcpy(other.data() + sizeof(Header), &h, sizeof h);
  EXPECT_EQ(check_hello(header_of(other), payload_of(other), 0).error().code, Errc::unsupported);
  const auto read = read_request(0, REGION_BAR0, 0);
  EXPECT_FALSE(plausible_attach_reply(header_of(read))) << "a command, not a reply";
  Header text;
  std::memcpy(&text, "HTTP/1.1 400 Bad Request\r\n", sizeof text);
  EXPECT_FALSE(plausible_attach_reply(text));
}

TEST(Protocol, MigrationCommandsAreAnsweredAndTheirPayloadsChecked) {
  for (Command c : {Command::freeze, Command::thaw, Command::dirty_log, Command::dirty_take, Command::state_export,
                    Command::state_import, Command::migrated}) {
    auto m = command(3, c);
    EXPECT_TRUE(check_header(header_of(m))) << command_name(static_cast<uint16_t>(c));
    Header posted = header_of(m);
    posted.flags |= FLAG_NO_REPLY;
    EXPECT_FALSE(check_header(posted)) << command_name(static_cast<uint16_t>(c)) << " must be answered";
  }
  EXPECT_STREQ(command_name(static_cast<uint16_t>(Command::migrated)), "migrated");
  EXPECT_TRUE(parse_empty({}, Command::migrated));
  EXPECT_FALSE(parse_empty(bytes_of(FreezeRequest{}), Command::migrated)) << "MIGRATED carries nothing";
  EXPECT_EQ(*parse_freeze(bytes_of(FreezeRequest{250, 0})), 250u);
  EXPECT_FALSE(parse_freeze(bytes_of(FreezeRequest{0, 0})));
  EXPECT_FALSE(parse_freeze(bytes_of(FreezeRequest{MAX_FREEZE_MS + 1, 0})));
  EXPECT_FALSE(parse_freeze(bytes_of(FreezeRequest{250, 1})));
  EXPECT_FALSE(parse_freeze(bytes_of(DirtyTakeReply{})));
  EXPECT_TRUE(*parse_dirty_log(bytes_of(DirtyLogRequest{1, 0})));
  EXPECT_FALSE(*parse_dirty_log(bytes_of(DirtyLogRequest{0, 0})));
  EXPECT_FALSE(parse_dirty_log(bytes_of(DirtyLogRequest{2, 0})));
  EXPECT_EQ(*parse_state_image(bytes_of(StateImage{MAX_IMAGE_BYTES})), MAX_IMAGE_BYTES);
  EXPECT_FALSE(parse_state_image(bytes_of(StateImage{0})));
  EXPECT_FALSE(parse_state_image(bytes_of(StateImage{MAX_IMAGE_BYTES + 1})));
  EXPECT_TRUE(parse_empty({}, Command::thaw));
  EXPECT_FALSE(parse_empty(bytes_of(StateImage{}), Command::thaw));
  EXPECT_EQ(fds_allowed(static_cast<uint16_t>(Command::state_import)), STATE_FDS);
  EXPECT_EQ(fds_allowed(static_cast<uint16_t>(Command::region_write)), 0u);
}

TEST(Protocol, AMigrationRefusalCarriesItsReasonAndCode) {
  const auto m = command_refusal(4, Command::freeze, Refusal::busy, "channel 2 still running after 40 ms");
  const Header h = header_of(m);
  EXPECT_EQ(h.flags, TYPE_REPLY | FLAG_ERROR);
  EXPECT_EQ(h.error, static_cast<uint32_t>(Refusal::busy));
  const auto p = payload_of(m);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(p.data()), p.size()), "channel 2 still running after 40 ms");
  EXPECT_STREQ(refusal_name(Refusal::bad_image), "bad image");
}

}  // namespace
}  // namespace vgpu::vgpud::proto
