// Fuzzes the llvm-symbolizer drop-in's request parser (cli/llvm_symbolizer_request.cc) on
// arbitrary stdin lines: no crash, and whatever parses re-parses to the same request when
// written back in the canonical `COMMAND "module" 0xADDRESS` form (`COMMAND BUILDID:"HEX"
// 0xADDRESS` for a build ID); the module as written is the module plus at most an ":arch"
// suffix.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "llvm_symbolizer_request.h"

using stacksym::cli::LlvmCommand;
using stacksym::cli::ParseLlvmRequest;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  for (const std::string& obj : {std::string(), std::string("/bin/true")}) {
    std::string written;
    auto request = ParseLlvmRequest(line, obj, &written);
    if (!request) continue;
    if (!obj.empty() && request->module != obj) std::abort();
    // The module as written (JSON's ModuleName) is the module plus at most an ":arch" suffix.
    if (written.compare(0, request->module.size(), request->module) != 0 ||
        (written.size() != request->module.size() && written[request->module.size()] != ':'))
      std::abort();
    // Modules with quotes, delimiters or colons do not survive the canonical form.
    if (request->module.empty() || request->module.find_first_of("\"' \n\r:") != std::string::npos)
      continue;
    const char* command = request->command == LlvmCommand::kCode   ? "CODE"
                          : request->command == LlvmCommand::kData ? "DATA"
                                                                   : "FRAME";
    char address[24];
    std::snprintf(address, sizeof address, "0x%llx",
                  static_cast<unsigned long long>(request->address));
    // A build ID's module is its name (hex in capitals), written back with its prefix.
    std::string canonical = std::string(command) + (request->build_id.empty() ? " " : " BUILDID:") +
                            "\"" + request->module + "\" " + address;
    auto again = ParseLlvmRequest(canonical, "");
    if (!again || again->command != request->command || again->module != request->module ||
        again->build_id != request->build_id || again->address != request->address)
      std::abort();
    if (!request->build_id.empty() &&
        stacksym::cli::LlvmBuildIdName(request->build_id) != request->module)
      std::abort();
  }
  return 0;
}
