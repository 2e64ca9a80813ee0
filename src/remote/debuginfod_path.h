// The paths of the debuginfod web API (elfutils' debuginfod(8), WEBAPI) that `stacksym serve`
// answers: /buildid/HEX/debuginfo, /buildid/HEX/executable, /buildid/HEX/section/NAME (and
// /buildid/HEX/source/..., recognised so that it can be refused as "not here").
//
//   Result<BuildIdPath> p = ParseBuildIdPath("/buildid/8713b9c3.../section/.debug_info");
//   if (!p) return 400;                 // malformed: the message says what is wrong
//   p->artifact == BuildIdArtifact::kSection, p->section == ".debug_info"
//
// The path is the percent-decoded one the HTTP layer gives; anything odd (not hex, an odd
// number of digits, extra segments, control bytes) is an error, never a guess.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stacksym/result.h"

namespace stacksym::remote {

inline constexpr std::string_view kBuildIdPathPrefix = "/buildid/";

enum class BuildIdArtifact : uint8_t { kDebugInfo, kExecutable, kSection, kSource };
inline constexpr size_t kBuildIdArtifactCount = 4;

// "debuginfo", "executable", "section", "source": the path segment, and the metrics label.
const char* BuildIdArtifactName(BuildIdArtifact artifact);

struct BuildIdPath {
  BuildIdArtifact artifact = BuildIdArtifact::kDebugInfo;
  std::vector<uint8_t> build_id;  // 2 to 64 bytes
  std::string section;            // kSection: the section's name
};

// Error kInvalidArgument (an HTTP 400) for anything but the forms above.
Result<BuildIdPath> ParseBuildIdPath(std::string_view path);

}  // namespace stacksym::remote
