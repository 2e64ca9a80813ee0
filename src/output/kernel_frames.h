// Kernel frames of a profile symbolized from a kallsyms file, as `symbolize-profile` does it
// locally and as its `--server` client does it (kernel frames never go to a server).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stacksym/profile.h"

namespace stacksym {

struct KernelFramesResult {
  uint64_t frames = 0;                // kernel frames looked at
  uint64_t symbolized = 0;            // got at least a function name
  std::vector<std::string> messages;  // why kallsyms could not be used, if it could not
};

// Frames that already have symbols are kept unless `resymbolize`.
KernelFramesResult SymbolizeKernelFrames(Profile& profile, const std::string& kallsyms_path,
                                         bool resymbolize);

}  // namespace stacksym
