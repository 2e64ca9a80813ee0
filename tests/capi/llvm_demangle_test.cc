// GCC clone suffixes as llvm-symbolizer 14 and 16 print them (checked against both by hand
// and by tests/install/install_test.sh on compiled clones): LLVM's DotSuffix, the whole
// suffix in parentheses, where libiberty writes one "[clone ...]" per part.
#include "llvm_demangle.h"

#include <gtest/gtest.h>

#include "stacksym/demangle.h"

namespace stacksym::cli {
namespace {

TEST(LlvmDemangle, CloneSuffixesInParentheses) {
  EXPECT_EQ(DemangleLikeLlvm("_ZL7isra_fn3Big.isra.0"), "isra_fn(Big) (.isra.0)");
  EXPECT_EQ(DemangleLikeLlvm("_ZL5cp_fnii.constprop.0"), "cp_fn(int, int) (.constprop.0)");
  EXPECT_EQ(DemangleLikeLlvm("_ZL7part_fni.part.0"), "part_fn(int) (.part.0)");
  EXPECT_EQ(DemangleLikeLlvm("_Z7cold_fni.cold"), "cold_fn(int) (.cold)");
  EXPECT_EQ(DemangleLikeLlvm("_ZN2ns6Widget5ScaleE3Big.isra.0"),
            "ns::Widget::Scale(Big) (.isra.0)");
  // Several clones: one suffix, as LLVM (libiberty: "[clone .part.0] [clone .cold]").
  EXPECT_EQ(DemangleLikeLlvm("_ZL7part_fni.part.0.cold"), "part_fn(int) (.part.0.cold)");
  EXPECT_EQ(Demangle("_ZL7part_fni.part.0.cold"), "part_fn(int) [clone .part.0] [clone .cold]");
  // Any suffix LLVM takes (libiberty rejects some: then the whole name stays mangled there).
  EXPECT_EQ(DemangleLikeLlvm("_Z3foov.__uniq.1234"), "foo() (.__uniq.1234)");
  EXPECT_EQ(DemangleLikeLlvm("_ZZ4mainE1x.0"), "main::x (.0)");
}

TEST(LlvmDemangle, OtherNamesAsLibiberty) {
  EXPECT_EQ(DemangleLikeLlvm("_ZN3foo3barEv"), "foo::bar()");
  EXPECT_EQ(DemangleLikeLlvm("main"), "main");
  EXPECT_EQ(DemangleLikeLlvm("memcpy.ifunc"), "memcpy.ifunc") << "not mangled: as is";
  EXPECT_EQ(DemangleLikeLlvm("_Z"), "_Z");
  EXPECT_EQ(DemangleLikeLlvm("_Z.isra.0"), "_Z.isra.0") << "no encoding before the dot";
  EXPECT_EQ(DemangleLikeLlvm("_Zxyz.isra.0"), "_Zxyz.isra.0") << "not an encoding: as is";
}

}  // namespace
}  // namespace stacksym::cli
