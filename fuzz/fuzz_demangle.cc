// libFuzzer target for the subset demangler (base/itanium_subset.h): arbitrary bytes as a
// mangled name (given an _Z prefix when they lack one). Wherever libiberty demangles the name,
// the subset's text (when it takes the name) must be libiberty's; it must never crash, hang or
// recurse without bound. stacksym::Demangle runs on the same input for the same reasons.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "base/itanium_subset.h"
#include "stacksym/demangle.h"

// <string.h> already declares basename, which libiberty.h would declare again.
#define HAVE_DECL_BASENAME 1
extern "C" {
#include <libiberty/demangle.h>
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  std::string name(reinterpret_cast<const char*>(data), size);
  if (name.find('\0') != std::string::npos) return 0;  // a C string ends there
  if (name.compare(0, 2, "_Z") != 0) name.insert(0, "_Z");
  std::optional<std::string> text = stacksym::DemangleItaniumSubset(name);
  if (text) {
    std::string expected;
    auto append = [](const char* piece, size_t n, void* out) {
      static_cast<std::string*>(out)->append(piece, n);
    };
    // Where libiberty gives up (its limits, or bytes no compiler writes), any text will do.
    if (cplus_demangle_v3_callback(name.c_str(), DMGL_PARAMS | DMGL_ANSI, append, &expected) != 0 &&
        expected != *text) {
      std::fprintf(stderr, "subset %s\n  gave:      %s\n  libiberty: %s\n", name.c_str(),
                   text->c_str(), expected.c_str());
      std::abort();
    }
  }
  (void)stacksym::Demangle(name);
  return 0;
}
