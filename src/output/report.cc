// Top functions by self and total samples, and the text report around them.
#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <unordered_set>

#include "output/frame_names.h"
#include "stacksym/output.h"

namespace stacksym {

Profile FilterProfile(const Profile& profile, const ProfileFilter& filter) {
  // Rebuilt through the Profile API (its private lookup tables must match the vectors);
  // indices are remapped in case the input held duplicate modules or frames.
  Profile out;
  out.period_ns = profile.period_ns;
  out.start_time_ns = profile.start_time_ns;
  out.duration_ns = profile.duration_ns;
  std::vector<uint32_t> module_map(profile.modules.size());
  for (size_t i = 0; i < profile.modules.size(); ++i) {
    module_map[i] = out.AddModule(profile.modules[i]);
  }
  std::vector<uint32_t> frame_map(profile.frames.size());
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    ProfileFrame frame = profile.frames[i];
    if (frame.module < module_map.size()) frame.module = module_map[frame.module];
    frame_map[i] = out.InternFrame(frame);
  }
  out.symbols.resize(out.frames.size());
  for (size_t i = 0; i < profile.frames.size() && i < profile.symbols.size(); ++i) {
    if (profile.symbols[i] && !out.symbols[frame_map[i]]) {
      out.symbols[frame_map[i]] = profile.symbols[i];
    }
  }
  for (size_t s = 0; s < profile.stacks.size(); ++s) {
    ProfileStack stack = profile.stacks[s];
    if (filter.comm && stack.comm != *filter.comm) continue;
    if (filter.pid && stack.pid != *filter.pid) continue;
    for (uint32_t& frame : stack.frames) {
      if (frame < frame_map.size()) frame = frame_map[frame];
    }
    out.AddSample(stack, s < profile.counts.size() ? profile.counts[s] : 0);
  }
  return out;
}

std::vector<FunctionStat> TopFunctions(const Profile& profile, const ProfileFilter& filter) {
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
    uint64_t count = s < profile.counts.size() ? profile.counts[s] : 0;
    if (count == 0) continue;
    if (filter.comm && stack.comm != *filter.comm) continue;
    if (filter.pid && stack.pid != *filter.pid) continue;
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
        if (f == 0 && e + 1 == entries.size()) stat.self += count;
        if (std::find(seen.begin(), seen.end(), &stat) == seen.end()) {
          seen.push_back(&stat);
          stat.total += count;
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

}  // namespace

std::string FormatReport(const Profile& profile, const ReportOptions& options) {
  std::vector<FunctionStat> stats = TopFunctions(profile, options.filter);
  uint64_t total = 0;
  std::map<std::string, uint64_t> by_comm;
  size_t stacks = 0;
  for (size_t s = 0; s < profile.stacks.size(); ++s) {
    const ProfileStack& stack = profile.stacks[s];
    if (options.filter.comm && stack.comm != *options.filter.comm) continue;
    if (options.filter.pid && stack.pid != *options.filter.pid) continue;
    uint64_t count = s < profile.counts.size() ? profile.counts[s] : 0;
    total += count;
    by_comm[stack.comm] += count;
    ++stacks;
  }
  size_t limit = options.limit == 0 ? stats.size() : std::min(options.limit, stats.size());
  std::string out;

  if (options.stdio_table) {
    // perf report --no-children: one row per symbol, self overhead first.
    if (options.sort_by_total) {
      std::stable_sort(
          stats.begin(), stats.end(),
          [](const FunctionStat& a, const FunctionStat& b) { return a.total > b.total; });
    }
    out += Row("# Samples: %" PRIu64 "  distinct stacks: %zu", total, stacks);
    if (profile.duration_ns) out += Row("  duration: %.3f s", profile.duration_ns / 1e9);
    if (profile.lost_samples) out += Row("  lost: %" PRIu64, profile.lost_samples);
    if (!profile.event.empty()) out += "  event: " + profile.event;
    out += "\n#\n";
    out += "#    Self    Total      Samples  Shared Object         Symbol\n";
    out += "# .......  .......  ...........  ....................  ......\n";
    for (size_t i = 0; i < limit; ++i) {
      const FunctionStat& s = stats[i];
      if (!options.sort_by_total && s.self == 0) break;
      std::string module = output::BaseName(s.module);
      out += Row("  %6.2f%%  %6.2f%%  %11" PRIu64 "  %-20s  [%c] ", Percent(s.self, total),
                 Percent(s.total, total), options.sort_by_total ? s.total : s.self, module.c_str(),
                 s.kernel ? 'k' : '.');
      out += s.name;
      out += '\n';
    }
    return out;
  }

  out += Row("%" PRIu64 " samples in %zu distinct stacks", total, stacks);
  if (profile.duration_ns) out += Row(" over %.3f s", profile.duration_ns / 1e9);
  if (profile.period_ns) out += Row(" (sampling every %.3f ms)", profile.period_ns / 1e6);
  if (profile.lost_samples) out += Row("; %" PRIu64 " samples lost", profile.lost_samples);
  out += "\n";
  if (by_comm.size() > 1) {
    std::vector<std::pair<uint64_t, std::string>> comms;
    for (auto& [comm, count] : by_comm) comms.push_back({count, comm});
    std::sort(comms.rbegin(), comms.rend());
    out += "\nBy thread name:\n";
    for (size_t i = 0; i < comms.size() && i < 10; ++i) {
      out += Row("  %6.2f%%  %10" PRIu64 "  ", Percent(comms[i].first, total), comms[i].first);
      out += comms[i].second + "\n";
    }
  }
  out += "\nTop functions by self samples:\n";
  out += "      Self   Samples  Function\n";
  for (size_t i = 0; i < limit && stats[i].self > 0; ++i) {
    out += Row("  %7.2f%%  %8" PRIu64 "  ", Percent(stats[i].self, total), stats[i].self);
    out += stats[i].name + (stats[i].kernel ? " [k]" : "") + "  (" +
           output::BaseName(stats[i].module) + ")\n";
  }
  std::stable_sort(stats.begin(), stats.end(),
                   [](const FunctionStat& a, const FunctionStat& b) { return a.total > b.total; });
  out += "\nTop functions by total samples (self + callees):\n";
  out += "     Total   Samples  Function\n";
  for (size_t i = 0; i < limit; ++i) {
    out += Row("  %7.2f%%  %8" PRIu64 "  ", Percent(stats[i].total, total), stats[i].total);
    out += stats[i].name + (stats[i].kernel ? " [k]" : "") + "  (" +
           output::BaseName(stats[i].module) + ")\n";
  }
  return out;
}

}  // namespace stacksym
