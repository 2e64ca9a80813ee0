// A batch asked while a big compressed .debug_info streams in gives each unit's bytes back
// once its addresses are answered (DwarfOptions::release_streamed_info,
// UnitCache::AnswerWhileStreaming). The answers must be those of the whole section; DWARF
// whose DIEs may refer into other units is left whole; a stream that fails half-way takes
// back what was answered; and a symbolizer asked again after such a batch opens its DWARF
// anew. On Debian's own debug files (libc6-dbg, python3.11-dbg, librados2-dbg): the fixtures'
// sections are too small to be mapped, and only mapped buffers are given back.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "dwarf/debug_info_source.h"
#include "stacksym/elf.h"
#include "stacksym/symbolize.h"

namespace stacksym {
namespace {

const std::string kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
const std::string kPython = "/usr/bin/python3.11";
const std::string kCeph = "/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2";

// Up to `limit` addresses: in evenly spaced function symbols, a point inside each.
std::vector<uint64_t> SpreadAddresses(const ElfFile& elf, size_t limit, unsigned salt) {
  std::vector<const ElfSymbol*> functions;
  for (const ElfSymbol& s : elf.symbols().symbols()) {
    if (s.type == 2 /* STT_FUNC */ && !s.sizeless && s.size > 0) functions.push_back(&s);
  }
  std::vector<uint64_t> out;
  size_t step = functions.size() <= limit ? 1 : functions.size() / limit;
  for (size_t i = 0; i < functions.size() && out.size() < limit; i += step) {
    const ElfSymbol& s = *functions[i];
    out.push_back(s.address + (s.size * (1 + salt % 7)) / 9);
  }
  return out;
}

struct Answers {
  std::vector<std::vector<SourceFrame>> frames;
};

Answers Batch(dwarf::DebugInfoSource& source, const std::vector<uint64_t>& addresses) {
  Answers a;
  a.frames.resize(addresses.size());
  source.LookupBatch(
      addresses, [&](size_t i) { return &a.frames[i]; }, 2);
  return a;
}

// Returns how many frames were compared.
size_t ExpectSameFrames(const Answers& a, const Answers& b,
                        const std::vector<uint64_t>& addresses) {
  size_t frames = 0;
  for (size_t i = 0; i < addresses.size(); ++i) {
    const auto& fa = a.frames[i];
    const auto& fb = b.frames[i];
    EXPECT_EQ(fa.size(), fb.size()) << std::hex << addresses[i];
    if (fa.size() != fb.size()) continue;
    for (size_t k = 0; k < fa.size(); ++k, ++frames) {
      EXPECT_EQ(fa[k].function, fb[k].function) << std::hex << addresses[i];
      EXPECT_EQ(fa[k].raw_function, fb[k].raw_function);
      EXPECT_EQ(fa[k].file, fb[k].file) << std::hex << addresses[i];
      EXPECT_EQ(fa[k].line, fb[k].line) << std::hex << addresses[i];
      EXPECT_EQ(fa[k].column, fb[k].column);
      EXPECT_EQ(fa[k].inlined, fb[k].inlined);
      EXPECT_EQ(fa[k].discriminator, fb[k].discriminator);
      EXPECT_EQ(fa[k].start_file, fb[k].start_file);
      EXPECT_EQ(fa[k].start_line, fb[k].start_line);
    }
  }
  return frames;
}

std::unique_ptr<dwarf::DebugInfoSource> OpenSource(
    const std::string& binary, bool release, const std::vector<std::string>& debug_dirs = {}) {
  auto elf = ElfFile::Open(binary);
  if (!elf) return nullptr;
  dwarf::DwarfOptions options;
  options.release_streamed_info = release;
  if (!debug_dirs.empty()) options.search.debug_dirs = debug_dirs;
  dwarf::DebugInfoSource::OpenTuning tuning;
  // Streamed, whatever its size (libc's .debug_info is under the default threshold).
  tuning.stream_info_from = release ? 0 : ~uint64_t{0};
  auto source = dwarf::DebugInfoSource::Open(*elf, options, tuning);
  if (!source) return nullptr;
  return std::move(*source);
}

TEST(StreamedRelease, BatchGivesUnitsBackAndAnswersLikeTheWholeSection) {
  auto streamed = OpenSource(kLibc, true);
  auto whole = OpenSource(kLibc, false);
  if (!streamed || !whole) GTEST_SKIP() << "no DWARF for " << kLibc << ": libc6-dbg is missing";
  auto elf = ElfFile::Open(kLibc);
  ASSERT_TRUE(elf);
  std::vector<uint64_t> addresses = SpreadAddresses(**elf, 4000, 1);
  ASSERT_GT(addresses.size(), 1000u);
  addresses.push_back(addresses.front());  // the same address twice in one batch
  Answers a = Batch(*streamed, addresses);
  Answers b = Batch(*whole, addresses);
  EXPECT_GT(streamed->units().released_unit_count(), 100u);
  EXPECT_TRUE(streamed->retired()) << "its .debug_info is partly zeros now";
  EXPECT_EQ(whole->units().released_unit_count(), 0u);
  EXPECT_FALSE(whole->retired());
  EXPECT_GT(ExpectSameFrames(a, b, addresses), addresses.size());
  for (const Error& e : streamed->units().unit_errors()) {
    EXPECT_EQ(e.message.find("given back"), std::string::npos) << e.ToString();
  }
}

TEST(StreamedRelease, DwarfReferringAcrossUnitsIsLeftWhole) {
  auto streamed = OpenSource(kPython, true);
  auto whole = OpenSource(kPython, false);
  if (!streamed || !whole)
    GTEST_SKIP() << "no DWARF for " << kPython << ": python3.11-dbg is missing";
  ASSERT_TRUE(streamed->files().main()->MayReferAcrossUnits())
      << "Debian's python3.11 debug file uses DW_FORM_ref_addr";
  auto elf = ElfFile::Open(kPython);
  ASSERT_TRUE(elf);
  std::vector<uint64_t> addresses = SpreadAddresses(**elf, 2000, 2);
  ASSERT_GT(addresses.size(), 500u);
  Answers a = Batch(*streamed, addresses);
  Answers b = Batch(*whole, addresses);
  EXPECT_EQ(streamed->units().released_unit_count(), 0u);
  EXPECT_FALSE(streamed->retired());
  EXPECT_GT(ExpectSameFrames(a, b, addresses), addresses.size());
}

// A copy of libc's debug file, .debug_info corrupted from its middle on, under a debug dir
// of its own: what the batch answered before the stream failed is taken back, as if the file
// had no DWARF (every address falls back to the symbol table), and the reason is said.
TEST(StreamedRelease, StreamFailingHalfWayTakesTheAnswersBack) {
  auto elf = ElfFile::Open(kLibc);
  ASSERT_TRUE(elf);
  const std::string id = (*elf)->build_id_hex();
  const std::string original =
      "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  if (id.size() < 4 || !std::filesystem::exists(original)) {
    GTEST_SKIP() << "no " << original << ": libc6-dbg is missing";
  }
  auto debug = ElfFile::Open(original);
  ASSERT_TRUE(debug);
  const ElfSection* info = (*debug)->FindSection(".debug_info");
  ASSERT_NE(info, nullptr);
  std::ifstream in(original, std::ios::binary);
  std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  // Past the middle: units before it are answered (and given back) first.
  const size_t at = static_cast<size_t>(info->offset + info->size * 3 / 4);
  for (size_t i = at; i < at + 256; ++i) bytes[i] ^= 0x5a;
  const std::string dir = std::string(STACKSYM_BINARY_DIR) + "/streamed_release_test_debug";
  std::filesystem::create_directories(dir + "/.build-id/" + id.substr(0, 2));
  std::ofstream(dir + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug",
                std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));

