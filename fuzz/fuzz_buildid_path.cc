// libFuzzer target for the debuginfod API's paths (`serve`'s GET/HEAD /buildid/...,
// remote/debuginfod_path.h), which come from any client: any bytes parse or give an
// kInvalidArgument Error with a message, never crash; what parses is in range, and the path
// written back from it parses to the same request.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "remote/debuginfod_path.h"
#include "stacksym/hex.h"

using namespace stacksym::remote;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view path(reinterpret_cast<const char*>(data), size);
  stacksym::Result<BuildIdPath> parsed = ParseBuildIdPath(path);
  if (!parsed) {
    if (parsed.error().code != stacksym::ErrorCode::kInvalidArgument ||
        parsed.error().message.empty()) {
      __builtin_trap();
    }
    return 0;
  }
  if (parsed->build_id.size() < 2 || parsed->build_id.size() > 64) __builtin_trap();
  if (parsed->artifact == BuildIdArtifact::kSource) return 0;  // the rest is not kept
  std::string again = std::string(kBuildIdPathPrefix) + stacksym::ToHex(parsed->build_id) + "/" +
                      BuildIdArtifactName(parsed->artifact);
  if (parsed->artifact == BuildIdArtifact::kSection) again += "/" + parsed->section;
  stacksym::Result<BuildIdPath> reparsed = ParseBuildIdPath(again);
  if (!reparsed || reparsed->artifact != parsed->artifact ||
      reparsed->build_id != parsed->build_id || reparsed->section != parsed->section) {
    __builtin_trap();
  }
  return 0;
}
