// Top functions by self and total value (samples, or CPU, off-CPU or wall time), and the text
// report around them.
#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <tuple>

#include "output/frame_names.h"
#include "stacksym/output.h"

namespace stacksym {

std::vector<FunctionStat> TopFunctions(const Profile& profile, const ProfileFilter& filter,
                                       std::optional<SampleType> type) {
  const SampleType shown = type.value_or(profile.DefaultSampleType());
  std::vector<std::vector<output::NamedEntry>> names = output::NameAllFrames(profile);
  // Keyed by (module, name, kernel) so that equal names in different binaries stay apart.
  std::map<std::tuple<std::string, std::string, bool>, FunctionStat> stats;
  std::vector<std::string> modules(profile.frames.size());
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    modules[i] = output::FrameModuleName(profile, profile.frames[i]);
  }
  std::vector<FunctionStat*> seen;
  for (size_t s = 0; s < profile.stacks.size(); ++s) {
    const ProfileStack& stack = profile.stacks[s];
    uint64_t value = profile.Value(s, shown);
    uint64_t samples = profile.Value(s, SampleType::kSamples);
    uint64_t off_cpu = profile.Value(s, SampleType::kOffCpu);
    if (value == 0 && samples == 0 && off_cpu == 0) continue;
    if (!filter.Keeps(stack)) continue;
    seen.clear();
    for (size_t f = 0; f < stack.frames.size(); ++f) {
      uint32_t frame = stack.frames[f];
      if (frame >= names.size()) continue;
      const std::vector<output::NamedEntry>& entries = names[frame];
      for (size_t e = 0; e < entries.size(); ++e) {
        bool kernel = entries[e].kind == output::EntryKind::kKernel;
        FunctionStat& stat = stats[{modules[frame], entries[e].name, kernel}];
        if (stat.name.empty()) {
          stat.name = entries[e].name;
          stat.module = modules[frame];
          stat.kernel = kernel;
        }
        // Self: the innermost entry (last, outermost-first order) of the leaf frame.
        if (f == 0 && e + 1 == entries.size()) {
          stat.self += value;
          stat.self_samples += samples;
          stat.self_off_cpu_ns += off_cpu;
        }
        if (std::find(seen.begin(), seen.end(), &stat) == seen.end()) {
          seen.push_back(&stat);
          stat.total += value;
          stat.total_samples += samples;
          stat.total_off_cpu_ns += off_cpu;
        }
      }
    }
  }
  std::vector<FunctionStat> out;
  out.reserve(stats.size());
  for (auto& [key, stat] : stats) out.push_back(std::move(stat));
  std::sort(out.begin(), out.end(), [](const FunctionStat& a, const FunctionStat& b) {
    if (a.self != b.self) return a.self > b.self;
    if (a.total != b.total) return a.total > b.total;
    return a.name < b.name;
  });
  return out;
}

