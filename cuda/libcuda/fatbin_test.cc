// SPDX-License-Identifier: GPL-2.0-or-later
// The fat-binary codec on nvcc 13's output for our own kernel
// (testdata/README.md), on hand-made entries, and on truncated and
// corrupted copies of the kept files: every one an Error, never a crash.
#include "cuda/libcuda/fatbin.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "cuda/libcuda/module_image.h"

namespace vgpu::cuda::fatbin {
namespace {

constexpr uint64_t MAX_TEXT = 4u << 20;
constexpr const char* PTX_FILES[] = {"scale_zstd.fatbin", "scale_plain.fatbin",  "scale_lz.fatbin",
                                     "scale_all.fatbin",  "scale_all_lz.fatbin", "scale_multi.fatbin"};
constexpr const char* ALL_FILES[] = {"scale_zstd.fatbin", "scale_plain.fatbin",  "scale_lz.fatbin",
                                     "scale_all.fatbin",  "scale_all_lz.fatbin", "scale_sass.fatbin",
                                     "scale_multi.fatbin"};

std::vector<std::byte> load(const std::string& name, const std::string& dir = VGPU_CUDA_TESTDATA) {
  std::ifstream f(dir + "/" + name, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

// PTX as nvcc writes it: comments (blanked to empty lines) then .version.
void expect_ptx(const std::string& text, const char* file) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  ASSERT_NE(first, std::string::npos) << file;
  EXPECT_TRUE(text.compare(first, 2, "//") == 0 || text.compare(first, 8, ".version") == 0) << file;
  EXPECT_NE(text.find(".version 9.0"), std::string::npos) << file;
  EXPECT_NE(text.find(".entry fb_scale("), std::string::npos) << file;
}

TEST(Fatbin, KeptFilesParseAsNvccWroteThem) {
  struct Row {
    const char* file;
    std::vector<std::pair<Kind, uint32_t>> entries;
    std::vector<Compression> compression;
  };
  using C = Compression;
  const Row rows[] = {
      {"scale_zstd.fatbin", {{Kind::elf, 75}, {Kind::ptx, 75}}, {C::none, C::zstd}},
      {"scale_plain.fatbin", {{Kind::elf, 75}, {Kind::ptx, 75}}, {C::none, C::none}},
      {"scale_lz.fatbin", {{Kind::elf, 75}, {Kind::ptx, 75}}, {C::none, C::lz4}},
      {"scale_all.fatbin", {{Kind::elf, 75}, {Kind::ptx, 75}}, {C::zstd, C::zstd}},
      {"scale_all_lz.fatbin", {{Kind::elf, 75}, {Kind::ptx, 75}}, {C::lz4, C::lz4}},
      {"scale_sass.fatbin", {{Kind::elf, 75}}, {C::none}},
      {"scale_multi.fatbin",
       {{Kind::ptx, 75}, {Kind::elf, 75}, {Kind::ptx, 86}, {Kind::elf, 86}},
       {C::zstd, C::zstd, C::zstd, C::zstd}},
  };
  for (const Row& r : rows) {
    const auto bytes = load(r.file);
    auto c = parse(bytes);
    ASSERT_TRUE(c) << r.file << ": " << c.error().message;
    EXPECT_EQ(c->header_bytes + c->body_bytes, bytes.size()) << r.file;
    ASSERT_EQ(c->entries.size(), r.entries.size()) << r.file;
    for (size_t i = 0; i < r.entries.size(); ++i) {
      const Entry& e = c->entries[i];
      EXPECT_EQ(e.kind, static_cast<uint16_t>(r.entries[i].first)) << r.file << " " << i;
      EXPECT_EQ(e.arch, r.entries[i].second) << r.file << " " << i;
      EXPECT_EQ(e.compression, r.compression[i]) << r.file << " " << i;
      EXPECT_EQ(e.flags & (FLAG_64BIT | FLAG_LINUX), FLAG_64BIT | FLAG_LINUX) << r.file;
      EXPECT_EQ(e.payload_bytes % entry::PAYLOAD_ALIGN, 0u) << r.file;
      const int code = e.code_major * 10 + e.code_minor;
      EXPECT_EQ(code, e.is_ptx() ? 90 : 18) << r.file;  // PTX ISA 9.0, cubin 1.8
    }
  }
}

TEST(Fatbin, EveryCompressionGivesTheSamePtx) {
  auto plain = extract_ptx(load("scale_plain.fatbin"), Target{}, MAX_TEXT);
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->size(), 688u);  // 689 with its NUL
  for (const char* file : PTX_FILES) {
    auto text = extract_ptx(load(file), Target{}, MAX_TEXT);
    ASSERT_TRUE(text) << file << ": " << text.error().message;
    expect_ptx(*text, file);
    EXPECT_NE(text->find(".target sm_75"), std::string::npos) << file;  // multi: compute_75 beats compute_86
    EXPECT_EQ(*text, *plain) << file;
  }
}

// The runtime's inputs (cuda/cudart/testdata: two kernels, a __constant__
// and a __device__ variable) in every compression nvcc writes: the same PTX.
TEST(Fatbin, RuntimeInputsGiveTheSamePtxInEveryCompression) {
  auto plain = extract_ptx(load("rt_plain.fatbin", VGPU_CUDART_TESTDATA), Target{}, MAX_TEXT);
  ASSERT_TRUE(plain) << plain.error().message;
  for (const char* want :
       {".entry rt_axpb(", ".entry rt_store(", ".const .align 4 .b8 rt_coef[8];", ".global .align 4 .u32 rt_count;"})
    EXPECT_NE(plain->find(want), std::string::npos) << want;
  for (const char* file : {"rt_zstd.fatbin", "rt_lz.fatbin", "rt_all.fatbin"}) {
    auto text = extract_ptx(load(file, VGPU_CUDART_TESTDATA), Target{}, MAX_TEXT);
    ASSERT_TRUE(text) << file << ": " << text.error().message;
    EXPECT_EQ(*text, *plain) << file;
  }
  auto sass = extract_ptx(load("rt_sass.fatbin", VGPU_CUDART_TESTDATA), Target{}, MAX_TEXT);
  ASSERT_FALSE(sass);
  EXPECT_EQ(sass.error().result, CUDA_ERROR_NO_BINARY_FOR_GPU);
  EXPECT_NE(sass.error().message.find("-gencode arch=compute_75,code=compute_75"), std::string::npos)
      << sass.error().message;
}

TEST(Fatbin, CompressedElfUnpacksToTheSameElf) {
  const auto plain_bytes = load("scale_plain.fatbin");  // the entries point into it
  auto plain = parse(plain_bytes);
  ASSERT_TRUE(plain);
  auto want = unpack(plain->entries[0], 1 << 20);
  ASSERT_TRUE(want);
  ASSERT_GE(want->size(), 4u);
  EXPECT_EQ(std::memcmp(want->data(),
                        "\x7f"
                        "ELF",
                        4),
            0);
  for (const char* file : {"scale_all.fatbin", "scale_all_lz.fatbin"}) {
    const auto bytes = load(file);
    auto c = parse(bytes);
    ASSERT_TRUE(c) << file;
    auto got = unpack(c->entries[0], 1 << 20);
    ASSERT_TRUE(got) << file << ": " << got.error().message;
    EXPECT_EQ(*got, std::vector<std::byte>(want->begin(), want->begin() + static_cast<std::ptrdiff_t>(got->size())));
    EXPECT_EQ(got->size(), c->entries[0].uncompressed_bytes) << file;
  }
}

TEST(Fatbin, SassOnlyIsNoBinaryForGpuNamingTheFlag) {
  auto text = extract_ptx(load("scale_sass.fatbin"), Target{}, MAX_TEXT);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().result, CUDA_ERROR_NO_BINARY_FOR_GPU);
  EXPECT_NE(text.error().message.find("only sm_75"), std::string::npos) << text.error().message;
  EXPECT_NE(text.error().message.find("-gencode arch=compute_75,code=compute_75"), std::string::npos);
  EXPECT_NE(text.error().message.find("nvcc -arch=sm_75"), std::string::npos);
}

Entry ptx_entry(uint32_t arch, uint16_t major = 9, uint16_t minor = 0) {
  Entry e;
  e.kind = static_cast<uint16_t>(Kind::ptx);
  e.arch = arch;
  e.code_major = major;
  e.code_minor = minor;
  return e;
}

size_t chosen(std::vector<Entry> entries, uint32_t arch = 70) {
  Container c;
  c.entries = std::move(entries);
  auto i = choose_ptx(c, Target{.arch = arch});
  EXPECT_TRUE(i);
  return i ? *i : ~size_t{0};
}

TEST(Fatbin, ChoiceRule) {
  EXPECT_EQ(chosen({ptx_entry(60), ptx_entry(70), ptx_entry(80)}), 1u);  // the highest not above 70
  EXPECT_EQ(chosen({ptx_entry(86), ptx_entry(75), ptx_entry(80)}), 1u);  // all above: the lowest
  EXPECT_EQ(chosen({ptx_entry(80), ptx_entry(52)}), 1u);
  EXPECT_EQ(chosen({ptx_entry(70, 9, 1), ptx_entry(60, 9, 0)}), 1u);  // 9.1 is not read: skipped
  EXPECT_EQ(chosen({ptx_entry(70, 9, 2), ptx_entry(60, 9, 1)}), 0u);  // none read: by arch (then refused)
  EXPECT_EQ(chosen({ptx_entry(70, 7, 0), ptx_entry(70, 8, 5), ptx_entry(70, 8, 0)}), 1u);  // the newer ISA
  Entry elf = ptx_entry(70);
  elf.kind = static_cast<uint16_t>(Kind::elf);
  EXPECT_EQ(chosen({elf, ptx_entry(90)}), 1u);  // SASS is never chosen
  EXPECT_EQ(chosen({ptx_entry(75), ptx_entry(86)}, 90), 1u);
}

TEST(Fatbin, EmptyContainerHasNoBinary) {
  const std::byte header[16] = {std::byte{0x50}, std::byte{0xED}, std::byte{0x55}, std::byte{0xBA},
                                std::byte{1},    std::byte{0},    std::byte{0x10}, std::byte{0}};
  auto c = parse(header);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->entries.empty());
  auto text = extract_ptx(header, Target{}, MAX_TEXT);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().result, CUDA_ERROR_NO_BINARY_FOR_GPU);
}

