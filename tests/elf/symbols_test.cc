// The symbol table: alias choice, sizeless and nested symbols on the basic fixture, and a
// differential check of every symbol against `nm -S` on fixtures, bash and libc.
#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "stacksym/elf.h"
#include "tool_runner.h"

namespace stacksym {
namespace {

using testing::Fixture;
using testing::RunTool;
using testing::ShellQuote;
using testing::SplitLines;
using testing::SplitWhitespace;

std::shared_ptr<ElfFile> OpenOrDie(const std::string& path) {
  auto elf = ElfFile::Open(path);
  EXPECT_TRUE(elf.ok()) << elf.error().ToString();
  return elf.ok() ? *elf : nullptr;
}

class BasicFixtureSymbols : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    elf_ = OpenOrDie(Fixture(GetParam()));
    ASSERT_NE(elf_, nullptr);
  }
  const ElfSymbol& Named(const std::string& name) {
    const ElfSymbol* s = elf_->symbols().FindByName(name);
    EXPECT_NE(s, nullptr) << name;
    static const ElfSymbol kNone{};
    return s ? *s : kNone;
  }
  // The symbol that nm lists under `name` (aliases hidden by our table included).
  uint64_t NmAddress(const std::string& name) {
    for (const std::string& line :
         SplitLines(RunTool("nm --defined-only " + ShellQuote(elf_->path())))) {
      std::vector<std::string> f = SplitWhitespace(line);
      if (f.size() == 3 && f[2] == name) return std::stoull(f[0], nullptr, 16);
    }
    ADD_FAILURE() << "nm does not list " << name;
    return 0;
  }
  std::shared_ptr<ElfFile> elf_;
};

TEST_P(BasicFixtureSymbols, GlobalAliasWinsOverWeakAndLocal) {
  uint64_t addr = NmAddress("aliased_impl");
  const ElfSymbol* s = elf_->symbols().Find(addr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name, "aliased_global");
  EXPECT_EQ(s->binding, STB_GLOBAL);
  EXPECT_EQ(elf_->symbols().FindByName("aliased_impl"), nullptr);
  EXPECT_EQ(elf_->symbols().FindByName("aliased_weak"), nullptr);
}

TEST_P(BasicFixtureSymbols, WeakAliasWinsOverLocal) {
  const ElfSymbol* s = elf_->symbols().Find(NmAddress("weak_only_impl"));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name, "weak_only_alias");
  EXPECT_EQ(s->binding, STB_WEAK);
}

TEST_P(BasicFixtureSymbols, IfuncAndObjects) {
  const ElfSymbol& dispatch = Named("dispatch");
  EXPECT_EQ(dispatch.type, STT_GNU_IFUNC);
  // The resolver (local) shares the address; the global IFUNC name wins.
  EXPECT_EQ(elf_->symbols().Find(NmAddress("resolve_dispatch"))->name, "dispatch");
  const ElfSymbol& table = Named("local_table");
  EXPECT_EQ(table.type, STT_OBJECT);
  EXPECT_EQ(table.binding, STB_LOCAL);
  EXPECT_EQ(table.size, 64 * sizeof(int));
  const ElfSymbol& greeting = Named("greeting");
  EXPECT_EQ(greeting.size, sizeof("hello from the elf fixture"));
  EXPECT_EQ(elf_->symbols().Find(greeting.address + 5), &greeting);
}

TEST_P(BasicFixtureSymbols, NestedSymbolIsFoundInsideItsParent) {
  const ElfSymbol& outer = Named("outer_asm");
  const ElfSymbol& inner = Named("inner_asm");
  ASSERT_EQ(inner.address, outer.address + 4);
  ASSERT_EQ(inner.size, 4u);
  ASSERT_EQ(outer.size, 13u);
  EXPECT_EQ(elf_->symbols().Find(outer.address), &outer);
  EXPECT_EQ(elf_->symbols().Find(outer.address + 3), &outer);
  EXPECT_EQ(elf_->symbols().Find(inner.address), &inner);
  EXPECT_EQ(elf_->symbols().Find(inner.address + 3), &inner);
  // Past the nested symbol's end, the enclosing one covers the address again.
  EXPECT_EQ(elf_->symbols().Find(inner.address + 4), &outer);
  EXPECT_EQ(elf_->symbols().Find(outer.address + 12), &outer);
  const ElfSymbol* after = elf_->symbols().Find(outer.address + 13);
  EXPECT_TRUE(after == nullptr || after->address > outer.address) << after->name;
}

