#include "index_test_util.h"

#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "index/index_cache.h"
#include "symbolize/narrow_options.h"

namespace stacksym::testing {

std::string Describe(const SymbolizedAddress& a) {
  char head[256];
  std::snprintf(
      head, sizeof(head), "in=%llx va=%llx reason=%s sym@%llx+%llx off=%llx ",
      static_cast<unsigned long long>(a.input), static_cast<unsigned long long>(a.vaddr),
      a.reason ? ReasonName(*a.reason) : "-", static_cast<unsigned long long>(a.symbol_address),
      static_cast<unsigned long long>(a.symbol_size), static_cast<unsigned long long>(a.offset));
  std::string out = head + a.symbol + " [" + a.raw_symbol + "] " + a.module + "\n";
  for (const SourceFrame& f : a.frames) {
    out += "  " + f.function + " [" + f.raw_function + "] " + f.file + ":" +
           std::to_string(f.line) + ":" + std::to_string(f.column) + (f.inlined ? " inlined" : "") +
           " d" + std::to_string(f.discriminator) + " start " + f.start_file + ":" +
           std::to_string(f.start_line) +
           (f.has_start_address ? " @" + std::to_string(f.start_address) : std::string()) + "\n";
  }
  return out;
}

std::vector<uint64_t> SegmentAddresses(const ElfFile& elf, uint64_t stride) {
  std::vector<uint64_t> out;
  for (const ElfSegment& s : elf.segments()) {
    if (s.type != PT_LOAD || (s.flags & PF_X) == 0 || s.memsz == 0) continue;
    for (uint64_t a = s.vaddr; a < s.vaddr + s.memsz; a += stride) out.push_back(a);
    out.push_back(s.vaddr + s.memsz - 1);
    out.push_back(s.vaddr + s.memsz);
  }
  return out;
}

std::vector<uint64_t> SymbolAddresses(const ElfFile& elf) {
  std::vector<uint64_t> out;
  for (const ElfSymbol& s : elf.symbols().symbols()) {
    if (s.size == 0) continue;
    out.push_back(s.address);
    out.push_back(s.address + s.size / 2);
    out.push_back(s.address + s.size - 1);
  }
  return out;
}

std::vector<std::string> Answers(const std::string& path, const std::vector<uint64_t>& addresses,
                                 const SymbolizeOptions& options, AddressKind kind) {
  std::vector<std::string> out;
  auto symbolizer = ElfSymbolizer::Open(path, options);
  if (!symbolizer) return out;
  for (const SymbolizedAddress& a : (*symbolizer)->SymbolizeBatch(addresses, kind)) {
    out.push_back(Describe(a));
  }
  return out;
}

std::string FirstDifferences(const std::vector<uint64_t>& addresses,
                             const std::vector<std::string>& expected,
                             const std::vector<std::string>& actual, size_t limit) {
  if (expected.size() != actual.size()) {
    return "answer counts differ: " + std::to_string(expected.size()) + " vs " +
           std::to_string(actual.size());
  }
  std::string out;
  size_t shown = 0, differing = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == actual[i]) continue;
    ++differing;
    if (shown++ < limit) {
      char addr[32];
      std::snprintf(addr, sizeof(addr), "0x%llx", static_cast<unsigned long long>(addresses[i]));
      out += std::string(addr) + "\n--- direct\n" + expected[i] + "--- index\n" + actual[i];
    }
  }
  if (differing > 0) out = std::to_string(differing) + " answers differ\n" + out;
  return out;
}

std::string IndexPathFor(const std::string& path, const std::string& dir,
                         const SymbolizeOptions& options) {
  auto elf = ElfFile::Open(path);
  if (!elf) return {};
  return dir + "/" + index::IndexFileName(**elf, symbolize::ToIndexOptions(options));
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

}  // namespace stacksym::testing
