// Source text embedded in a DWARF 5 line table (DW_LNCT_LLVM_source, clang -gembed-source):
// read by the line table, given by ElfSymbolizer::EmbeddedSource for the innermost frame, and
// printed by the llvm-symbolizer drop-in's --print-source-context-lines as llvm-symbolizer 16
// prints it (LLVM's test source.ll). The file it was compiled from no longer exists.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "stacksym/elf.h"
#include "stacksym/symbolize.h"
#include "symbolizer_reference.h"

namespace stacksym {
namespace {

const std::string kFixture = std::string(STACKSYM_FIXTURE_DIR) + "/dwarf_clang_c_embedded_source";
constexpr const char* kLlvm16 = "/usr/lib/llvm-16/bin/llvm-symbolizer";

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

uint64_t SymbolAddress(const ElfFile& elf, std::string_view name) {
  for (const ElfSymbol& s : elf.symbols().symbols()) {
    if (s.name == name) return s.address;
  }
  return 0;
}

TEST(EmbeddedSourceTest, InnermostFileTextFromTheLineTable) {
  const std::string embedded = kFixture + ".embedded";
  auto elf = ElfFile::Open(embedded);
  ASSERT_TRUE(elf) << elf.error().ToString();
  uint64_t sum = SymbolAddress(**elf, "SumOfSquares");
  ASSERT_NE(sum, 0u);
  auto symbolizer = ElfSymbolizer::FromElf(*elf);
  ASSERT_TRUE(symbolizer);
  std::optional<std::string> text = (*symbolizer)->EmbeddedSource(sum, AddressKind::kVirtual);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text, ReadText(EMBEDDED_SOURCE_FILE));
  // Its file is gone: the text can only have come from the DWARF.
  SymbolizedAddress a = (*symbolizer)->Symbolize(sum, AddressKind::kVirtual);
  ASSERT_FALSE(a.frames.empty());
  EXPECT_FALSE(std::filesystem::exists(a.frames.front().file)) << a.frames.front().file;

  // The same program without -gembed-source embeds nothing; outside any code, nothing either.
  auto plain = ElfSymbolizer::Open(kFixture);
  ASSERT_TRUE(plain);
  uint64_t plain_sum = SymbolAddress((*plain)->elf(), "SumOfSquares");
  ASSERT_NE(plain_sum, 0u);
  EXPECT_FALSE((*plain)->EmbeddedSource(plain_sum, AddressKind::kVirtual).has_value());
  EXPECT_FALSE((*symbolizer)->EmbeddedSource(0x10, AddressKind::kVirtual).has_value());
}

TEST(EmbeddedSourceTest, DropInPrintsItAsLlvmSymbolizer16) {
  if (access(kLlvm16, X_OK) != 0) GTEST_SKIP() << "llvm-symbolizer-16 is not installed (llvm-16)";
  const std::string embedded = kFixture + ".embedded";
  auto elf = ElfFile::Open(embedded);
  ASSERT_TRUE(elf);
  // Every address of the three functions: inlined-free -O0 code, lines of both functions.
  std::string addresses;
  for (const char* name : {"Square", "SumOfSquares", "main"}) {
    for (const ElfSymbol& s : (*elf)->symbols().symbols()) {
      if (s.name != name) continue;
      for (uint64_t a = s.address; a < s.address + s.size; a += 3) {
        char hex[32];
        std::snprintf(hex, sizeof hex, " 0x%llx", static_cast<unsigned long long>(a));
        addresses += hex;
      }
    }
  }
  ASSERT_FALSE(addresses.empty());
  // The drop-in is stacksym under the name llvm-symbolizer.
  std::string dir = ::testing::TempDir() + "embedded_source_dropin";
  std::filesystem::create_directories(dir);
  std::string dropin = dir + "/llvm-symbolizer";
  std::filesystem::remove(dropin);
  std::filesystem::create_symlink(STACKSYM_CLI, dropin);
  for (const char* style : {"LLVM", "GNU", "JSON"}) {
    std::string args = std::string(" --print-source-context-lines=3 --output-style=") + style +
                       " --obj=" + embedded + addresses + " 2>&1";
    std::string expected = testing::RunCapture(std::string(kLlvm16) + args);
    std::string ours = testing::RunCapture(dropin + args);
    ASSERT_NE(expected.find(" >: "), std::string::npos) << style << ": no context from LLVM";
    EXPECT_EQ(ours, expected) << style;
  }
}

}  // namespace
}  // namespace stacksym
