// The option structs the modules take: every list of debug directories starts as the one
// default (kDefaultDebugDir), and the symbolizer's options reach the DWARF reader and the
// persisted index field by field (ToDwarfOptions, ToIndexOptions, ToAnswerOptions), the
// index's file name as before.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dwarf/debug_file_finder.h"
#include "index/index_cache.h"
#include "remote/symbol_service.h"
#include "stacksym/debug_dirs.h"
#include "stacksym/remote.h"
#include "stacksym/symbolize.h"
#include "stacksym/symbolize_profile.h"
#include "symbolize/narrow_options.h"

namespace stacksym {
namespace {

TEST(OptionsTest, EveryDebugDirListStartsAsTheDefaultOne) {
  const std::vector<std::string> expected = {"/usr/lib/debug"};
  EXPECT_EQ(std::string(kDefaultDebugDir), "/usr/lib/debug");
  EXPECT_EQ(SymbolizeOptions{}.debug_dirs, expected);
  EXPECT_EQ(ProfileSymbolizeOptions{}.symbolize.debug_dirs, expected);
  EXPECT_EQ(SymbolServerOptions{}.debug_dirs, expected);
  EXPECT_EQ(remote::SymbolServiceOptions{}.debug_dirs, expected);
  EXPECT_EQ(dwarf::DebugFileFinder().debug_dirs(), expected);
  EXPECT_EQ(dwarf::DebugFileSearch{}.debug_dirs, expected);
  EXPECT_EQ(dwarf::DwarfOptions{}.search.debug_dirs, expected);
  EXPECT_EQ(index::IndexOptions{}.search.debug_dirs, expected);
}

// Defaults agree: a default SymbolizeOptions gives the modules' own defaults.
TEST(OptionsTest, DefaultsMatchTheModulesDefaults) {
  const SymbolizeOptions s;
  const dwarf::DwarfOptions d = symbolize::ToDwarfOptions(s), dd;
  EXPECT_EQ(d.demangle, dd.demangle);
  EXPECT_EQ(d.inlines, dd.inlines);
  EXPECT_EQ(d.short_function_names, dd.short_function_names);
  EXPECT_EQ(d.start_addresses, dd.start_addresses);
  EXPECT_EQ(d.relative_paths, dd.relative_paths);
  const index::IndexOptions i = symbolize::ToIndexOptions(s), id;
  EXPECT_EQ(i.cache_max_bytes, id.cache_max_bytes);
  EXPECT_EQ(i.threads, id.threads);
  const index::AnswerOptions a = symbolize::ToAnswerOptions(s), ad;
  EXPECT_EQ(a.demangle, ad.demangle);
  EXPECT_EQ(a.inlines, ad.inlines);
  EXPECT_EQ(a.linkage_names, ad.linkage_names);
}

// Every field the modules read is carried over (each set to a value other than its default).
TEST(OptionsTest, ConversionsCarryEveryField) {
  struct Fetcher : BuildIdFetcher {
    Result<std::string> Fetch(std::span<const uint8_t>, Kind) const override {
      return std::string();
    }
  };
  SymbolizeOptions s;
  s.demangle = false;
  s.inlines = false;
  s.short_function_names = true;
  s.start_addresses = true;
  s.relative_paths = true;
  s.linkage_names = false;
  s.dwp_path = "/p/x.dwp";
  s.debug_dirs = {"/a", "/b"};
  s.known_path = "/usr/bin/x";
  s.known_root = "/proc/7/root";
  s.cache_dir = "/c";
  s.cache_max_bytes = 12345;
  s.threads = 3;
  s.fetcher = std::make_shared<Fetcher>();

  const dwarf::DwarfOptions d = symbolize::ToDwarfOptions(s);
  EXPECT_FALSE(d.demangle);
  EXPECT_FALSE(d.inlines);
  EXPECT_TRUE(d.short_function_names);
  EXPECT_TRUE(d.start_addresses);
  EXPECT_TRUE(d.relative_paths);
  for (const dwarf::DebugFileSearch& search : {d.search, symbolize::ToIndexOptions(s).search}) {
    EXPECT_EQ(search.debug_dirs, s.debug_dirs);
    EXPECT_EQ(search.known_path, s.known_path);
    EXPECT_EQ(search.known_root, s.known_root);
    EXPECT_EQ(search.dwp_path, s.dwp_path);
    EXPECT_EQ(search.fetcher, s.fetcher);
  }
  const index::IndexOptions i = symbolize::ToIndexOptions(s);
  EXPECT_EQ(i.cache_dir, "/c");
  EXPECT_EQ(i.cache_max_bytes, 12345u);
  EXPECT_EQ(i.threads, 3u);
  const index::AnswerOptions a = symbolize::ToAnswerOptions(s);
  EXPECT_FALSE(a.demangle);
  EXPECT_FALSE(a.inlines);
  EXPECT_FALSE(a.linkage_names);

  dwarf::DebugFileFinder finder(d.search);
  EXPECT_EQ(finder.debug_dirs(), s.debug_dirs);
}

// The cache key: "<build ID>-<CRC32C of the debug dirs, each NUL-terminated>-v<format>", the
// same bytes as when the index module took SymbolizeOptions (the default dirs give ea7a6894).
TEST(OptionsTest, IndexFileNameKeyedByTheDebugDirs) {
  auto elf = ElfFile::Open("/proc/self/exe");
  ASSERT_TRUE(elf) << elf.error().ToString();
  const std::string id = (*elf)->build_id_hex();
  ASSERT_FALSE(id.empty());
  const std::string version = "-v" + std::to_string(index::kVersion) + ".symidx";
  EXPECT_EQ(index::IndexFileName(**elf, symbolize::ToIndexOptions(SymbolizeOptions{})),
            id + "-ea7a6894" + version);
  SymbolizeOptions other;
  other.known_path = "/elsewhere";  // not in the name (the index's identity checks it)
  EXPECT_EQ(index::IndexFileName(**elf, symbolize::ToIndexOptions(other)),
            id + "-ea7a6894" + version);
  other.debug_dirs = {"/srv/debug", kDefaultDebugDir};
  EXPECT_NE(index::IndexFileName(**elf, symbolize::ToIndexOptions(other)),
            id + "-ea7a6894" + version);
}

}  // namespace
}  // namespace stacksym
