// stacksym/output.h — profiles out to the tools people use, and back in.
//
// A Profile (stacksym/profile.h) can be written as pprof (gzip'ed profile.proto), folded
// stacks ("comm;outer;...;leaf COUNT"), a self-contained flame graph page (HTML, works
// offline) or a static flame graph SVG; pprof and folded files read back into a Profile.
// WriteProfile() picks the format from the file name; ReadProfile() from the content.
//
//   if (auto r = WriteProfile(profile, "out.pb.gz"); !r) return r.error();
//   Result<Profile> again = ReadProfile("out.pb.gz");
//   std::string text = FormatFolded(profile);
//   std::vector<FunctionStat> top = TopFunctions(profile, {.comm = "myapp"});
//
// Frame names: a symbolized frame shows its function (demangled); an unsymbolized user frame
// shows "module+0xOFFSET"; kernel frames get the suffix "_[k]" and inlined frames "_[i]" in
// folded stacks (the flame graph colours them instead).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stacksym/build_id_fetcher.h"
#include "stacksym/debug_dirs.h"
#include "stacksym/profile.h"
#include "stacksym/result.h"

namespace stacksym {

enum class ProfileFormat : uint8_t { kPprof, kFolded, kHtml, kSvg };

const char* ProfileFormatName(ProfileFormat format);  // "pprof", "folded", "html", "svg"
// "pprof" | "folded" | "html" | "svg" → format; anything else is an error.
Result<ProfileFormat> ParseProfileFormat(std::string_view name);
// By file name: *.pb.gz / *.pb / *.pprof → pprof, *.folded / *.txt → folded, *.html / *.htm,
// *.svg; nullopt for anything else.
std::optional<ProfileFormat> ProfileFormatFromPath(std::string_view path);

// Which samples to keep (report, convert). Empty fields keep everything.
struct ProfileFilter {
  std::optional<std::string> comm;
  std::optional<uint32_t> pid;
};
// A copy of `profile` holding only the stacks that pass the filter (frames, modules and
// symbols are kept as they are, so indices stay valid).
Profile FilterProfile(const Profile& profile, const ProfileFilter& filter);

// ---- pprof -------------------------------------------------------------------------------
// Sample types [samples/count, cpu/nanoseconds]; one Location per distinct frame with one Line
// per inline-chain entry (innermost first); one Mapping per module. User frames keep their
// normalized address: Location.address - Mapping.memory_start + Mapping.file_offset is the
// file offset. Unsymbolized profiles are valid pprof (Locations without Lines).
Result<std::string> EncodePprof(const Profile& profile, bool gzip = true);
// Accepts gzip'ed or plain protobuf bytes. Every index is checked; bad input is an Error.
Result<Profile> DecodePprof(std::span<const uint8_t> bytes);

// ---- folded stacks -----------------------------------------------------------------------
struct FoldedOptions {
  bool mark_inline = true;  // "_[i]" on inlined frames
  bool mark_kernel = true;  // "_[k]" on kernel frames
};
// One line per distinct (comm, stack), sorted, root first: "comm;main;work;leaf 42\n".
std::string FormatFolded(const Profile& profile, const FoldedOptions& options = {});
// Reads folded text back. Frames become symbolized frames of a synthetic module; "_[k]"
// frames become kernel frames and "_[i]" frames join the inline chain of the frame before
// them. Lines that are not "stack COUNT" are an Error naming the line.
Result<Profile> ParseFolded(std::string_view text);

// ---- flame graphs ------------------------------------------------------------------------
struct FlameGraphOptions {
  std::string title = "stacksym flame graph";
  uint32_t svg_width = 1200;  // pixels; SVG only
};
// One self-contained HTML page (no network fetches): click to zoom, search with highlight,
// tooltips with samples and percent, reset, inverted (icicle) view. The page reads
// ?search=REGEX, ?zoom=NAME and ?inverted=1 from its URL on load.
std::string RenderFlameGraphHtml(const Profile& profile, const FlameGraphOptions& options = {});
// A static SVG flame graph (hover titles give samples and percent).
std::string RenderFlameGraphSvg(const Profile& profile, const FlameGraphOptions& options = {});

// ---- report ------------------------------------------------------------------------------
struct FunctionStat {
  std::string name;    // function (innermost inline entry for self time)
  std::string module;  // module path, "[kernel.kallsyms]" for kernel frames
  bool kernel = false;
  uint64_t self = 0;   // samples where this function is the leaf
  uint64_t total = 0;  // samples where it is anywhere on the stack (counted once per stack)
};
// Functions sorted by self samples (then total, then name).
std::vector<FunctionStat> TopFunctions(const Profile& profile, const ProfileFilter& filter = {});

struct ReportOptions {
  ProfileFilter filter;
  size_t limit = 20;           // rows per table; 0 = all
  bool stdio_table = false;    // one perf-report-like table instead of the two summaries
  bool sort_by_total = false;  // stdio table order
};
std::string FormatReport(const Profile& profile, const ReportOptions& options = {});

// ---- files -------------------------------------------------------------------------------
struct WriteOptions {
  FlameGraphOptions flame_graph;
  FoldedOptions folded;
};
// Writes `profile` in `format` to `path` ("-" = stdout), atomically (temp file + rename).
Result<void> WriteProfileAs(const Profile& profile, ProfileFormat format, const std::string& path,
                            const WriteOptions& options = {});
// Picks the format from the extension of `path` (see ProfileFormatFromPath); an unknown
// extension is an Error that lists the known ones.
Result<void> WriteProfile(const Profile& profile, const std::string& path,
                          const WriteOptions& options = {});
// Reads pprof (gzip magic or protobuf) or folded text, told apart by content ("-" = stdin).
Result<Profile> ReadProfile(const std::string& path);
Result<Profile> ParseProfileBytes(std::span<const uint8_t> bytes);

// ---- offline symbolization (`stacksym symbolize-profile`) ------------------------------
struct OfflineSymbolizeOptions {
  std::vector<std::string> debug_dirs = {kDefaultDebugDir};
  bool demangle = true;
  bool inlines = true;
  bool resymbolize = false;  // also redo frames that already have symbols
  // Kernel frames: symbolized from this kallsyms file when set (only meaningful on the
  // machine and boot that recorded the profile); left as they are when empty.
  std::string kallsyms_path;
  std::string cache_dir;  // persisted symbol indexes (SymbolizeOptions::cache_dir); empty: none
  // Asked for the executable, then its debug file, when no local file matches (debuginfod).
  std::shared_ptr<const BuildIdFetcher> fetcher;
};
struct OfflineSymbolizeStats {
  uint64_t frames = 0;                // user frames looked at
  uint64_t kernel_frames = 0;         // kernel frames looked at (with kallsyms_path)
  uint64_t symbolized = 0;            // got at least a function name
  uint64_t modules_found = 0;         // modules whose file was found
  uint64_t modules_missing = 0;       // modules with no file matching their build ID
  std::vector<std::string> messages;  // one line per module that could not be used
};
// Finds each module's ELF file by build ID (<dir>/.build-id/xx/rest, then rest.debug, in
// every debug dir) or at its recorded path when that file has the same build ID, and fills
// Profile::symbols for its frames (file offsets). Per-module failures are counted and
// described in the stats, not returned as errors.
OfflineSymbolizeStats SymbolizeProfileOffline(Profile& profile,
                                              const OfflineSymbolizeOptions& options = {});

}  // namespace stacksym