TEST_P(BasicFixtureSymbols, SizelessSymbolsStopAtNextSymbolAndSectionEnd) {
  const ElfSymbol& sizeless = Named("sizeless_asm");
  const ElfSymbol& next = Named("after_sizeless");
  EXPECT_TRUE(sizeless.sizeless);
  EXPECT_EQ(sizeless.size, next.address - sizeless.address);
  EXPECT_EQ(elf_->symbols().Find(next.address - 1), &sizeless);
  EXPECT_EQ(elf_->symbols().Find(next.address), &next);

  // lonely_sizeless is alone in its 4-byte section: it ends where the section ends.
  const ElfSymbol& lonely = Named("lonely_sizeless");
  const ElfSection* sec = elf_->FindSection("lonely_text");
  ASSERT_NE(sec, nullptr);
  EXPECT_TRUE(lonely.sizeless);
  EXPECT_EQ(lonely.section, sec->index);
  EXPECT_EQ(lonely.address + lonely.size, sec->addr + sec->size);
  EXPECT_EQ(elf_->symbols().Find(sec->addr + sec->size - 1), &lonely);
  const ElfSymbol* beyond = elf_->symbols().Find(sec->addr + sec->size);
  EXPECT_TRUE(beyond == nullptr || beyond->address >= sec->addr + sec->size);
}

TEST_P(BasicFixtureSymbols, OneEntryPerAddressSortedDeterministically) {
  auto syms = elf_->symbols().symbols();
  for (size_t i = 1; i < syms.size(); ++i) EXPECT_LT(syms[i - 1].address, syms[i].address);
  // A second reading of the same bytes chooses the same names.
  auto again = ElfFile::FromBytes(elf_->bytes(), "copy");
  ASSERT_TRUE(again.ok());
  auto syms2 = (*again)->symbols().symbols();
  ASSERT_EQ(syms.size(), syms2.size());
  for (size_t i = 0; i < syms.size(); ++i) EXPECT_EQ(syms[i].name, syms2[i].name);
}

INSTANTIATE_TEST_SUITE_P(Variants, BasicFixtureSymbols,
                         ::testing::Values("elf_basic_pie", "elf_basic_nopie",
                                           "elf_basic_strip_debug", "elf_basic_zlib"));

TEST(CxxFixtureSymbols, MangledNamesAreKeptRaw) {
  auto elf = OpenOrDie(Fixture("elf_cxx"));
  ASSERT_NE(elf, nullptr);
  std::set<std::string> names;
  for (const ElfSymbol& s : elf->symbols().symbols()) names.emplace(s.name);
  EXPECT_TRUE(names.count("_Z14CallWithLambdai")) << "plain function";
  EXPECT_TRUE(names.count("_ZN5outer5inner10AccumulateIiEET_RKSt6vectorIS2_SaIS2_EE"))
      << "function template instance";
  EXPECT_TRUE(names.count("_ZNK5outer5inner6Square4AreaEv")) << "virtual member";
  EXPECT_TRUE(names.count("_ZNK5outer5inner4Vec2plERKS1_")) << "operator+";
  EXPECT_TRUE(names.count("_ZNK5outer5inner4Vec2eqERKS1_")) << "operator==";
}

// --- Differential: our table against nm -S (symtab) and nm -D -S (dynsym) ---------------

struct NmSymbol {
  uint64_t address = 0;
  std::optional<uint64_t> size;
  char letter = 0;
  std::string name;
};

std::vector<NmSymbol> RunNm(const std::string& path, bool dynamic) {
  std::vector<NmSymbol> out;
  std::string cmd = std::string("nm -S --defined-only ") + (dynamic ? "-D " : "") +
                    ShellQuote(path) + " 2>/dev/null";
  for (const std::string& line : SplitLines(RunTool(cmd))) {
    std::vector<std::string> f = SplitWhitespace(line);
    NmSymbol s;
    if (f.size() == 4) {
      s.size = std::stoull(f[1], nullptr, 16);
    } else if (f.size() != 3) {
      continue;
    }
    s.address = std::stoull(f[0], nullptr, 16);
    s.letter = f[f.size() - 2][0];
    s.name = f.back();
    if (auto at = s.name.find('@'); at != std::string::npos) s.name.resize(at);  // versions
    out.push_back(s);
  }
  return out;
}

bool IsCode(char letter) { return std::string_view("TtWwi").find(letter) != std::string::npos; }

