// Differential test: every address of every function of each fixture, symbolized by
// DebugInfoSource and by `llvm-symbolizer --inlines`; function (raw linkage name), file, line,
// column and inline depth must agree. Where they differ and addr2line agrees with us, the
// difference is reported as an llvm-symbolizer quirk; any other difference fails the test.
// Every difference is printed.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dwarf/debug_info_source.h"
#include "stacksym/elf.h"
#include "symbolizer_reference.h"

namespace stacksym {
namespace {

using testing::RefChain;
using testing::RefFrame;

struct DiffCase {
  const char* fixture;    // file we symbolize
  const char* reference;  // file llvm-symbolizer reads (same DWARF; differs for zstd, which
                          // llvm-symbolizer 14 cannot decompress)
};

std::string Describe(const RefChain& chain) {
  std::string out;
  for (const RefFrame& f : chain) {
    out += "    " + f.function + " @ " + f.file + ":" + std::to_string(f.line) + ":" +
           std::to_string(f.column) + "\n";
  }
  return out;
}

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// What llvm-symbolizer would print from our answer (before its symbol-table override).
RefChain ToChain(const std::vector<SourceFrame>& frames) {
  RefChain chain;
  if (frames.empty()) {
    chain.push_back({"??", "??", 0, 0});
    return chain;
  }
  for (const SourceFrame& f : frames) {
    chain.push_back({f.raw_function.empty() ? "??" : f.raw_function, f.file.empty() ? "??" : f.file,
                     f.line, f.column});
  }
  return chain;
}

bool SameFrames(const RefChain& ours, const RefChain& llvm,
                const std::vector<std::string>& aliases) {
  if (ours.size() != llvm.size()) return false;
  for (size_t i = 0; i < ours.size(); ++i) {
    const RefFrame& a = ours[i];
    const RefFrame& b = llvm[i];
    bool outermost = i + 1 == ours.size();
    bool name_ok = a.function == b.function;
    // llvm-symbolizer names the out-of-line frame from the symbol table when a symbol covers
    // the address (any alias at that symbol's start); the DWARF name is what we check here.
    if (!name_ok && outermost) {
      for (const std::string& alias : aliases) name_ok |= alias == b.function;
    }
    if (!name_ok || a.file != b.file || a.line != b.line || a.column != b.column) return false;
  }
  return true;
}

// addr2line prints no columns and may spell paths differently: compare names, basenames, lines.
bool Addr2lineAgrees(const RefChain& ours, const RefChain& a2l) {
  if (ours.size() != a2l.size()) return false;
  for (size_t i = 0; i < ours.size(); ++i) {
    if (ours[i].function != a2l[i].function || ours[i].line != a2l[i].line ||
        Basename(ours[i].file) != Basename(a2l[i].file)) {
      return false;
    }
  }
  return true;
}

class LlvmDiffTest : public ::testing::TestWithParam<DiffCase> {};

TEST_P(LlvmDiffTest, MatchesLlvmSymbolizer) {
  if (!testing::ToolExists("llvm-symbolizer")) GTEST_SKIP() << "llvm-symbolizer not installed";
  std::string path = std::string(STACKSYM_FIXTURE_DIR) + "/" + GetParam().fixture;
  std::string reference = std::string(STACKSYM_FIXTURE_DIR) + "/" + GetParam().reference;
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf) << elf.error().ToString();
  dwarf::DwarfOptions options;
  options.demangle = false;
  auto source = dwarf::DebugInfoSource::Open(*elf, options);
  ASSERT_TRUE(source) << source.error().ToString();
  ASSERT_NE(*source, nullptr) << "no DWARF found in " << path;

  std::vector<uint64_t> addresses = testing::FunctionAddresses(reference, 30000);
  ASSERT_GT(addresses.size(), 100u);
  std::vector<RefChain> llvm = testing::RunLlvmSymbolizer(reference, addresses);
  ASSERT_EQ(llvm.size(), addresses.size()) << "could not run/parse llvm-symbolizer";
  std::vector<RefChain> a2l;
  if (testing::ToolExists("addr2line")) a2l = testing::RunAddr2line(reference, addresses);
  std::multimap<uint64_t, std::string> nm = testing::NmSymbols(reference);

