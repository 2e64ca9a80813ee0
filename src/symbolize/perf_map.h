// PerfMap — the /tmp/perf-PID.map files JITs write for profilers (V8/Node --perf-basic-prof,
// the JVM's perf-map-agent, LuaJIT, CPython 3.12 -X perf, ...).
//
// Each line is "START SIZE NAME" with START and SIZE in hex (an optional 0x is accepted) and
// NAME running to the end of the line (it may contain spaces). The file is a log: a JIT that
// reuses memory appends a new entry over an old one, so where entries overlap the later line
// wins. The table is flattened into disjoint ranges once, at load, so lookups are one binary
// search whatever the input.
//
//   Result<PerfMap> map = PerfMap::Load("/tmp/perf-1234.map");
//   if (auto sym = map->Find(0x7f0012345678)) printf("%s+%#lx\n", sym->name.data(), ...);
//
//   // For a live process, in its own mount namespace and with its namespaced pid:
//   Result<PerfMap> map = LoadPerfMapForProcess(1234);
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stacksym/result.h"

namespace stacksym::symbolize {

struct PerfMapSymbol {
  uint64_t start = 0;  // as written in the map (the JIT function's first byte)
  uint64_t size = 0;
  std::string_view name;  // points into the owning PerfMap
};

class PerfMap {
 public:
  static Result<PerfMap> Load(const std::string& path);
  // Malformed lines (bad hex, no name, size 0) are skipped and counted.
  static PerfMap Parse(std::string_view text);

  PerfMap() = default;
  PerfMap(PerfMap&&) noexcept = default;
  PerfMap& operator=(PerfMap&&) noexcept = default;

  // The entry covering addr (the latest line, where several do), or nullopt.
  std::optional<PerfMapSymbol> Find(uint64_t addr) const;

  size_t size() const { return symbols_.size(); }  // accepted lines
  size_t skipped_lines() const { return skipped_lines_; }
  const std::string& path() const { return path_; }

 private:
  struct Symbol {
    uint64_t start;
    uint64_t end;  // exclusive, saturated at UINT64_MAX
    uint32_t name_offset;
    uint32_t name_length;
  };
  // A piece of the flattened map: [start, end) answered by symbols_[symbol].
  struct Piece {
    uint64_t start;
    uint64_t end;
    uint32_t symbol;
  };

  std::vector<Symbol> symbols_;  // in file order
  std::vector<Piece> pieces_;    // disjoint, sorted by start
  std::string names_;
  std::string path_;
  size_t skipped_lines_ = 0;
};

// The pid a process has inside its own (innermost) pid namespace, from the NSpid line of
// /proc/PID/status; `pid` itself when the kernel has no NSpid line.
Result<pid_t> NamespacedPid(pid_t pid);

// Finds and loads the perf map of a live process. Tries, in order, the process's own /tmp
// (through /proc/PID/root, so a container's /tmp) with its namespaced pid, then with the
// host pid, then the host's /tmp/perf-PID.map. ErrorCode::kNotFound when none exists.
Result<PerfMap> LoadPerfMapForProcess(pid_t pid);

}  // namespace stacksym::symbolize
