// stacksym/symbolize_profile.h — symbolize every distinct frame of a Profile exactly once.
//
// User frames are looked up by module (already-open file from the recorder, else the path
// if its build ID still matches, else a debug file found by build ID in the debug dirs) and
// file offset; kernel frames through kallsyms (KernelSymbolizer). Each ProfileFrame gets a
// FrameSymbols in Profile::symbols, however many stacks refer to it; each module is opened
// once.
//
//   SymbolizeProfileOptions opts;
//   opts.module_files = recorder->module_files();   // optional, parallel to modules
//   SymbolizeProfileStats st = SymbolizeProfile(profile, opts);
//
// Never fails as a whole: frames that cannot be resolved carry a Reason.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stacksym/elf.h"
#include "stacksym/profile.h"
#include "stacksym/symbolize.h"

namespace stacksym {

struct SymbolizeProfileOptions {
  SymbolizeOptions symbolize;  // demangling, DWARF, inline chains, debug dirs
  // Open ELF files for Profile::modules (same indices; null or missing entries are looked
  // up by path and build ID).
  std::vector<std::shared_ptr<ElfFile>> module_files;
  bool kernel = true;
  std::string kallsyms_path = "/proc/kallsyms";
  std::string vmlinux_path;  // optional: DWARF of the running kernel
  bool only_missing = true;  // keep frames that already have symbols
};

struct SymbolizeProfileStats {
  uint64_t frames = 0;           // distinct frames looked at
  uint64_t symbolized = 0;       // got a function name
  uint64_t failed = 0;           // got a Reason
  uint64_t modules_opened = 0;   // modules with a usable file
  uint64_t modules_missing = 0;  // modules whose file could not be found
};

SymbolizeProfileStats SymbolizeProfile(Profile& profile,
                                       const SymbolizeProfileOptions& options = {});

}  // namespace stacksym
