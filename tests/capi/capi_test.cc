// The C API gives the same answers as the C++ classes it wraps, reports errors as codes and
// messages, and keeps its results valid after the handle is gone.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../symbolize/test_util.h"
#include "stacksym/elf.h"
#include "stacksym/normalize.h"
#include "stacksym/stacksym.h"
#include "stacksym/symbolize.h"

namespace stacksym {
namespace {

using testing::FixturePath;
using testing::RunNm;

std::string Fixture() { return FixturePath("capi_example_target"); }

// Addresses inside every sized function of the fixture, plus some that are in no segment.
std::vector<uint64_t> FixtureAddresses() {
  std::vector<uint64_t> out;
  for (const auto& s : RunNm(Fixture(), "")) {
    if (s.type != 'T' && s.type != 't') continue;
    for (uint64_t d : {0ul, 3ul, s.size / 2, s.size - 1}) out.push_back(s.address + d);
  }
  out.push_back(1);
  out.push_back(0xffffffff00ull);
  return out;
}

void ExpectSame(const SymbolizedAddress& cpp, const stacksym_symbolized& c) {
  SCOPED_TRACE(testing::Hex(cpp.input));
  EXPECT_EQ(cpp.input, c.input);
  EXPECT_EQ(cpp.vaddr, c.vaddr);
  ASSERT_EQ(cpp.reason.has_value(), c.reason != STACKSYM_REASON_NONE);
  if (cpp.reason) {
    EXPECT_STREQ(ReasonName(*cpp.reason), stacksym_reason_name(c.reason));
  }
  EXPECT_EQ(cpp.symbol, c.symbol);
  EXPECT_EQ(cpp.raw_symbol, c.raw_symbol);
  EXPECT_EQ(cpp.symbol_address, c.symbol_address);
  EXPECT_EQ(cpp.symbol_size, c.symbol_size);
  EXPECT_EQ(cpp.offset, c.offset);
  EXPECT_EQ(cpp.module, c.module);
  ASSERT_EQ(cpp.frames.size(), c.frame_count);
  for (size_t i = 0; i < c.frame_count; ++i) {
    const SourceFrame& f = cpp.frames[i];
    EXPECT_EQ(f.function, c.frames[i].function);
    EXPECT_EQ(f.raw_function, c.frames[i].raw_function);
    EXPECT_EQ(f.file, c.frames[i].file ? c.frames[i].file : "");
    EXPECT_EQ(f.line, c.frames[i].line);
    EXPECT_EQ(f.column, c.frames[i].column);
    EXPECT_EQ(f.inlined, c.frames[i].inlined != 0);
  }
}

TEST(CApi, ElfAnswersEqualTheCppSymbolizerAndOutliveTheHandle) {
  std::vector<uint64_t> addrs = FixtureAddresses();
  ASSERT_GT(addrs.size(), 20u);
  auto cpp = ElfSymbolizer::Open(Fixture());
  ASSERT_TRUE(cpp) << cpp.error().ToString();
  for (auto kind : {STACKSYM_VIRTUAL_ADDRESS, STACKSYM_FILE_OFFSET}) {
    stacksym_elf* elf = nullptr;
    ASSERT_EQ(stacksym_elf_open(Fixture().c_str(), nullptr, &elf), STACKSYM_OK)
        << stacksym_last_error();
    EXPECT_EQ(std::string(stacksym_elf_build_id(elf)), (*cpp)->elf().build_id_hex());
    stacksym_symbolized_list* list = nullptr;
    ASSERT_EQ(stacksym_elf_symbolize(elf, addrs.data(), addrs.size(), kind, &list), STACKSYM_OK);
    stacksym_elf_close(elf);  // the list stays valid
    auto expected = (*cpp)->SymbolizeBatch(
        addrs, kind == STACKSYM_FILE_OFFSET ? AddressKind::kFileOffset : AddressKind::kVirtual);
    ASSERT_EQ(list->count, expected.size());
    size_t with_frames = 0, inlined = 0;
    for (size_t i = 0; i < list->count; ++i) {
      ExpectSame(expected[i], list->items[i]);
      with_frames += list->items[i].frame_count > 0;
      inlined += list->items[i].frame_count > 1;
    }
    EXPECT_GT(with_frames, addrs.size() / 2);
    EXPECT_GT(inlined, 0u) << "the fixture inlines Holder::Peek";
    EXPECT_EQ(list->items[addrs.size() - 1].reason, STACKSYM_REASON_NOT_IN_SEGMENT);
    stacksym_symbolized_list_free(list);
  }
}

TEST(CApi, OptionsAreApplied) {
  stacksym_options options;
  stacksym_options_init(&options);
  EXPECT_EQ(options.demangle, 1);
  options.demangle = 0;
  options.debug_info = 0;
  stacksym_elf* elf = nullptr;
  ASSERT_EQ(stacksym_elf_open(Fixture().c_str(), &options, &elf), STACKSYM_OK);
  std::vector<uint64_t> addrs = FixtureAddresses();
  stacksym_symbolized_list* list = nullptr;
  ASSERT_EQ(
      stacksym_elf_symbolize(elf, addrs.data(), addrs.size(), STACKSYM_VIRTUAL_ADDRESS, &list),
      STACKSYM_OK);
  bool mangled = false;
  for (size_t i = 0; i < list->count; ++i) {
    EXPECT_EQ(list->items[i].frame_count, 0u) << "no DWARF asked for";
    mangled |= std::string(list->items[i].symbol).starts_with("_ZN7fixture");
  }
  EXPECT_TRUE(mangled);
  stacksym_symbolized_list_free(list);
  stacksym_elf_close(elf);
}

TEST(CApi, ErrorsAreCodesAndMessages) {
  stacksym_elf* elf = reinterpret_cast<stacksym_elf*>(1);
  EXPECT_EQ(stacksym_elf_open("/nonexistent/stacksym-capi", nullptr, &elf),
            STACKSYM_ERROR_NOT_FOUND);
  EXPECT_EQ(elf, nullptr);
  EXPECT_NE(std::string(stacksym_last_error()).find("/nonexistent/stacksym-capi"),
            std::string::npos)
      << stacksym_last_error();
  EXPECT_EQ(stacksym_elf_open("/proc/self/status", nullptr, &elf), STACKSYM_ERROR_MALFORMED)
      << stacksym_last_error();
  EXPECT_EQ(stacksym_elf_open(nullptr, nullptr, &elf), STACKSYM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(stacksym_elf_open(Fixture().c_str(), nullptr, nullptr),
            STACKSYM_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(stacksym_status_name(STACKSYM_ERROR_INVALID_ARGUMENT), "invalid_argument");
  EXPECT_STREQ(stacksym_reason_name(STACKSYM_REASON_NO_SYMBOL), "no_symbol");
  // Any int is a value of the C enums (clang's -fsanitize=enum checks that it is one).
  EXPECT_STREQ(stacksym_reason_name(static_cast<stacksym_reason>(99)), "unknown");
  EXPECT_STREQ(stacksym_reason_text(static_cast<stacksym_reason>(1000000)), "unknown reason");
  EXPECT_STREQ(stacksym_status_name(static_cast<stacksym_status>(99)), "unknown");
  ASSERT_EQ(stacksym_elf_open(Fixture().c_str(), nullptr, &elf), STACKSYM_OK);
  EXPECT_STREQ(stacksym_last_error(), "") << "a successful call clears the last error";
  stacksym_symbolized_list* list = nullptr;
  EXPECT_EQ(stacksym_elf_symbolize(elf, nullptr, 3, STACKSYM_VIRTUAL_ADDRESS, &list),
            STACKSYM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(stacksym_elf_symbolize(elf, nullptr, 0, STACKSYM_VIRTUAL_ADDRESS, &list), STACKSYM_OK);
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(list->count, 0u);
  stacksym_symbolized_list_free(list);
  stacksym_symbolized_list_free(nullptr);
  stacksym_elf_close(elf);
  stacksym_elf_close(nullptr);
}

TEST(CApi, LastErrorIsPerThread) {
  stacksym_elf* elf = nullptr;
  ASSERT_NE(stacksym_elf_open("/nonexistent/a", nullptr, &elf), STACKSYM_OK);
  std::string other;
  std::thread([&] {
    other = stacksym_last_error();
    stacksym_elf* e = nullptr;
    (void)stacksym_elf_open("/nonexistent/b", nullptr, &e);
  }).join();
  EXPECT_EQ(other, "");
  EXPECT_NE(std::string(stacksym_last_error()).find("/nonexistent/a"), std::string::npos);
}

__attribute__((noinline)) int CapiTestMarker(int x) { return x * 3 + 1; }

TEST(CApi, ProcessAndNormalizeAgreeWithTheCppClasses) {
  uint64_t here = reinterpret_cast<uint64_t>(&CapiTestMarker);
  std::vector<uint64_t> addrs = {here, here + 1, 0x10};
  stacksym_process* process = nullptr;
  ASSERT_EQ(stacksym_process_new(nullptr, &process), STACKSYM_OK);
  stacksym_symbolized_list* list = nullptr;
  EXPECT_EQ(stacksym_process_symbolize(process, 0, addrs.data(), addrs.size(), &list),
            STACKSYM_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(stacksym_process_symbolize(process, getpid(), addrs.data(), addrs.size(), &list),
            STACKSYM_OK)
      << stacksym_last_error();
  ASSERT_EQ(list->count, 3u);
  EXPECT_NE(std::string(list->items[0].symbol).find("CapiTestMarker"), std::string::npos)
      << list->items[0].symbol;
  EXPECT_EQ(list->items[2].reason, STACKSYM_REASON_UNMAPPED);
  stacksym_symbolized_list_free(list);
  stacksym_process_free(process);

  stacksym_normalizer* normalizer = nullptr;
  ASSERT_EQ(stacksym_normalizer_new(1, &normalizer), STACKSYM_OK);
  stacksym_normalized* normalized = nullptr;
  ASSERT_EQ(stacksym_normalize(normalizer, getpid(), addrs.data(), addrs.size(), &normalized),
            STACKSYM_OK);
  Normalizer cpp;
  auto expected = cpp.Normalize(getpid(), addrs);
  ASSERT_TRUE(expected);
  ASSERT_EQ(normalized->address_count, expected->addresses.size());
  ASSERT_EQ(normalized->module_count, expected->modules.size());
  for (size_t i = 0; i < addrs.size(); ++i) {
    const auto& e = expected->addresses[i];
    EXPECT_EQ(normalized->addresses[i].module, e.module);
    if (e.ok()) {
      EXPECT_EQ(normalized->addresses[i].file_offset, e.file_offset);
    }
  }
  ASSERT_NE(normalized->addresses[0].module, STACKSYM_NO_MODULE);
  const stacksym_module& m = normalized->modules[normalized->addresses[0].module];
  EXPECT_EQ(m.kind, STACKSYM_MODULE_ELF);
  EXPECT_EQ(std::filesystem::canonical(m.path), std::filesystem::canonical("/proc/self/exe"));
  auto self = ElfFile::Open("/proc/self/exe");
  ASSERT_TRUE(self);
  EXPECT_EQ(ToHex(std::span<const uint8_t>(m.build_id, m.build_id_size)), (*self)->build_id_hex());
  EXPECT_EQ(normalized->addresses[2].reason, STACKSYM_REASON_UNMAPPED);
  stacksym_normalized_free(normalized);
  stacksym_normalizer_free(normalizer);
}

TEST(CApi, BuildIdPairsAreFoundInTheDebugDirs) {
  auto elf = ElfFile::Open(Fixture());
  ASSERT_TRUE(elf);
  std::string hex = (*elf)->build_id_hex();
  ASSERT_GE(hex.size(), 4u);
  auto dir = std::filesystem::temp_directory_path() / ("stacksym-capi-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / ".build-id" / hex.substr(0, 2));
  std::filesystem::create_symlink(Fixture(), dir / ".build-id" / hex.substr(0, 2) / hex.substr(2));
  std::string dir_string = dir.string();
  const char* dirs[] = {dir_string.c_str()};
  stacksym_options options;
  stacksym_options_init(&options);
  options.debug_dirs = dirs;
  options.debug_dir_count = 1;
  stacksym_build_ids* symbolizer = nullptr;
  ASSERT_EQ(stacksym_build_ids_new(&options, &symbolizer), STACKSYM_OK);

  std::vector<uint64_t> offsets;
  for (uint64_t a : FixtureAddresses()) {
    if (auto off = (*elf)->VaddrToFileOffset(a)) offsets.push_back(*off);
  }
  std::span<const uint8_t> id = (*elf)->build_id();
  const uint8_t unknown[] = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<stacksym_build_id_offset> pairs;
  for (uint64_t off : offsets) pairs.push_back({id.data(), id.size(), off});
  pairs.push_back({unknown, sizeof unknown, 0x1000});
  stacksym_symbolized_list* list = nullptr;
  ASSERT_EQ(stacksym_build_ids_symbolize(symbolizer, pairs.data(), pairs.size(), &list),
            STACKSYM_OK);
  auto cpp = ElfSymbolizer::Open(Fixture());
  ASSERT_TRUE(cpp);
  auto expected = (*cpp)->SymbolizeBatch(offsets, AddressKind::kFileOffset);
  ASSERT_EQ(list->count, offsets.size() + 1);
  for (size_t i = 0; i < offsets.size(); ++i) {
    EXPECT_EQ(list->items[i].symbol, expected[i].symbol);
    EXPECT_EQ(list->items[i].frame_count, expected[i].frames.size());
  }
  EXPECT_EQ(list->items[offsets.size()].reason, STACKSYM_REASON_NOT_FOUND);
  stacksym_symbolized_list_free(list);
  stacksym_build_ids_free(symbolizer);
  std::filesystem::remove_all(dir);
}

TEST(CApi, HandlesOnDifferentThreadsAtOnce) {
  std::vector<uint64_t> addrs = FixtureAddresses();
  std::vector<std::vector<std::string>> names(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < names.size(); ++t) {
    threads.emplace_back([&, t] {
      stacksym_elf* elf = nullptr;
      if (stacksym_elf_open(Fixture().c_str(), nullptr, &elf) != STACKSYM_OK) return;
      stacksym_symbolized_list* list = nullptr;
      if (stacksym_elf_symbolize(elf, addrs.data(), addrs.size(), STACKSYM_VIRTUAL_ADDRESS,
                                 &list) == STACKSYM_OK) {
        for (size_t i = 0; i < list->count; ++i) names[t].push_back(list->items[i].symbol);
        stacksym_symbolized_list_free(list);
      }
      stacksym_elf_close(elf);
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(names[0].size(), addrs.size());
  for (size_t t = 1; t < names.size(); ++t) EXPECT_EQ(names[t], names[0]);
}

// SymbolizeOptions::short_function_names (the drop-in's --functions=short): DWARF's
// DW_AT_name over the linkage name and the symbol table, for out-of-line and inlined frames.
TEST(CApi, ShortFunctionNamesAreDwarfNames) {
  uint64_t read_at = 0;
  for (const auto& s : RunNm(Fixture(), "")) {
    if (s.name == "_ZN7fixture6ReadAtEPKii") read_at = s.address;
  }
  ASSERT_NE(read_at, 0u);
  SymbolizeOptions options;
  options.threads = 1;
  auto linkage = ElfSymbolizer::Open(Fixture(), options);
  options.short_function_names = true;
  auto short_names = ElfSymbolizer::Open(Fixture(), options);
  ASSERT_TRUE(linkage && short_names);
  SymbolizedAddress a = (*linkage)->Symbolize(read_at, AddressKind::kVirtual);
  SymbolizedAddress b = (*short_names)->Symbolize(read_at, AddressKind::kVirtual);
  ASSERT_FALSE(a.frames.empty());
  ASSERT_FALSE(b.frames.empty());
  EXPECT_EQ(a.frames.back().function, "fixture::ReadAt(int const*, int)");
  EXPECT_EQ(b.frames.back().function, "ReadAt");
  EXPECT_EQ(b.frames.back().file, a.frames.back().file);
  EXPECT_EQ(b.frames.back().line, a.frames.back().line);
  // Every frame of every address: a short name has no scope and no parameter list (the
  // fixture has no operators or lambdas, whose DW_AT_name has them).
  for (uint64_t address : FixtureAddresses()) {
    for (const SourceFrame& f : (*short_names)->Symbolize(address, AddressKind::kVirtual).frames) {
      EXPECT_EQ(f.function.find('('), std::string::npos) << f.function;
      EXPECT_EQ(f.function.find("::"), std::string::npos) << f.function;
    }
  }
}

// stacksym_frame_start_file/start_line/discriminator: the C++ frames' start_file,
// start_line and discriminator; NULL / 0 for a frame of another list.
TEST(CApi, FrameStartsAndDiscriminatorsEqualTheCppFrames) {
  std::vector<uint64_t> addrs = FixtureAddresses();
  auto cpp = ElfSymbolizer::Open(Fixture());
  ASSERT_TRUE(cpp) << cpp.error().ToString();
  std::vector<SymbolizedAddress> expected = (*cpp)->SymbolizeBatch(addrs, AddressKind::kVirtual);
  stacksym_elf* elf = nullptr;
  ASSERT_EQ(stacksym_elf_open(Fixture().c_str(), nullptr, &elf), STACKSYM_OK);
  stacksym_symbolized_list* list = nullptr;
  stacksym_symbolized_list* other = nullptr;
  ASSERT_EQ(
      stacksym_elf_symbolize(elf, addrs.data(), addrs.size(), STACKSYM_VIRTUAL_ADDRESS, &list),
      STACKSYM_OK);
  ASSERT_EQ(stacksym_elf_symbolize(elf, addrs.data(), 1, STACKSYM_VIRTUAL_ADDRESS, &other),
            STACKSYM_OK);
  ASSERT_EQ(list->count, expected.size());
  size_t with_start = 0;
  for (size_t i = 0; i < list->count; ++i) {
    const stacksym_symbolized& c = list->items[i];
    ASSERT_EQ(c.frame_count, expected[i].frames.size());
    for (size_t k = 0; k < c.frame_count; ++k) {
      const SourceFrame& f = expected[i].frames[k];
      const char* file = stacksym_frame_start_file(list, &c.frames[k]);
      EXPECT_EQ(f.start_file, file ? file : "");
      EXPECT_EQ(f.start_line, stacksym_frame_start_line(list, &c.frames[k]));
      EXPECT_EQ(f.discriminator, stacksym_frame_discriminator(list, &c.frames[k]));
      with_start += f.start_line != 0 && !f.start_file.empty();
      if (other->items[0].frame_count == 0) continue;
      // A frame of another list is not one of this list's.
      EXPECT_EQ(stacksym_frame_start_line(list, &other->items[0].frames[0]), 0u);
      EXPECT_EQ(stacksym_frame_start_file(list, &other->items[0].frames[0]), nullptr);
    }
  }
  EXPECT_GE(with_start, 10u);
  EXPECT_EQ(stacksym_frame_start_line(nullptr, nullptr), 0u);
  EXPECT_EQ(stacksym_frame_discriminator(list, nullptr), 0u);
  stacksym_symbolized_list_free(other);
  stacksym_symbolized_list_free(list);
  stacksym_elf_close(elf);
}

// stacksym_*_set_function_names(SHORT): the answers of SymbolizeOptions::short_function_names.
TEST(CApi, ShortFunctionNamesThroughTheCApi) {
  std::vector<uint64_t> addrs = FixtureAddresses();
  SymbolizeOptions options;
  options.short_function_names = true;
  auto cpp = ElfSymbolizer::Open(Fixture(), options);
  ASSERT_TRUE(cpp) << cpp.error().ToString();
  stacksym_elf* elf = nullptr;
  ASSERT_EQ(stacksym_elf_open(Fixture().c_str(), nullptr, &elf), STACKSYM_OK);
  EXPECT_EQ(stacksym_elf_set_function_names(elf, static_cast<stacksym_function_names>(7)),
            STACKSYM_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(stacksym_elf_set_function_names(elf, STACKSYM_FUNCTION_NAMES_SHORT), STACKSYM_OK)
      << stacksym_last_error();
  stacksym_symbolized_list* list = nullptr;
  ASSERT_EQ(
      stacksym_elf_symbolize(elf, addrs.data(), addrs.size(), STACKSYM_VIRTUAL_ADDRESS, &list),
      STACKSYM_OK);
  std::vector<SymbolizedAddress> expected = (*cpp)->SymbolizeBatch(addrs, AddressKind::kVirtual);
  bool read_at = false;
  for (size_t i = 0; i < list->count; ++i) {
    ExpectSame(expected[i], list->items[i]);
    for (size_t k = 0; k < list->items[i].frame_count; ++k)
      read_at |= std::string(list->items[i].frames[k].function) == "ReadAt";
  }
  EXPECT_TRUE(read_at);
  stacksym_symbolized_list_free(list);
  // And back to linkage names.
  ASSERT_EQ(stacksym_elf_set_function_names(elf, STACKSYM_FUNCTION_NAMES_LINKAGE), STACKSYM_OK);
  ASSERT_EQ(
      stacksym_elf_symbolize(elf, addrs.data(), addrs.size(), STACKSYM_VIRTUAL_ADDRESS, &list),
      STACKSYM_OK);
  auto linkage = ElfSymbolizer::Open(Fixture());
  ASSERT_TRUE(linkage);
  expected = (*linkage)->SymbolizeBatch(addrs, AddressKind::kVirtual);
  for (size_t i = 0; i < list->count; ++i) ExpectSame(expected[i], list->items[i]);
  stacksym_symbolized_list_free(list);
  stacksym_elf_close(elf);
  // The other handles take the setting too.
  stacksym_process* process = nullptr;
  ASSERT_EQ(stacksym_process_new(nullptr, &process), STACKSYM_OK);
  EXPECT_EQ(stacksym_process_set_function_names(process, STACKSYM_FUNCTION_NAMES_SHORT),
            STACKSYM_OK);
  EXPECT_EQ(stacksym_process_set_function_names(nullptr, STACKSYM_FUNCTION_NAMES_SHORT),
            STACKSYM_ERROR_INVALID_ARGUMENT);
  stacksym_process_free(process);
  stacksym_build_ids* ids = nullptr;
  ASSERT_EQ(stacksym_build_ids_new(nullptr, &ids), STACKSYM_OK);
  EXPECT_EQ(stacksym_build_ids_set_function_names(ids, STACKSYM_FUNCTION_NAMES_SHORT), STACKSYM_OK);
  stacksym_build_ids_free(ids);
}

}  // namespace
}  // namespace stacksym
