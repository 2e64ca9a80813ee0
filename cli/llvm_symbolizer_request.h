// One request line of llvm-symbolizer's stdin protocol, parsed as llvm-symbolizer 14 does:
// an optional CODE/DATA/FRAME command, the module (quoted with " or ', or up to the next
// space; a ":arch" suffix naming an architecture is dropped) unless --obj gave it, then the
// address (0x hex, 0 octal, else decimal); and as 16 does, a module written "FILE:path" or
// "BUILDID:hex" (each prefix once, not both; the build ID in hex digits, an odd count read
// with a leading 0). Separate from the drop-in so it can be fuzzed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace stacksym::cli {

enum class LlvmCommand { kCode, kData, kFrame };

struct LlvmRequest {
  LlvmCommand command = LlvmCommand::kCode;
  std::string module;             // ":arch" suffix removed; for a build ID, its hex in capitals
  std::vector<uint8_t> build_id;  // non-empty: the module is the file with this GNU build ID
  uint64_t address = 0;
};

// A build ID as llvm-symbolizer reads one (BUILDID: requests, --build-id): hex digits of
// either case, an odd count as if it had a leading 0; nullopt when empty or not hex.
std::optional<std::vector<uint8_t>> ParseLlvmBuildId(std::string_view hex);

// Its module name in llvm-symbolizer's answers: the hex in capitals.
std::string LlvmBuildIdName(std::span<const uint8_t> build_id);

// XXH64 (seed 0) of `data`, the hash LLVM 16's debuginfod client names its cache files by.
uint64_t LlvmXxh64(std::string_view data);

// The file name LLVM 16's debuginfod client caches a build ID's debug file (or executable)
// under: "llvmcache-" and the decimal XXH64 of "buildid/<hex>/debuginfo".
std::string LlvmDebuginfodCacheName(std::span<const uint8_t> build_id, bool debuginfo = true);

// `default_module` is the --obj file, `default_build_id` the --build-id (both empty: the line
// names the module). nullopt when the line cannot be parsed (llvm-symbolizer then echoes
// it). `written_module`, when given, receives the module as the line wrote it (":arch" kept,
// empty if the parse failed before it ended; a build ID's name once it parsed):
// llvm-symbolizer's JSON "ModuleName", also for lines it cannot parse.
std::optional<LlvmRequest> ParseLlvmRequest(std::string_view line,
                                            const std::string& default_module,
                                            std::string* written_module = nullptr,
                                            std::span<const uint8_t> default_build_id = {});

// An address as llvm-symbolizer reads it: 0x... hex, 0... octal, else decimal; false on
// anything else or overflow.
bool ParseLlvmAddress(std::string_view text, uint64_t* value);

}  // namespace stacksym::cli
