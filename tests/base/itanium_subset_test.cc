// DemangleItaniumSubset against libiberty: the names it takes get libiberty's exact text (hand
// cases for each construct, and every linkage name of the C++ test fixtures and, when
// librados2-dbg is installed, of libceph-common's 266 295), the names outside its grammar are
// left to libiberty, and stacksym::Demangle answers the same either way.
#include "base/itanium_subset.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "stacksym/demangle.h"
#include "stacksym/elf.h"

// <string.h> already declares basename, which libiberty.h would declare again.
#define HAVE_DECL_BASENAME 1
extern "C" {
#include <libiberty/demangle.h>
}

namespace stacksym {
namespace {

// libiberty's text, or empty where it gives up.
std::string Libiberty(std::string_view mangled) {
  std::string name(mangled), text;
  auto append = [](const char* piece, size_t size, void* out) {
    static_cast<std::string*>(out)->append(piece, size);
  };
  if (cplus_demangle_v3_callback(name.c_str(), DMGL_PARAMS | DMGL_ANSI, append, &text) == 0) {
    return {};
  }
  return text;
}

TEST(ItaniumSubset, EachConstructAsLibibertyPrintsIt) {
  const char* const kNames[] = {
      "_ZN3foo3barEv",                              // nested, no parameters
      "_Z3fooi",                                    // unscoped
      "_Z3fooIiEvT_",                               // unscoped template: return type, T_
      "_ZSt4swapIiEvRT_S1_",                        // std::, substitution of a reference
      "_ZN2ns6VectorIiEixEm",                       // operator[]
      "_ZNK3Foo3getERKSt6vectorIiSaIiEE",           // const member, Sa, "> >"
      "_ZN3FooIiEC2Ev",                             // constructor of a template
      "_ZN3FooIiED0Ev",                             // deleting destructor
      "_ZN3FooaSERKS_",                             // operator=, S_
      "_ZN12_GLOBAL__N_13BarclEv",                  // anonymous namespace, operator()
      "_ZN3BazIiLi5ELj7ELb1ELb0ELin3ELm9EE3getEv",  // integer and bool literals
      "_ZN5boost7forwardIRKcEEOT_RNS_11move_detail16remove_referenceIS3_E4typeE",  // & &&
      "_ZNSt10__pair_getILm0EE11__const_getIKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE"
      "E14conf_section_tEERKT_RKSt4pairISA_T0_E",  // const of a const parameter: one const
      "_ZN3FooC1EDnPKcPPv",                        // decltype(nullptr), pointers
      "_ZN3FooILt31ELsn5ELc65EE3getEv",            // literals printed as casts
      "_Z1fILN3Foo4KindE2EEvS0_",                  // an enum literal; its type a candidate
      "_ZN1aILDnEE1fEv",                           // a null pointer literal
      "_ZNVK3Foo3getEPVKiPrKc",                    // volatile member, volatile, restrict
      "_ZN1a1fIKiEEvPVT_",                         // volatile over a const parameter
      "_ZN1a1fEPKVKi",                             // a qualifier written twice: once
      "_Znwm",                                     // an unscoped operator
      "_ZN3FooltIiEEbRKS_",                        // operator with template arguments: "< <"
      "_ZN3FoocvPKcEv",                            // conversion operator
      "_ZN3fooB5cxx113barB3tagEv",                 // ABI tags
      "_ZN3FooB5cxx11C2Ev",                        // a tagged class's constructor
      "_Z3fooSsSiSoSd",                            // std::string, std::istream, ...
      "_ZNSsC1Ev",                                 // ... in full before a constructor
      "_ZN3fooL3barEv",                            // internal-linkage prefix
      "_ZL7isra_fn3Big.isra.0",                    // clone suffix
      "_ZN1a1fEv.constprop.0.isra.0",              // clone suffixes
      "_ZN1a1fEPFviEPS0_RKS1_",                    // function types under modifiers
      "_ZN1a1fESt8functionIFPviEE",                // a function type as an argument
      "_ZN1a1fEPFvPFviEE",                         // a function type in a function type
      "_ZN6MMDSOpC2IJiRKiS2_EEEDpOT_",             // pack, expansion, collapsing per element
      "_ZN1aIJicEEEvDpPKT_",                       // an expansion of a qualified pattern
      "_ZN1bIJEiE1fEv",                            // an empty pack first: "b<, int>"
      "_ZN1aIJEEEvDpOT_i",                         // ... and among parameters: "(, int)"
      "_ZN1bIJiEJEE1fEv",                          // an empty pack last: no ", "
      "_ZN5boost6fusion13sequence_baseINS0_13vector_detail11vector_dataISt16integer_sequenceImJE"
      "EJEEEE7derivedEv",  // ">>" where an empty pack took back its ", "
      "_ZN4ceph6buffer7v15_2_04list9buffers_t16buffers_iteratorINS1_8ptr_nodeEEC2INS1_8ptr_hook"
      "EEEPT_",                // a constructor template: T_ without a return type
      "_Z3fooA3_iRA4_KcPA_i",  // arrays, under modifiers, unbounded
      "_ZNSt10unique_ptrIA_St6atomicImESt14default_deleteIS2_EE3getEv",  // "<T []>"
      "_Z3fooM1aFviEM1bi",                                               // pointers to members
      "_ZN1a1fINS_1bEEENT_4typeES2_",  // a template parameter as a scope, then a candidate
      "_ZN3fmt2v96detail8get_dataINS0_19basic_memory_bufferIcLm500ESaIcEEEEEPNT_10value_typeER"
      "S6_",                    // ... under a pointer (libceph-common)
      "_ZN1a1fIiEENT_4typeEv",  // ... standing for a builtin type: "int::type"
  };
  for (const char* mangled : kNames) {
    std::optional<std::string> text = DemangleItaniumSubset(mangled);
    std::string expected = Libiberty(mangled);
    ASSERT_TRUE(text) << mangled << " should be inside the subset";
    EXPECT_EQ(*text, expected) << mangled;
    EXPECT_FALSE(expected.empty()) << mangled;
  }
  EXPECT_EQ(*DemangleItaniumSubset("_ZN3foo3barE"), "foo::bar");  // a variable
}

TEST(ItaniumSubset, LeavesEverythingElseToLibiberty) {
  const char* const kOutside[] = {
      "_ZZ4mainENKUlvE_clEv",    // local name, lambda
      "_ZTV3Foo",                // special name (vtable)
      "_ZN1a1fEM1bKFviE",        // a pointer to a const member function
      "_Z1fIiERA3_iv",           // an array return type (printed inside out)
      "_ZNR3Foo3getEv",          // ref-qualifier
      "_ZNKV3Foo3getEv",         // member qualifiers out of order
      "_Z1fIJicEEvT_",           // a pack outside an expansion
      "_Z1fIJicEEvDpRKT_S2_",    // a substitution of an expansion
      "_Z1fIiEPFviEv",           // a return type printed inside out
      "_ZN1a1fEPKFviE",          // a qualified function type
      "_ZN1aILf3f800000EE1fEv",  // a floating-point literal
      "_ZN1aCI11bEi",            // inheriting constructor
      "_Z1fB12_GLOBAL__N_1v",    // an ABI tag named like an anonymous namespace
      "_ZN1aD5IiEIcEEsv",        // arguments of arguments after a destructor
      "_ZN1a1fEPFviEPNS0_1bE",   // a function type as a scope
      "_ZN1bIJiEJEJEE1fEv",      // two empty packs last: as libiberty's print buffer falls
      "_ZN1acvT_IiEEv",          // templated conversion
      "_ZN3foo3barEv123",        // trailing garbage
      "_ZN3foo3barEv.",          // a bare dot
      "_ZN3foo3barEv.isra.0.X",  // a clone suffix with more after it
      "_Z",
      "_ZN",
  };
  for (const char* mangled : kOutside) {
    EXPECT_FALSE(DemangleItaniumSubset(mangled)) << mangled;
    // Demangle still answers as libiberty does (or keeps the name).
    std::string expected = Libiberty(mangled);
    EXPECT_EQ(Demangle(mangled), expected.empty() ? std::string(mangled) : expected) << mangled;
  }
  // A template parameter is no scope outside a function template's signature.
  EXPECT_FALSE(DemangleItaniumSubset("_ZN1a1fENT_4typeE"));
  // Templates nest up to 64 deep (libiberty gives up on some of those nested 19 or more deep;
  // the subset demangles them, as llvm-cxxfilt does); deeper ones are left to libiberty.
  auto nested = [](int depth) {  // void f<A<A<...<A, int>...> > >()
    std::string name = "_Z1f";
    for (int i = 0; i < depth; ++i) name += "I1A";
    name += "i";
    for (int i = 0; i < depth; ++i) name += "E";
    return name + "vv";
  };
  auto text = [](int depth) {
    std::string name = "void f";
    for (int i = 1; i < depth; ++i) name += "<A";
    name += "<A, int>";
    for (int i = 1; i < depth; ++i) name += " >";
    return name + "()";
  };
  EXPECT_EQ(Libiberty(nested(10)), text(10));
  EXPECT_EQ(DemangleItaniumSubset(nested(10)), text(10));
  EXPECT_EQ(DemangleItaniumSubset(nested(40)), text(40));
  EXPECT_FALSE(DemangleItaniumSubset(nested(65)));
  // Types nested without bound do not recurse without bound.
  EXPECT_FALSE(DemangleItaniumSubset("_Z1f" + std::string(100000, 'P') + "i"));
}

// Every _Z name of `path`'s .debug_str and symbol table: where the subset and libiberty both
// answer, the same text. Returns how many the subset took.
size_t CheckCorpus(const std::string& path, size_t* total) {
  auto elf = ElfFile::Open(path);
  EXPECT_TRUE(elf) << path;
  if (!elf) return 0;
  std::vector<std::string_view> names;
  if (auto strings = (*elf)->SectionData(".debug_str"); strings) {
    const char* text = reinterpret_cast<const char*>(strings->data());
    for (size_t at = 0; at < strings->size();) {
      size_t length = strnlen(text + at, strings->size() - at);
      std::string_view name(text + at, length);
      if (name.substr(0, 2) == "_Z") names.push_back(name);
      at += length + 1;
    }
  }
  for (const ElfSymbol& s : (*elf)->symbols().symbols()) {
    if (s.name.substr(0, 2) == "_Z") names.push_back(s.name);
  }
  size_t taken = 0, differ = 0;
  for (std::string_view name : names) {
    std::optional<std::string> text = DemangleItaniumSubset(name);
    if (!text) continue;
    ++taken;
    std::string expected = Libiberty(name);
    // libiberty gives up on some names nested very deep (its recursion limits); the subset
    // answers them, as it answers every name it takes.
    if (expected.empty()) continue;
    if (*text != expected && differ++ < 5) {
      ADD_FAILURE() << name << "\n  libiberty: " << expected << "\n  subset:    " << *text;
    }
  }
  EXPECT_EQ(differ, 0u) << path;
  *total += names.size();
  return taken;
}

TEST(ItaniumSubset, FixtureNamesAsLibiberty) {
  size_t total = 0, taken = 0;
  for (const char* fixture : {"dwarf_gcc_cxx_o0_d4", "dwarf_gcc_cxx_o2_d5", "dwarf_clang_cxx_o2_d5",
                              "dwarf_gcc_cxx_o3_d5"}) {
    taken += CheckCorpus(std::string(STACKSYM_FIXTURE_DIR) + "/" + fixture, &total);
  }
  EXPECT_GT(taken, 50u) << "the fixtures' names should mostly be inside the subset";
  RecordProperty("names", static_cast<int>(total));
  RecordProperty("taken", static_cast<int>(taken));
}

TEST(ItaniumSubset, LibcephCommonNamesAsLibiberty) {
  // librados2-dbg's debug file for libceph-common.so.2 (266 295 linkage names).
  const char* const kBinary = "/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2";
  auto elf = ElfFile::Open(kBinary);
  if (!elf) GTEST_SKIP() << "librados2 is not installed: " << kBinary;
  std::string hex = (*elf)->build_id_hex();
  std::string debug =
      "/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
  if (hex.size() < 3 || !ElfFile::Open(debug)) {
    GTEST_SKIP() << "librados2-dbg is not installed (no " << debug << ")";
  }
  size_t total = 0;
  size_t taken = CheckCorpus(debug, &total);
  EXPECT_GT(taken, total / 2) << "most of libceph-common's names should be inside the subset";
}

}  // namespace
}  // namespace stacksym
