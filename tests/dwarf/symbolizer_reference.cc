#include "symbolizer_reference.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "stacksym/elf.h"

namespace stacksym::testing {

std::string RunCapture(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

namespace {

std::string WriteAddresses(const std::vector<uint64_t>& addresses) {
  char path[] = "/tmp/stacksym_dwarf_addrs_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return "";
  close(fd);
  std::ofstream out(path);
  for (uint64_t a : addresses) out << "0x" << std::hex << a << "\n";
  return path;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// "file:line:col" or "file:line" (addr2line, maybe with " (discriminator N)").
RefFrame ParseLocation(std::string loc, bool with_column) {
  RefFrame f;
  size_t disc = loc.find(" (discriminator");
  if (disc != std::string::npos) loc.resize(disc);
  auto take_number = [&](uint32_t* out) {
    size_t colon = loc.rfind(':');
    if (colon == std::string::npos) return;
    std::string num = loc.substr(colon + 1);
    *out = num == "?" ? 0 : static_cast<uint32_t>(std::strtoul(num.c_str(), nullptr, 10));
    loc.resize(colon);
  };
  if (with_column) take_number(&f.column);
  take_number(&f.line);
  f.file = loc;
  return f;
}

}  // namespace

bool ToolExists(const std::string& tool) {
  return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0;
}

std::vector<RefChain> RunLlvmSymbolizer(const std::string& path,
                                        const std::vector<uint64_t>& addresses) {
  std::string file = WriteAddresses(addresses);
  std::string text =
      RunCapture("llvm-symbolizer --inlines --no-demangle --obj='" + path + "' < " + file);
  unlink(file.c_str());
  std::vector<RefChain> chains;
  RefChain current;
  std::vector<std::string> lines = Lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) {
      chains.push_back(std::move(current));
      current.clear();
      continue;
    }
    if (i + 1 >= lines.size()) break;
    RefFrame f = ParseLocation(lines[i + 1], true);
    f.function = lines[i];
    current.push_back(f);
    ++i;
  }
  if (chains.size() != addresses.size()) chains.clear();
  return chains;
}

std::vector<RefChain> RunAddr2line(const std::string& path,
                                   const std::vector<uint64_t>& addresses) {
  // A sentinel address after each real one marks where an address's frames end.
  std::vector<uint64_t> with_markers;
  for (uint64_t a : addresses) {
    with_markers.push_back(a);
    with_markers.push_back(0);
  }
  std::string file = WriteAddresses(with_markers);
  std::string text = RunCapture("addr2line -f -i -a -e '" + path + "' < " + file);
  unlink(file.c_str());
  std::vector<RefChain> chains;
  std::vector<std::string> lines = Lines(text);
  size_t i = 0;
  while (i < lines.size()) {
    // "0x...addr" line, then (function, location) pairs until the next address line.
    bool is_zero = lines[i].find_first_not_of("0x") == std::string::npos;
    ++i;
    RefChain chain;
    while (i + 1 < lines.size() && lines[i].rfind("0x", 0) != 0) {
      RefFrame f = ParseLocation(lines[i + 1], false);
      f.function = lines[i];
      chain.push_back(f);
      i += 2;
    }
    if (!is_zero) chains.push_back(std::move(chain));
  }
  if (chains.size() != addresses.size()) chains.clear();
  return chains;
}

std::multimap<uint64_t, std::string> NmSymbols(const std::string& path) {
  std::multimap<uint64_t, std::string> out;
  for (const std::string& line : Lines(RunCapture("nm --defined-only '" + path + "'"))) {
    std::istringstream in(line);
    std::string addr, type, name;
    if (!(in >> addr >> type >> name)) continue;
    out.emplace(std::strtoull(addr.c_str(), nullptr, 16), name);
  }
  return out;
}

std::vector<uint64_t> FunctionAddresses(const std::string& path, size_t limit) {
  std::vector<uint64_t> out;
  auto elf = ElfFile::Open(path);
  if (!elf) return out;
  std::set<uint64_t> all;
  for (const ElfSymbol& s : (*elf)->symbols().symbols()) {
    if (s.type != 2 /* STT_FUNC */ || s.sizeless || s.size == 0 || s.size > (1 << 20)) continue;
    for (uint64_t a = s.address; a < s.address + s.size; ++a) all.insert(a);
  }
  size_t step = limit == 0 || all.size() <= limit ? 1 : (all.size() + limit - 1) / limit;
  size_t i = 0;
  for (uint64_t a : all) {
    if (i++ % step == 0) out.push_back(a);
  }
  return out;
}

}  // namespace stacksym::testing
