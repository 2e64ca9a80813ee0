#include "test_util.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>

namespace stacksym::testing {

std::string RunCommand(const std::string& command, int* exit_code) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    if (exit_code) *exit_code = -1;
    return out;
  }
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  int status = pclose(pipe);
  if (exit_code) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::vector<NmSymbol> RunNm(const std::string& file, const std::string& extra_flags) {
  std::vector<NmSymbol> symbols;
  std::istringstream in(
      RunCommand("nm -S --defined-only " + extra_flags + " '" + file + "' 2>/dev/null"));
  for (std::string line; std::getline(in, line);) {
    // "addr size type name" — name may contain spaces when demangled.
    std::istringstream fields(line);
    std::string addr, size, type;
    if (!(fields >> addr >> size >> type) || type.size() != 1) continue;
    std::string name;
    std::getline(fields, name);
    if (!name.empty() && name[0] == ' ') name.erase(0, 1);
    NmSymbol s;
    s.address = std::strtoull(addr.c_str(), nullptr, 16);
    s.size = std::strtoull(size.c_str(), nullptr, 16);
    s.type = type[0];
    s.name = name;
    symbols.push_back(std::move(s));
  }
  return symbols;
}

std::string Hex(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
  return buf;
}

std::string FixturePath(const std::string& name) {
  return std::string(STACKSYM_FIXTURE_DIR) + "/" + name;
}

}  // namespace stacksym::testing