void put(std::vector<std::byte>& b, size_t at, Field f, uint64_t v) {
  for (uint32_t i = 0; i < f.bytes; ++i) b[at + f.at + i] = static_cast<std::byte>(v >> (8 * i));
}

TEST(Fatbin, BadFieldsAreRefusedByName) {
  const auto good = load("scale_zstd.fatbin");
  const size_t ptx = 0xc78;  // the PTX entry's header
  struct Case {
    size_t at;
    Field field;
    uint64_t value;
    const char* says;
  };
  const Case cases[] = {
      {0, container::MAGIC_FIELD, 0xBA55ED51, "magic"},
      {0, container::VERSION, 2, "version 2"},
      {0, container::HEADER_SIZE, 8, "header size of 8"},
      {0, container::BODY_SIZE, good.size(), "declares"},
      {ptx, entry::HEADER_SIZE, 0x3f, "header size 63"},
      {ptx, entry::HEADER_SIZE, 8192, "header size 8192"},
      {ptx, entry::PAYLOAD_SIZE, 1u << 30, "runs past"},
      {ptx, entry::COMPRESSED_SIZE, 0, "compressed size of 0"},
      {ptx, entry::COMPRESSED_SIZE, 361, "compressed size of 361"},
      {ptx, entry::FLAGS, FLAG_LZ4 | FLAG_ZSTD | FLAG_64BIT, "both"},
      {ptx, entry::OPTIONS, 0x4c, "options field"},
      {ptx, entry::NAME_SIZE, 100, "source name"},
  };
  for (const Case& k : cases) {
    auto bad = good;
    put(bad, k.at, k.field, k.value);
    auto text = extract_ptx(bad, Target{}, MAX_TEXT);
    ASSERT_FALSE(text) << k.says;
    EXPECT_EQ(text.error().result, CUDA_ERROR_INVALID_IMAGE) << k.says;
    EXPECT_NE(text.error().message.find(k.says), std::string::npos) << text.error().message;
  }
  auto big = good;
  put(big, ptx, entry::UNCOMPRESSED_SIZE, MAX_TEXT + 2);
  auto text = extract_ptx(big, Target{}, MAX_TEXT);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().result, CUDA_ERROR_INVALID_PTX);
  auto zstd = good;
  zstd[ptx + 0x50] ^= std::byte{0xff};  // the zstd magic: 28 b5 2f fd
  auto z = extract_ptx(zstd, Target{}, MAX_TEXT);
  ASSERT_FALSE(z);
  EXPECT_NE(z.error().message.find("zstd"), std::string::npos) << z.error().message;
}