namespace {

double Percent(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0;
}

std::string Row(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string Row(const char* format, ...) {
  char buf[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

// What the tables say of a type: "samples", "CPU time"...
const char* TypeLabel(SampleType type) {
  switch (type) {
    case SampleType::kSamples:
      return "samples";
    case SampleType::kCpu:
      return "CPU time";
    case SampleType::kOffCpu:
      return "off-CPU time";
    case SampleType::kWall:
      break;
  }
  return "wall time";
}

// The value columns of the function tables: the shown type without off-CPU time; with it, CPU,
// off-CPU and wall time side by side (after the samples when those are shown).
class ValueColumns {
 public:
  ValueColumns(const Profile& profile, SampleType shown) : period_ns_(profile.period_ns) {
    if (!profile.has_off_cpu()) {
      types_ = {shown};
    } else if (shown == SampleType::kSamples) {
      types_ = {shown, SampleType::kCpu, SampleType::kOffCpu, SampleType::kWall};
    } else {
      types_ = {SampleType::kCpu, SampleType::kOffCpu, SampleType::kWall};
    }
  }

  // Column titles, each right-aligned to the cell's width (`samples_width` for counts).
  std::string Header(int samples_width) const {
    std::string out;
    for (SampleType type : types_) {
      out += Row("  %*s", Width(type, samples_width), Title(type));
    }
    return out;
  }
  std::string Dots(int samples_width) const {
    std::string out;
    for (SampleType type : types_) out += "  " + std::string(Width(type, samples_width), '.');
    return out;
  }
  // The stat's self or total value of every column.
  std::string Cells(const FunctionStat& stat, bool total, int samples_width) const {
    uint64_t samples = total ? stat.total_samples : stat.self_samples;
    uint64_t off_cpu = total ? stat.total_off_cpu_ns : stat.self_off_cpu_ns;
    std::string out;
    for (SampleType type : types_) {
      uint64_t cpu = samples * period_ns_;
      uint64_t value = type == SampleType::kSamples  ? samples
                       : type == SampleType::kCpu    ? cpu
                       : type == SampleType::kOffCpu ? off_cpu
                                                     : cpu + off_cpu;
      int width = Width(type, samples_width);
      out += type == SampleType::kSamples ? Row("  %*" PRIu64, width, value)
                                          : Row("  %*.3f", width, static_cast<double>(value) / 1e6);
    }
    return out;
  }

 private:
  static int Width(SampleType type, int samples_width) {
    return type == SampleType::kSamples ? samples_width : std::max(samples_width, 10);
  }
  static const char* Title(SampleType type) {
    switch (type) {
      case SampleType::kSamples:
        return "Samples";
      case SampleType::kCpu:
        return "CPU ms";
      case SampleType::kOffCpu:
        return "Off-CPU ms";
      case SampleType::kWall:
        break;
    }
    return "Wall ms";
  }

  uint64_t period_ns_;
  std::vector<SampleType> types_;
};

// The filtered stacks' totals.
struct ReportTotals {
  uint64_t shown = 0;  // in the shown type
  uint64_t samples = 0;
  uint64_t off_cpu_ns = 0;
  size_t stacks = 0;
  std::map<std::string, uint64_t> by_comm;  // in the shown type
};

ReportTotals SumStacks(const Profile& profile, const ProfileFilter& filter, SampleType shown) {
  ReportTotals totals;
  for (size_t s = 0; s < profile.stacks.size(); ++s) {
    const ProfileStack& stack = profile.stacks[s];
    if (!filter.Keeps(stack)) continue;
    uint64_t value = profile.Value(s, shown);
    totals.shown += value;
    totals.samples += profile.Value(s, SampleType::kSamples);
    totals.off_cpu_ns += profile.Value(s, SampleType::kOffCpu);
    totals.by_comm[stack.comm] += value;
    ++totals.stacks;
  }
  return totals;
}

std::string FormatValue(uint64_t value, SampleType type) {
  if (type == SampleType::kSamples) return Row("%" PRIu64, value);
  return Row("%.3f ms", static_cast<double>(value) / 1e6);
}

// perf report --no-children: one row per symbol, self overhead first.
std::string StdioTable(const Profile& profile, const ReportOptions& options, SampleType shown,
                       std::vector<FunctionStat> stats) {
  ReportTotals totals = SumStacks(profile, options.filter, shown);
  ValueColumns columns(profile, shown);
  if (options.sort_by_total) {
    std::stable_sort(stats.begin(), stats.end(), [](const FunctionStat& a, const FunctionStat& b) {
      return a.total > b.total;
    });
  }
  size_t limit = options.limit == 0 ? stats.size() : std::min(options.limit, stats.size());
  std::string out =
      Row("# Samples: %" PRIu64 "  distinct stacks: %zu", totals.samples, totals.stacks);
  if (profile.duration_ns) out += Row("  duration: %.3f s", profile.duration_ns / 1e9);
  if (profile.lost_samples) out += Row("  lost: %" PRIu64, profile.lost_samples);
  if (!profile.event.empty()) out += "  event: " + profile.event;
  if (profile.has_off_cpu()) {
    out += Row("  off-CPU: %.3f s  shown: %s", static_cast<double>(totals.off_cpu_ns) / 1e9,
               TypeLabel(shown));
  }
  out += "\n#\n";
  out += "#    Self    Total" + columns.Header(11) + "  Shared Object         Symbol\n";
  out += "# .......  ......." + columns.Dots(11) + "  ....................  ......\n";
  for (size_t i = 0; i < limit; ++i) {
    const FunctionStat& s = stats[i];
    if ((options.sort_by_total ? s.total : s.self) == 0) break;
    std::string module = output::BaseName(s.module);
    out += Row("  %6.2f%%  %6.2f%%", Percent(s.self, totals.shown), Percent(s.total, totals.shown));
    out += columns.Cells(s, options.sort_by_total, 11);
    out += Row("  %-20s  [%c] ", module.c_str(), s.kernel ? 'k' : '.');
    out += s.name;
    out += '\n';
  }
  return out;
}

// One table of the summary: self or total, in the order `stats` is in.
std::string FunctionTable(const std::vector<FunctionStat>& stats, size_t limit, bool total,
                          const ValueColumns& columns, uint64_t whole) {
  std::string out = total ? "     Total" : "      Self";
  out += columns.Header(8) + "  Function\n";
  for (size_t i = 0; i < limit && (total ? stats[i].total : stats[i].self) > 0; ++i) {
    out += Row("  %7.2f%%", Percent(total ? stats[i].total : stats[i].self, whole));
    out += columns.Cells(stats[i], total, 8) + "  ";
    out += stats[i].name + (stats[i].kernel ? " [k]" : "") + "  (" +
           output::BaseName(stats[i].module) + ")\n";
  }
  return out;
}

}  // namespace

std::string FormatReport(const Profile& profile, const ReportOptions& options) {
  const SampleType shown = options.sample_type.value_or(profile.DefaultSampleType());
  std::vector<FunctionStat> stats = TopFunctions(profile, options.filter, shown);
  if (options.stdio_table) return StdioTable(profile, options, shown, std::move(stats));

  ReportTotals totals = SumStacks(profile, options.filter, shown);
  ValueColumns columns(profile, shown);
  size_t limit = options.limit == 0 ? stats.size() : std::min(options.limit, stats.size());
  std::string out =
      Row("%" PRIu64 " samples in %zu distinct stacks", totals.samples, totals.stacks);
  if (profile.duration_ns) out += Row(" over %.3f s", profile.duration_ns / 1e9);
  if (profile.period_ns) out += Row(" (sampling every %.3f ms)", profile.period_ns / 1e6);
  if (profile.has_off_cpu()) {
    out += Row("; %.3f s off CPU", static_cast<double>(totals.off_cpu_ns) / 1e9);
  }
  if (profile.lost_samples) out += Row("; %" PRIu64 " samples lost", profile.lost_samples);
  out += "\n";
  if (totals.by_comm.size() > 1) {
    std::vector<std::pair<uint64_t, std::string>> comms;
    for (auto& [comm, value] : totals.by_comm) comms.push_back({value, comm});
    std::sort(comms.rbegin(), comms.rend());
    out += shown == SampleType::kSamples
               ? std::string("\nBy thread name:\n")
               : std::string("\nBy thread name (") + TypeLabel(shown) + "):\n";
    for (size_t i = 0; i < comms.size() && i < 10; ++i) {
      out += Row("  %6.2f%%  %10s  ", Percent(comms[i].first, totals.shown),
                 FormatValue(comms[i].first, shown).c_str());
      out += comms[i].second + "\n";
    }
  }
  out += std::string("\nTop functions by self ") + TypeLabel(shown) + ":\n";
  out += FunctionTable(stats, limit, /*total=*/false, columns, totals.shown);
  std::stable_sort(stats.begin(), stats.end(),
                   [](const FunctionStat& a, const FunctionStat& b) { return a.total > b.total; });
  out += std::string("\nTop functions by total ") + TypeLabel(shown) + " (self + callees):\n";
  out += FunctionTable(stats, limit, /*total=*/true, columns, totals.shown);
  return out;
}

}  // namespace stacksym