void CompareWithNm(const std::string& path) {
  SCOPED_TRACE(path);
  auto elf = OpenOrDie(path);
  ASSERT_NE(elf, nullptr);
  const SymbolTable& table = elf->symbols();
  EXPECT_TRUE(table.problems().empty()) << table.problems()[0].ToString();
  EXPECT_EQ(table.skipped(), 0u);

  std::vector<NmSymbol> nm = RunNm(path, false);
  std::vector<NmSymbol> dyn = RunNm(path, true);
  nm.insert(nm.end(), dyn.begin(), dyn.end());
  if (nm.empty()) {
    // Fully stripped executables export nothing: then our table must be empty too.
    EXPECT_TRUE(table.empty());
    return;
  }
  std::multimap<uint64_t, const NmSymbol*> by_address;
  for (const NmSymbol& s : nm) by_address.emplace(s.address, &s);

  // 1. Everything we report is a symbol nm knows at that address, with nm's size.
  for (const ElfSymbol& ours : table.symbols()) {
    auto [lo, hi] = by_address.equal_range(ours.address);
    bool name_found = false;
    std::set<uint64_t> alias_sizes;
    for (auto it = lo; it != hi; ++it) {
      name_found |= it->second->name == ours.name;
      if (it->second->size && *it->second->size) alias_sizes.insert(*it->second->size);
    }
    EXPECT_TRUE(name_found) << ours.name << " at " << std::hex << ours.address;
    if (ours.sizeless) {
      EXPECT_TRUE(alias_sizes.empty()) << ours.name;
    } else {
      EXPECT_TRUE(alias_sizes.count(ours.size)) << ours.name << " size " << ours.size;
    }
    if (ours.type == STT_FUNC || ours.type == STT_GNU_IFUNC) {
      bool code_alias = false;
      for (auto it = lo; it != hi; ++it) code_alias |= IsCode(it->second->letter);
      EXPECT_TRUE(code_alias) << ours.name;
    }
  }

  // 2. Every sized code symbol nm lists is found: at its start, and in its middle and at its
  //    last byte the innermost sized nm symbol covering that byte is what Find returns.
  std::set<uint64_t> our_addresses;
  for (const ElfSymbol& s : table.symbols()) our_addresses.insert(s.address);
  std::vector<const NmSymbol*> sized;
  for (const NmSymbol& s : nm) {
    if (s.size && *s.size > 0 && (IsCode(s.letter) || our_addresses.count(s.address))) {
      sized.push_back(&s);
    }
  }
  std::sort(sized.begin(), sized.end(),
            [](const NmSymbol* a, const NmSymbol* b) { return a->address < b->address; });
  auto innermost = [&](uint64_t q) -> std::optional<uint64_t> {
    std::optional<uint64_t> best;
    auto end = std::upper_bound(sized.begin(), sized.end(), q,
                                [](uint64_t v, const NmSymbol* s) { return v < s->address; });
    for (auto it = sized.begin(); it != end; ++it) {
      if (q - (*it)->address < *(*it)->size) best = (*it)->address;
    }
    return best;
  };
  size_t checked = 0;
  for (const NmSymbol* s : sized) {
    if (!IsCode(s->letter)) continue;
    const ElfSymbol* at_start = table.Find(s->address);
    ASSERT_NE(at_start, nullptr) << s->name;
    EXPECT_EQ(at_start->address, s->address) << s->name;
    bool is_alias = false;
    auto [lo, hi] = by_address.equal_range(s->address);
    for (auto it = lo; it != hi; ++it) is_alias |= it->second->name == at_start->name;
    EXPECT_TRUE(is_alias) << at_start->name << " is not a name of " << s->name;

    for (uint64_t q : {s->address + *s->size / 2, s->address + *s->size - 1}) {
      const ElfSymbol* found = table.Find(q);
      std::optional<uint64_t> expected = innermost(q);
      ASSERT_TRUE(expected.has_value());
      ASSERT_NE(found, nullptr) << s->name;
      EXPECT_EQ(found->address, *expected) << s->name << " at +" << (q - s->address);
      EXPECT_EQ(q - found->address < found->size, true) << s->name;
    }
    ++checked;
  }
  EXPECT_GT(checked, 3u);
}

TEST(SymbolsDifferentialTest, FixturesMatchNm) {
  for (const char* f : {"elf_basic_pie", "elf_basic_nopie", "elf_basic_strip_all",
                        "elf_basic_strip_debug", "elf_basic_debuglink.debug", "elf_cxx"}) {
    CompareWithNm(Fixture(f));
  }
}

TEST(SymbolsDifferentialTest, SystemBinariesMatchNm) {
  int compared = 0;
  for (const char* f : {"/usr/bin/bash", "/usr/lib/x86_64-linux-gnu/libc.so.6"}) {
    if (access(f, R_OK) != 0) continue;
    CompareWithNm(f);
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << "neither /usr/bin/bash nor libc.so.6 is readable";
}

}  // namespace
}  // namespace stacksym
