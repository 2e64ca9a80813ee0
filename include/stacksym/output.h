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
// folded stacks (the flame graph colours them instead). An off-CPU stack ends in a frame that
// names its thread's state ("[off-cpu: sleeping]") in folded stacks and flame graphs.
//
// Values: pprof carries every sample type the profile has (samples, cpu and, with off-CPU
// time, off_cpu); the single-valued outputs (folded, flame graph SVG, report) show one, chosen
// in their options (default: Profile::DefaultSampleType()); the flame graph page embeds every
// type and switches between them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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

// Which stacks to keep (report, convert, record). Empty fields keep everything.
struct ProfileFilter {
  std::optional<std::string> comm;
  std::optional<uint32_t> pid;
  // The thread states to keep: running keeps CPU samples, the others off-CPU intervals.
  std::vector<ThreadState> states = {};

  bool Keeps(const ProfileStack& stack) const;  // the one test every filtered output applies
  bool KeepsAll() const { return !comm && !pid && states.empty(); }
};
// A copy of `profile` holding only the stacks that pass the filter, with their counts, off-CPU
// time and (with keep_times) times, and only the modules (with their kept files), frames,
// symbols and processes those stacks use (renumbered in the order first used); period, times,
// event and lost samples are copied. Every output of a filtered profile (pprof too) and every
// per-process part the exporters send is written from such a copy, so no writer filters.
Profile FilterProfile(const Profile& profile, const ProfileFilter& filter);
// The same copy, of the stacks whose indices are given (in that order; out of range: skipped).
Profile FilterProfileStacks(const Profile& profile, std::span<const uint32_t> stacks);

// "sleeping,uninterruptible" → those states; an unknown name is an Error listing the known ones.
Result<std::vector<ThreadState>> ParseThreadStates(std::string_view list);
// "samples" | "cpu" | "off_cpu" | "wall"; anything else is an Error listing them.
Result<SampleType> ParseSampleTypeName(std::string_view name);
// The value a single-valued output of `profile` shows: `asked`, else the profile's default.
// off_cpu or wall, or a filter on an off-CPU state, for a profile without off-CPU time are an
// Error ("the profile has no off-CPU time; record with --off-cpu").
Result<SampleType> ChooseSampleType(const Profile& profile, std::optional<SampleType> asked,
                                    const ProfileFilter& filter = {});

// ---- pprof -------------------------------------------------------------------------------
// Sample types [samples/count, cpu/nanoseconds], and off_cpu/nanoseconds when the profile has
// off-CPU time (an off-CPU stack's state as the string label thread_state); one Location per
// distinct frame with one Line per inline-chain entry (innermost first); one Mapping per module.
// User frames keep their normalized address: Location.address - Mapping.memory_start +
// Mapping.file_offset is the file offset. Unsymbolized profiles are valid pprof (Locations
// without Lines).
Result<std::string> EncodePprof(const Profile& profile, bool gzip = true);
// Accepts gzip'ed or plain protobuf bytes. Every index is checked; bad input is an Error.
Result<Profile> DecodePprof(std::span<const uint8_t> bytes);

// ---- folded stacks -----------------------------------------------------------------------
struct FoldedOptions {
  bool mark_inline = true;  // "_[i]" on inlined frames
  bool mark_kernel = true;  // "_[k]" on kernel frames
  bool mark_python = true;  // "_[py]" on Python functions (FrameKind::kPython)
  // The value on each line, in the type's unit (nanoseconds for times); nullopt: the
  // profile's DefaultSampleType().
  std::optional<SampleType> sample_type = std::nullopt;
};
// One line per distinct (comm, stack[, state]), sorted, root first: "comm;main;work;leaf 42\n";
// lines whose value is 0 are left out.
std::string FormatFolded(const Profile& profile, const FoldedOptions& options = {});
// Reads folded text back (a folded file holds one value: it becomes the samples). Frames become
// symbolized frames of a synthetic module; "_[k]" frames become kernel frames and "_[i]" frames
// join the inline chain of the frame before them. Lines that are not "stack COUNT" are an Error
// naming the line.
Result<Profile> ParseFolded(std::string_view text);