  // Three ways to the same answers, each checked against llvm-symbolizer:
  //  - lazy: Lookup() one address at a time (each unit's full tables on first use);
  //  - batch: LookupBatch() of all addresses on two threads (tables built only for them);
  //  - completion: LookupBatch() of every 7th address, then Lookup() of all of them, so most
  //    addresses land in tables built for other addresses and must complete them first.
  //  - streamed: as batch, but a compressed .debug_info is decompressed in the background
  //    while the units already final are parsed (forced here on these small files).
  constexpr int kModeCount = 4;
  const char* const kModes[kModeCount] = {"lazy", "batch", "completion", "streamed"};
  std::vector<std::vector<RefChain>> ours(kModeCount);
  std::unique_ptr<dwarf::DebugInfoSource> sources[kModeCount];
  sources[0] = std::move(*source);
  for (int m = 1; m < kModeCount; ++m) {
    // A fresh ElfFile for the streamed mode: sections already decompressed do not stream.
    auto file = m == 3 ? ElfFile::Open(path) : Result<std::shared_ptr<ElfFile>>(*elf);
    ASSERT_TRUE(file);
    dwarf::DebugInfoSource::OpenTuning tuning;
    if (m == 3) tuning.stream_info_from = 0;
    auto s = dwarf::DebugInfoSource::Open(*file, options, tuning);
    ASSERT_TRUE(s && *s);
    sources[m] = std::move(*s);
  }
  std::vector<SourceFrame> frames;
  for (uint64_t a : addresses) {
    sources[0]->Lookup(a, &frames);
    ours[0].push_back(ToChain(frames));
  }
  std::vector<std::vector<SourceFrame>> batch(addresses.size());
  sources[1]->LookupBatch(
      addresses, [&](size_t i) { return &batch[i]; }, 2);
  for (const auto& f : batch) ours[1].push_back(ToChain(f));
  std::vector<uint64_t> every7th;
  for (size_t i = 0; i < addresses.size(); i += 7) every7th.push_back(addresses[i]);
  std::vector<std::vector<SourceFrame>> first(every7th.size());
  sources[2]->LookupBatch(
      every7th, [&](size_t i) { return &first[i]; }, 2);
  for (uint64_t a : addresses) {
    sources[2]->Lookup(a, &frames);
    ours[2].push_back(ToChain(frames));
  }
  std::vector<std::vector<SourceFrame>> streamed(addresses.size());
  sources[3]->LookupBatch(
      addresses, [&](size_t i) { return &streamed[i]; }, 2);
  for (const auto& f : streamed) ours[3].push_back(ToChain(f));
  std::string name = GetParam().fixture;
  if (name.find("zlib") != std::string::npos || name.find("zstd") != std::string::npos) {
    EXPECT_GT(sources[3]->units().prebuilt_unit_count(), 0u) << "the streamed path was not taken";
  }

