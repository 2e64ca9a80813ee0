// Helpers for differential tests: run a command, parse nm output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stacksym::testing {

// Runs `command` through the shell; returns stdout. Sets *exit_code when given.
std::string RunCommand(const std::string& command, int* exit_code = nullptr);

struct NmSymbol {
  uint64_t address = 0;
  uint64_t size = 0;
  char type = 0;  // nm's letter
  std::string name;
};
// `nm -S --defined-only [extra] FILE`, symbols that have a size.
std::vector<NmSymbol> RunNm(const std::string& file, const std::string& extra_flags);

std::string FixturePath(const std::string& name);

// "0x1a2b", as the CLI takes addresses.
std::string Hex(uint64_t value);

}  // namespace stacksym::testing
