// stacksym/demangle.h — C++ (Itanium) and Rust (legacy and v0) demangling via libiberty.
//
//   std::string pretty = Demangle("_ZN3foo3barEv");  // "foo::bar()"
//
// Names that are not mangled (C functions) come back unchanged.
#pragma once

#include <string>
#include <string_view>

namespace stacksym {

std::string Demangle(std::string_view mangled);

// False for names Demangle() returns unchanged without looking further (they do not start
// like an Itanium or Rust name): callers can then use the name itself and skip the copy.
bool MaybeMangled(std::string_view name);

}  // namespace stacksym