  size_t differ = 0;
  for (int m = 0; m < kModeCount; ++m) {
    size_t agree = 0, quirks = 0, inlined = 0, mode_differ = 0;
    for (size_t i = 0; i < addresses.size(); ++i) {
      uint64_t a = addresses[i];
      std::vector<std::string> aliases;
      if (const ElfSymbol* s = (*elf)->symbols().Find(a)) {
        auto [lo, hi] = nm.equal_range(s->address);
        for (auto it = lo; it != hi; ++it) aliases.push_back(it->second);
      }
      if (llvm[i].size() > 1) ++inlined;
      if (SameFrames(ours[m][i], llvm[i], aliases)) {
        ++agree;
        continue;
      }
      bool quirk = !a2l.empty() && Addr2lineAgrees(ours[m][i], a2l[i]);
      (quirk ? quirks : mode_differ)++;
      char hex[32];
      std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(a));
      std::printf("%s %s (%s):\n  ours:\n%s  llvm-symbolizer:\n%s", quirk ? "QUIRK" : "DIFF", hex,
                  kModes[m], Describe(ours[m][i]).c_str(), Describe(llvm[i]).c_str());
    }
    std::printf(
        "%s (%s): %zu addresses (%zu with inline frames), %zu agree, %zu llvm quirks "
        "(addr2line agrees with us), %zu differ; %zu of %zu units parsed\n",
        GetParam().fixture, kModes[m], addresses.size(), inlined, agree, quirks, mode_differ,
        sources[m]->units().parsed_unit_count(), sources[m]->units().unit_count());
    differ += mode_differ;
    // The fixtures are built to inline heavily when optimized: the test must see inline chains.
    if (std::string(GetParam().fixture).find("_o0_") == std::string::npos) {
      EXPECT_GT(inlined, 10u);
    }
    EXPECT_TRUE(sources[m]->units().unit_errors().empty())
        << sources[m]->units().unit_errors().front().ToString();
  }
  EXPECT_EQ(differ, 0u);
}

#define CASES(tag)                                                           \
  DiffCase{"dwarf_" tag "_cxx_o0_d4", "dwarf_" tag "_cxx_o0_d4"},            \
      DiffCase{"dwarf_" tag "_cxx_o2_d4", "dwarf_" tag "_cxx_o2_d4"},        \
      DiffCase{"dwarf_" tag "_cxx_o0_d5", "dwarf_" tag "_cxx_o0_d5"},        \
      DiffCase{"dwarf_" tag "_cxx_o2_d5", "dwarf_" tag "_cxx_o2_d5"},        \
      DiffCase{"dwarf_" tag "_cxx_o2_d5.zstd", "dwarf_" tag "_cxx_o2_d5"},   \
      DiffCase{"dwarf_" tag "_cxx_o3_d5", "dwarf_" tag "_cxx_o3_d5"},        \
      DiffCase{"dwarf_" tag "_cxx_o2_zlib", "dwarf_" tag "_cxx_o2_zlib"},    \
      DiffCase{"dwarf_" tag "_cxx_o2_d5_64", "dwarf_" tag "_cxx_o2_d5_64"},  \
      DiffCase{"dwarf_" tag "_c_o0_d5", "dwarf_" tag "_c_o0_d5"},            \
      DiffCase{"dwarf_" tag "_c_o2_d4", "dwarf_" tag "_c_o2_d4"},            \
      DiffCase{"dwarf_" tag "_c_o2_d3", "dwarf_" tag "_c_o2_d3"}, DiffCase { \
    "dwarf_" tag "_c_o1_d2", "dwarf_" tag "_c_o1_d2"                         \
  }

// dwz and split DWARF. llvm-symbolizer 14 cannot read names from a dwz supplementary file
// (DW_FORM_GNU_ref_alt: it prints "??") and addr2line 2.40 fails on some of them too, so the
// reference for the supplementary-file case is llvm-symbolizer on the same binary before dwz
// (dwz rewrites only debug sections: same code, same answers expected).
#define SPECIAL_CASES                                                      \
  DiffCase{"dwarf_gcc_cxx_dwz", "dwarf_gcc_cxx_dwz"},                      \
      DiffCase{"dwarf_gcc_cxx_dwz_alt", "dwarf_gcc_cxx_dwz_alt.orig"},     \
      DiffCase{"dwarf_gcc_cxx_split4", "dwarf_gcc_cxx_split4"},            \
      DiffCase{"dwarf_gcc_cxx_split5", "dwarf_gcc_cxx_split5"}, DiffCase { \
    "dwarf_gcc_cxx_dwp4", "dwarf_gcc_cxx_dwp4"                             \
  }

INSTANTIATE_TEST_SUITE_P(Fixtures, LlvmDiffTest,
                         ::testing::Values(CASES("gcc"), CASES("clang"), SPECIAL_CASES),
                         [](const ::testing::TestParamInfo<DiffCase>& info) {
                           std::string name = info.param.fixture;
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace stacksym
