// Names as llvm-symbolizer's demangler (LLVM's ItaniumDemangle) prints them where it differs
// from libiberty's by more than formatting: a GCC clone suffix. An Itanium name followed by
// '.' and anything (`_Z3fooi.isra.0`, `.constprop.0`, `.part.0`, `.cold`, `.lto_priv.0`,
// several at once) is the demangled encoding, a space and the whole suffix in parentheses,
// `foo(int) (.isra.0)`, where libiberty (c++filt, addr2line) prints one `[clone .isra.0]`
// per clone. llvm-symbolizer 14 and 16 agree on this. Everything else is libiberty's
// Demangle.
//
//   DemangleLikeLlvm("_ZL5cp_fnii.constprop.0.cold") == "cp_fn(int, int) (.constprop.0.cold)"
#pragma once

#include <string>
#include <string_view>

namespace stacksym::cli {

std::string DemangleLikeLlvm(std::string_view mangled);

}  // namespace stacksym::cli
