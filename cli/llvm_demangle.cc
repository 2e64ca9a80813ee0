#include "llvm_demangle.h"

#include "stacksym/demangle.h"

namespace stacksym::cli {

std::string DemangleLikeLlvm(std::string_view mangled) {
  // LLVM's ManglingParser::parse: after the encoding, a '.' starts a DotSuffix that runs to
  // the end of the name. Itanium encodings hold no '.', so the first one starts the suffix.
  if (mangled.size() > 2 && mangled.starts_with("_Z")) {
    size_t dot = mangled.find('.');
    if (dot != std::string_view::npos && dot > 2) {
      std::string_view encoding = mangled.substr(0, dot);
      std::string base = Demangle(encoding);
      if (base != encoding) {
        base += " (";
        base += mangled.substr(dot);
        base += ')';
        return base;
      }
    }
  }
  return Demangle(mangled);
}

}  // namespace stacksym::cli