// ---- flame graphs ------------------------------------------------------------------------
struct FlameGraphOptions {
  std::string title = "stacksym flame graph";
  uint32_t svg_width = 1200;  // pixels; SVG only
  // The SVG's value; the type the page opens on (it embeds every type the profile has).
  // nullopt: the profile's DefaultSampleType().
  std::optional<SampleType> sample_type = std::nullopt;
};
// One self-contained HTML page (no network fetches): click to zoom, search with highlight,
// tooltips with the value and percent, reset, inverted (icicle) view, a switch between the
// sample types (samples and cpu; off_cpu and wall with off-CPU time), off-CPU frames in a colour
// of their own. The page reads ?search=REGEX, ?zoom=NAME, ?inverted=1 and ?type=NAME from its
// URL on load.
std::string RenderFlameGraphHtml(const Profile& profile, const FlameGraphOptions& options = {});
// A static SVG flame graph of one sample type (hover titles give the value and percent).
std::string RenderFlameGraphSvg(const Profile& profile, const FlameGraphOptions& options = {});

// ---- report ------------------------------------------------------------------------------
struct FunctionStat {
  std::string name;    // function (innermost inline entry for self time)
  std::string module;  // module path, "[kernel.kallsyms]" for kernel frames
  bool kernel = false;
  // In the sample type asked of TopFunctions: where this function is the leaf (self), and
  // anywhere on the stack, counted once per stack (total).
  uint64_t self = 0;
  uint64_t total = 0;
  // The same split by kind of time, whatever the type: CPU samples and off-CPU nanoseconds.
  uint64_t self_samples = 0, total_samples = 0;
  uint64_t self_off_cpu_ns = 0, total_off_cpu_ns = 0;
};
// Functions of the stacks `filter` keeps, sorted by self (then total, then name), in `type`
// (nullopt: the profile's DefaultSampleType()).
std::vector<FunctionStat> TopFunctions(const Profile& profile, const ProfileFilter& filter = {},
                                       std::optional<SampleType> type = std::nullopt);

struct ReportOptions {
  ProfileFilter filter;
  size_t limit = 20;           // rows per table; 0 = all
  bool stdio_table = false;    // one perf-report-like table instead of the two summaries
  bool sort_by_total = false;  // stdio table order
  // What percentages and order follow; nullopt: the profile's DefaultSampleType(). A profile
  // with off-CPU time also gets columns of CPU, off-CPU and wall time.
  std::optional<SampleType> sample_type = std::nullopt;
};
std::string FormatReport(const Profile& profile, const ReportOptions& options = {});

// ---- files -------------------------------------------------------------------------------
struct WriteOptions {
  FlameGraphOptions flame_graph;
  FoldedOptions folded;
  // When set, the value of folded stacks, the SVG and the page's first view (over the
  // sub-options' own); checked against the profile (ChooseSampleType).
  std::optional<SampleType> sample_type = std::nullopt;
};
// Writes `profile` in `format` to `path` ("-" = stdout), atomically (temp file + rename). A
// sample type the profile cannot show is an Error (see ChooseSampleType).
Result<void> WriteProfileAs(const Profile& profile, ProfileFormat format, const std::string& path,
                            const WriteOptions& options = {});
// Picks the format from the extension of `path` (see ProfileFormatFromPath); an unknown
// extension is an Error that lists the known ones.
Result<void> WriteProfile(const Profile& profile, const std::string& path,
                          const WriteOptions& options = {});
// Reads pprof (gzip magic or protobuf) or folded text, told apart by content ("-" = stdin).
Result<Profile> ReadProfile(const std::string& path);
Result<Profile> ParseProfileBytes(std::span<const uint8_t> bytes);

}  // namespace stacksym