  auto source = OpenSource(kLibc, true, {dir});
  ASSERT_TRUE(source) << "Open returns before the stream is checked";
  std::vector<uint64_t> addresses = SpreadAddresses(**elf, 4000, 3);
  Answers a = Batch(*source, addresses);
  for (size_t i = 0; i < addresses.size(); ++i) {
    EXPECT_TRUE(a.frames[i].empty()) << std::hex << addresses[i];
  }
  EXPECT_GT(source->units().released_unit_count(), 0u) << "units before the damage were answered";
  ASSERT_FALSE(source->units().unit_errors().empty());
  std::filesystem::remove_all(dir);
}

// The symbolizer a one-batch command uses: after the batch gave its DWARF back, further
// batches and single lookups open it again and answer as a symbolizer that kept it.
TEST(StreamedRelease, SymbolizerOpensTheDwarfAgainAfterABatch) {
  if (!std::filesystem::exists(kCeph)) GTEST_SKIP() << "no " << kCeph << ": librados2 is missing";
  SymbolizeOptions releasing;
  releasing.release_dwarf_as_read = true;
  auto a = ElfSymbolizer::Open(kCeph, releasing);
  auto b = ElfSymbolizer::Open(kCeph, SymbolizeOptions{});
  ASSERT_TRUE(a && b);
  auto elf = ElfFile::Open(kCeph);
  ASSERT_TRUE(elf);
  std::vector<uint64_t> first = SpreadAddresses(**elf, 3000, 4);
  std::vector<uint64_t> second = SpreadAddresses(**elf, 3000, 5);
  size_t named = 0;
  for (const auto* batch : {&first, &second}) {
    std::vector<SymbolizedAddress> ra = (*a)->SymbolizeBatch(*batch, AddressKind::kVirtual);
    std::vector<SymbolizedAddress> rb = (*b)->SymbolizeBatch(*batch, AddressKind::kVirtual);
    ASSERT_EQ(ra.size(), rb.size());
    for (size_t i = 0; i < ra.size(); ++i) {
      ASSERT_EQ(ra[i].frames.size(), rb[i].frames.size()) << std::hex << (*batch)[i];
      for (size_t k = 0; k < ra[i].frames.size(); ++k) {
        EXPECT_EQ(ra[i].frames[k].function, rb[i].frames[k].function);
        EXPECT_EQ(ra[i].frames[k].file, rb[i].frames[k].file);
        EXPECT_EQ(ra[i].frames[k].line, rb[i].frames[k].line);
        named += !ra[i].frames[k].file.empty();
      }
    }
  }
  if (named == 0) GTEST_SKIP() << "no DWARF for " << kCeph << ": librados2-dbg is missing";
  SymbolizedAddress one_a = (*a)->Symbolize(first[7], AddressKind::kVirtual);
  SymbolizedAddress one_b = (*b)->Symbolize(first[7], AddressKind::kVirtual);
  ASSERT_EQ(one_a.frames.size(), one_b.frames.size());
  for (size_t k = 0; k < one_a.frames.size(); ++k) {
    EXPECT_EQ(one_a.frames[k].function, one_b.frames[k].function);
    EXPECT_EQ(one_a.frames[k].line, one_b.frames[k].line);
  }
}

}  // namespace
}  // namespace stacksym
