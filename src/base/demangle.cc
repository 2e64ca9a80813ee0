// Demangling through libiberty, the demangler of binutils (addr2line -C, nm -C): C++ Itanium
// and Rust legacy + v0. Styles are tried explicitly (Rust first, since legacy Rust names are
// also valid Itanium names) instead of DMGL_AUTO, which would also apply GNAT and D rules to
// plain C names.
#include "stacksym/demangle.h"

#include <cstdlib>
#include <string>

#include "base/itanium_subset.h"

extern "C" {
#include <libiberty/demangle.h>
}

namespace stacksym {

namespace {

std::string TryStyle(const std::string& name, int style) {
  char* out = cplus_demangle(name.c_str(), DMGL_PARAMS | DMGL_ANSI | style);
  if (out == nullptr) return {};
  std::string result(out);
  std::free(out);
  return result;
}

// An Itanium C++ name, demangled into a buffer each thread reuses (cplus_demangle grows a new
// one by doubling for every name, then copies it out), then copied out at its exact size.
std::string DemangleItanium(const std::string& name) {
  thread_local std::string text;
  text.clear();
  auto append = [](const char* piece, size_t size, void* opaque) {
    static_cast<std::string*>(opaque)->append(piece, size);
  };
  if (cplus_demangle_v3_callback(name.c_str(), DMGL_PARAMS | DMGL_ANSI, append, &text) == 0) {
    return {};
  }
  return text;
}

}  // namespace

bool MaybeMangled(std::string_view name) {
  return name.size() > 2 && name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
}

std::string Demangle(std::string_view mangled) {
  if (!MaybeMangled(mangled)) return std::string(mangled);
  // A PLT stub's made-up name (ElfFile::plt_symbols): the function's, demangled, then "@plt",
  // as perf and objdump -C print it.
  constexpr std::string_view kPlt = "@plt";
  if (mangled.ends_with(kPlt)) {
    std::string_view function = mangled.substr(0, mangled.size() - kPlt.size());
    if (MaybeMangled(function)) return Demangle(function) + std::string(kPlt);
  }
  // Rust v0 names start with _R; legacy ones end in a hash segment "17h" + 16 hex digits, so
  // an _Z name without "17h" is no Rust name, and libiberty's Rust attempt (a scan of the whole
  // name, a tenth of the cost of demangling a long C++ name) can be skipped.
  bool maybe_rust = mangled[1] == 'R' || mangled.find("17h") != std::string_view::npos;
  if (!maybe_rust) {
    // The common part of the grammar without libiberty, in its text (base/itanium_subset.h).
    if (std::optional<std::string> fast = DemangleItaniumSubset(mangled)) return std::move(*fast);
  }
  std::string name(mangled);
  std::string out = maybe_rust ? TryStyle(name, DMGL_RUST) : std::string();
  if (out.empty()) out = DemangleItanium(name);
  return out.empty() ? name : out;
}

}  // namespace stacksym
