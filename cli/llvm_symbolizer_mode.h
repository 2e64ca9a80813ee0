// The llvm-symbolizer drop-in: `stacksym` started under a name beginning with
// "llvm-symbolizer" (the sanitizer runtimes only speak the protocol to such a name, see
// ASAN_SYMBOLIZER_PATH) reads llvm-symbolizer's flags and stdin requests
// (`CODE "module" 0xoffset`, `DATA ...`, `FRAME ...`, `module addr`, or addresses with --obj)
// and answers in its output format, one flushed answer per request.
#pragma once

#include <string_view>

namespace stacksym::cli {

// True when argv[0]'s file name starts with "llvm-symbolizer".
bool IsLlvmSymbolizerName(std::string_view argv0);

// Runs the drop-in; returns the process exit code.
int RunLlvmSymbolizer(int argc, char** argv);

}  // namespace stacksym::cli
