#include "stacksym/demangle.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>

#include "base/demangle_cache.h"
#include "base/flat_table.h"

namespace stacksym {
namespace {

TEST(Demangle, CppItanium) {
  EXPECT_EQ(Demangle("_ZN3foo3barEv"), "foo::bar()");
  EXPECT_EQ(Demangle("_ZN2ns6VectorIiEixEm"), "ns::Vector<int>::operator[](unsigned long)");
  EXPECT_EQ(Demangle("_ZNK3Foo3getERKSt6vectorIiSaIiEE"),
            "Foo::get(std::vector<int, std::allocator<int> > const&) const");
}

TEST(Demangle, PlainAndInvalidNamesUnchanged) {
  EXPECT_EQ(Demangle("main"), "main");
  EXPECT_EQ(Demangle("foo__bar"), "foo__bar");  // not GNAT-demangled
  EXPECT_EQ(Demangle("_Zinvalid"), "_Zinvalid");
  EXPECT_EQ(Demangle(""), "");
}

TEST(Demangle, MaybeMangledTellsWhatDemangleLeavesAlone) {
  EXPECT_TRUE(MaybeMangled("_ZN3foo3barEv"));
  EXPECT_TRUE(MaybeMangled("_RNvC3foo3bar"));
  EXPECT_TRUE(MaybeMangled("_Zinvalid"));  // mangled-looking: Demangle decides
  EXPECT_FALSE(MaybeMangled("main"));
  EXPECT_FALSE(MaybeMangled("_Z"));
  EXPECT_FALSE(MaybeMangled("__libc_start_main"));
  EXPECT_FALSE(MaybeMangled(""));
}

TEST(DemangleCache, PlainNamesComeBackThemselvesMangledOnesDemangledOnce) {
  DemangleCache cache;
  const char plain[] = "main";
  std::string_view got = cache.Get(plain);
  EXPECT_EQ(got, "main");
  EXPECT_EQ(got.data(), plain);  // no copy
  const char mangled[] = "_ZN3foo3barEv";
  std::string_view first = cache.Get(mangled);
  EXPECT_EQ(first, "foo::bar()");
  EXPECT_EQ(cache.Get(mangled).data(), first.data());  // the cached text, not demangled again
  // Keys are addresses: the same text elsewhere is another entry, with the same answer.
  const std::string copy(mangled);
  EXPECT_EQ(cache.Get(copy), "foo::bar()");
  EXPECT_NE(cache.Get(copy).data(), first.data());
  EXPECT_EQ(cache.Get("_Zinvalid"), "_Zinvalid");
}

TEST(DemangleCache, HashesBothNamesOnceForMangledOnesOnly) {
  DemangleCache cache;
  const char plain[] = "main";
  DemangleCache::Hashed got = cache.GetHashed(plain);
  EXPECT_EQ(got.pretty.data(), plain);
  EXPECT_EQ(got.pretty_hash, 0u);  // not mangled: the caller hashes it if it needs to
  EXPECT_EQ(got.raw_hash, 0u);
  const char mangled[] = "_ZN3foo3barIiEEvT_";
  DemangleCache::Hashed first = cache.GetHashed(mangled);
  EXPECT_EQ(first.pretty, "void foo::bar<int>(int)");
  EXPECT_EQ(first.pretty_hash, HashBytes(first.pretty));
  EXPECT_EQ(first.raw_hash, HashBytes(mangled));
  // Cached: the same text and hashes again, and Get agrees.
  DemangleCache::Hashed again = cache.GetHashed(mangled);
  EXPECT_EQ(again.pretty.data(), first.pretty.data());
  EXPECT_EQ(again.pretty_hash, first.pretty_hash);
  EXPECT_EQ(again.raw_hash, first.raw_hash);
  EXPECT_EQ(cache.Get(mangled).data(), first.pretty.data());
  // A mangled-looking name that does not demangle is its own text, hashed as such.
  DemangleCache::Hashed invalid = cache.GetHashed("_Zinvalid");
  EXPECT_EQ(invalid.pretty, "_Zinvalid");
  EXPECT_EQ(invalid.pretty_hash, HashBytes("_Zinvalid"));
  EXPECT_EQ(invalid.raw_hash, invalid.pretty_hash);
}

TEST(Demangle, RustLegacy) {
  EXPECT_EQ(Demangle("_ZN4core3fmt5write17h0123456789abcdefE"), "core::fmt::write");
}

TEST(Demangle, RustV0) {
  // From the Rust v0 mangling RFC examples.
  EXPECT_EQ(Demangle("_RNvCs15kBYyAo9fc_7mycrate7example"), "mycrate::example");
  EXPECT_EQ(Demangle("_RNvNtCs1234_7mycrate3foo3bar"), "mycrate::foo::bar");
}

// Differential: the same answers as binutils' c++filt (which is libiberty too, but this
// catches wrong option flags such as missing DMGL_PARAMS). Legacy Rust names are not compared:
// c++filt's default style treats them as Itanium and keeps the hash; rustfilt and libiberty's
// Rust style (ours) drop it.
TEST(Demangle, AgreesWithCxxfilt) {
  const char* names[] = {"_ZNSt6vectorIiSaIiEE9push_backERKi",
                         "_ZN9__gnu_cxx13new_allocatorIcE8allocateEmPKv", "_ZZ4mainENKUlvE_clEv"};
  for (const char* name : names) {
    std::string cmd = std::string("c++filt '") + name + "'";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    ASSERT_TRUE(pipe);
    std::array<char, 512> buf{};
    ASSERT_NE(fgets(buf.data(), buf.size(), pipe.get()), nullptr);
    std::string expected(buf.data());
    if (!expected.empty() && expected.back() == '\n') expected.pop_back();
    EXPECT_EQ(Demangle(name), expected) << name;
  }
}

}  // namespace
}  // namespace stacksym