std::vector<std::byte> bytes_of(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int b : v) out.push_back(static_cast<std::byte>(b));
  return out;
}

TEST(Fatbin, Lz4BlockFormat) {
  // 1 literal '\n', then a match of 3 + 4 at offset 1: eight newlines; then 2 literals.
  auto out = lz4_decode(bytes_of({0x13, '\n', 1, 0, 0x20, 'a', 'b'}), 10);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(out->data()), out->size()), "\n\n\n\n\n\n\n\nab");
  // 15 + 3 literals (one extension byte).
  std::vector<std::byte> long_lit = bytes_of({0xf0, 3});
  for (int i = 0; i < 18; ++i) long_lit.push_back(std::byte{'x'});
  EXPECT_TRUE(lz4_decode(long_lit, 18));
  EXPECT_TRUE(lz4_decode({}, 0));
  EXPECT_FALSE(lz4_decode(bytes_of({0x13, '\n', 0, 0}), 8));                   // offset 0
  EXPECT_FALSE(lz4_decode(bytes_of({0x13, '\n', 2, 0}), 8));                   // before the start
  EXPECT_FALSE(lz4_decode(bytes_of({0x13, '\n', 1}), 8));                      // offset cut
  EXPECT_FALSE(lz4_decode(bytes_of({0x1f, '\n', 1, 0}), 30));                  // match length cut
  EXPECT_FALSE(lz4_decode(bytes_of({0xf0, 255}), 300));                        // literal length cut
  EXPECT_FALSE(lz4_decode(bytes_of({0x30, 'a', 'b'}), 3));                     // literals cut
  EXPECT_FALSE(lz4_decode(bytes_of({0x13, '\n', 1, 0, 0x20, 'a', 'b'}), 9));   // more than declared
  EXPECT_FALSE(lz4_decode(bytes_of({0x13, '\n', 1, 0, 0x20, 'a', 'b'}), 11));  // fewer
}

