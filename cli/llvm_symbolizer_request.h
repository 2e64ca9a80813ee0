// One request line of llvm-symbolizer's stdin protocol, parsed as llvm-symbolizer 14 does:
// an optional CODE/DATA/FRAME command, the module (quoted with " or ', or up to the next
// space; a ":arch" suffix naming an architecture is dropped) unless --obj gave it, then the
// address (0x hex, 0 octal, else decimal). Separate from the drop-in so it can be fuzzed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stacksym::cli {

enum class LlvmCommand { kCode, kData, kFrame };

struct LlvmRequest {
  LlvmCommand command = LlvmCommand::kCode;
  std::string module;  // ":arch" suffix removed
  uint64_t address = 0;
};

// `default_module` is the --obj file (empty: the line names the module). nullopt when the
// line cannot be parsed (llvm-symbolizer then echoes it). `written_module`, when given,
// receives the module as the line wrote it (":arch" kept, empty if the parse failed before
// it ended): llvm-symbolizer's JSON "ModuleName", also for lines it cannot parse.
std::optional<LlvmRequest> ParseLlvmRequest(std::string_view line,
                                            const std::string& default_module,
                                            std::string* written_module = nullptr);

// An address as llvm-symbolizer reads it: 0x... hex, 0... octal, else decimal; false on
// anything else or overflow.
bool ParseLlvmAddress(std::string_view text, uint64_t* value);

}  // namespace stacksym::cli
