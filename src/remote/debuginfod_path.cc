#include "remote/debuginfod_path.h"

#include <algorithm>

#include "stacksym/hex.h"

namespace stacksym::remote {
namespace {

// GNU build IDs are 20 bytes (SHA-1) or 16 (MD5/UUID); ld's --build-id=0xHEX takes any
// length, and the rest of stacksym needs 2 at least. 64 bytes is far past any in use.
constexpr size_t kMinBuildIdBytes = 2;
constexpr size_t kMaxBuildIdBytes = 64;
// ELF section names are short; a long one is a malformed or hostile request.
constexpr size_t kMaxSectionNameBytes = 256;

Error Malformed(std::string message) {
  return Error(ErrorCode::kInvalidArgument, std::move(message));
}

// Printable ASCII other than '/': what a section name may hold here.
bool IsSectionNameChar(char c) { return c > ' ' && c < 0x7f && c != '/'; }

Result<std::vector<uint8_t>> ParseBuildIdHex(std::string_view hex) {
  if (hex.empty()) return Malformed("no build ID after /buildid/");
  if (hex.size() % 2 != 0) return Malformed("a build ID has an even number of hex digits");
  if (hex.size() < 2 * kMinBuildIdBytes || hex.size() > 2 * kMaxBuildIdBytes) {
    return Malformed("a build ID has 2 to 64 bytes");
  }
  std::optional<std::vector<uint8_t>> bytes = FromHex(hex);
  if (!bytes) return Malformed("the build ID is not hexadecimal");
  return *std::move(bytes);
}

Result<std::string> ParseSectionName(std::string_view name) {
  if (name.empty()) return Malformed("no section name after /section/");
  if (name.size() > kMaxSectionNameBytes) return Malformed("the section name is too long");
  if (!std::all_of(name.begin(), name.end(), IsSectionNameChar)) {
    return Malformed("the section name holds a character no section name has");
  }
  return std::string(name);
}

}  // namespace

const char* BuildIdArtifactName(BuildIdArtifact artifact) {
  switch (artifact) {
    case BuildIdArtifact::kDebugInfo:
      return "debuginfo";
    case BuildIdArtifact::kExecutable:
      return "executable";
    case BuildIdArtifact::kSection:
      return "section";
    case BuildIdArtifact::kSource:
      return "source";
  }
  return "unknown";
}

Result<BuildIdPath> ParseBuildIdPath(std::string_view path) {
  if (!path.starts_with(kBuildIdPathPrefix)) return Malformed("not a /buildid/ path");
  path.remove_prefix(kBuildIdPathPrefix.size());
  size_t slash = path.find('/');
  if (slash == std::string_view::npos) {
    return Malformed("want /buildid/HEX/debuginfo, /executable or /section/NAME");
  }
  BuildIdPath out;
  Result<std::vector<uint8_t>> id = ParseBuildIdHex(path.substr(0, slash));
  if (!id) return id.error();
  out.build_id = *std::move(id);
  std::string_view rest = path.substr(slash + 1);
  if (rest == "debuginfo") {
    out.artifact = BuildIdArtifact::kDebugInfo;
  } else if (rest == "executable") {
    out.artifact = BuildIdArtifact::kExecutable;
  } else if (rest.starts_with("section/")) {
    out.artifact = BuildIdArtifact::kSection;
    Result<std::string> name = ParseSectionName(rest.substr(8));
    if (!name) return name.error();
    out.section = *std::move(name);
  } else if (rest.starts_with("source/")) {
    out.artifact = BuildIdArtifact::kSource;
  } else {
    return Malformed("want /buildid/HEX/debuginfo, /executable or /section/NAME");
  }
  return out;
}

}  // namespace stacksym::remote