TEST(Fatbin, ImageCheckTakesFatBinariesAndTheRuntimeWrapper) {
  const auto bytes = load("scale_lz.fatbin");
  auto direct = check_image(bytes.data(), MAX_TEXT);
  ASSERT_EQ(direct.result, CUDA_SUCCESS) << direct.message;
  expect_ptx(std::string(direct.text), "direct");
  struct Wrapper {
    uint32_t magic, version;
    const void* data;
    void* filename_or_fatbins;
  };
  static_assert(sizeof(Wrapper) == wrapper::BYTES);
  Wrapper w{WRAPPER_MAGIC, 1, bytes.data(), nullptr};
  auto wrapped = check_image(&w, MAX_TEXT);
  ASSERT_EQ(wrapped.result, CUDA_SUCCESS) << wrapped.message;
  EXPECT_EQ(wrapped.text, direct.text);
  Wrapper bad_version{WRAPPER_MAGIC, 3, bytes.data(), nullptr};
  EXPECT_EQ(check_image(&bad_version, MAX_TEXT).result, CUDA_ERROR_INVALID_IMAGE);
  Wrapper null_data{WRAPPER_MAGIC, 2, nullptr, nullptr};
  EXPECT_EQ(check_image(&null_data, MAX_TEXT).result, CUDA_ERROR_INVALID_IMAGE);
  const char ptx[] = ".version 9.0\n";
  Wrapper to_text{WRAPPER_MAGIC, 1, ptx, nullptr};
  EXPECT_EQ(check_image(&to_text, MAX_TEXT).result, CUDA_ERROR_INVALID_IMAGE);
  const auto sass = load("scale_sass.fatbin");
  EXPECT_EQ(check_image(sass.data(), MAX_TEXT).result, CUDA_ERROR_NO_BINARY_FOR_GPU);
}

// Whatever the bytes, parse and extract answer, and every entry unpacks or
// says why; an Error always has a message.
void survives(std::span<const std::byte> bytes) {
  auto c = parse(bytes);
  if (c) {
    for (const Entry& e : c->entries) {
      auto u = unpack(e, 1 << 16);
      if (!u) {
        EXPECT_FALSE(u.error().message.empty());
      }
    }
  } else {
    EXPECT_FALSE(c.error().message.empty());
  }
  auto t = extract_ptx(bytes, Target{}, MAX_TEXT);
  if (!t) {
    EXPECT_FALSE(t.error().message.empty());
  }
}

TEST(Fatbin, EveryPrefixIsRefusedWithoutACrash) {
  const auto bytes = load("scale_all.fatbin");
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::span<const std::byte> prefix(bytes.data(), n);
    EXPECT_FALSE(parse(prefix)) << n;
    // The same prefix with the container's size cut to it: the entries
    // themselves run short.
    std::vector<std::byte> cut(prefix.begin(), prefix.end());
    if (n >= container::HEADER_BYTES) put(cut, 0, container::BODY_SIZE, n - container::HEADER_BYTES);
    auto t = extract_ptx(cut, Target{}, MAX_TEXT);
    EXPECT_FALSE(t) << n;
    survives(cut);
  }
}

TEST(Fatbin, RandomByteFlipsAreRefusedOrParsedWithoutACrash) {
  std::mt19937 rng(20250101);
  for (const char* file : ALL_FILES) {
    const auto good = load(file);
    ASSERT_FALSE(good.empty()) << file;
    for (int round = 0; round < 1500; ++round) {
      auto bad = good;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < flips; ++k) {
        // Half the flips in the headers, where the fields are.
        const size_t span = (round % 2 == 0) ? std::min<size_t>(bad.size(), 0x60) : bad.size();
        bad[rng() % span] ^= static_cast<std::byte>(1u << (rng() % 8));
      }
      survives(bad);
    }
  }
}

}  // namespace
}  // namespace vgpu::cuda::fatbin
