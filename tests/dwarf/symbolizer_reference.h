// Runs the reference tools (llvm-symbolizer, addr2line, nm) on a file and parses their output,
// for differential tests of the DWARF reader.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace stacksym::testing {

struct RefFrame {
  std::string function;  // "??" when unknown
  std::string file;      // "??" when unknown
  uint32_t line = 0;
  uint32_t column = 0;
};
using RefChain = std::vector<RefFrame>;  // innermost first

bool ToolExists(const std::string& tool);

// The standard output of a shell command (empty when it cannot be run).
std::string RunCapture(const std::string& command);

// `llvm-symbolizer --inlines --no-demangle --obj=path` over all addresses (one process).
// Empty vector on failure.
std::vector<RefChain> RunLlvmSymbolizer(const std::string& path,
                                        const std::vector<uint64_t>& addresses);
// `addr2line -f -i -e path` (raw names, no columns: column is 0).
std::vector<RefChain> RunAddr2line(const std::string& path, const std::vector<uint64_t>& addresses);
// Every defined symbol name by address (`nm --defined-only`), aliases included.
std::multimap<uint64_t, std::string> NmSymbols(const std::string& path);

// Every address inside every function symbol (STT_FUNC with a size) of path, thinned to at
// most `limit` addresses by taking every k-th.
std::vector<uint64_t> FunctionAddresses(const std::string& path, size_t limit);

}  // namespace stacksym::testing
