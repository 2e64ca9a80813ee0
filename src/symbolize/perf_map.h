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
//
// A jitdump's code loads (symbolize/jitdump.h) join the same table, after the map's lines: the
// one lookup for JIT code, whichever file its runtime wrote (PerfMap::FromJitFiles).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stacksym/frame.h"
#include "stacksym/module.h"
#include "stacksym/result.h"
#include "symbolize/jitdump.h"

namespace stacksym::symbolize {

struct PerfMapSymbol {
  uint64_t start = 0;  // as written in the map (the JIT function's first byte)
  uint64_t size = 0;
  std::string_view name;  // points into the owning PerfMap
};

class PerfMap {
 public:
  static Result<PerfMap> Load(const std::string& path);
  // Malformed lines (bad hex, no name, size 0) are skipped and counted. A jitdump's `loads`
  // come after the lines (they win where both name an address: they are the more precise).
  static PerfMap Parse(std::string_view text, std::span<const JitCodeLoad> loads = {});
  // A process's perf map and jitdump as read (normalize/jit_files.h). A jitdump that cannot be
  // read leaves the map alone and says why in *jitdump_error (when given). kNotFound when
  // neither file was found.
  static Result<PerfMap> FromJitFiles(const JitFiles& files, std::string* jitdump_error = nullptr);

  PerfMap() = default;
  PerfMap(PerfMap&&) noexcept = default;
  PerfMap& operator=(PerfMap&&) noexcept = default;

  // The entry covering addr (the latest line, where several do), or nullopt.
  std::optional<PerfMapSymbol> Find(uint64_t addr) const;

  size_t size() const { return symbols_.size(); }  // accepted lines
  size_t skipped_lines() const { return skipped_lines_; }
  // The perf map's path (the jitdump's when there is no map).
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

  // Adds an entry (false: not kept, counted as skipped).
  bool Add(uint64_t start, uint64_t size, std::string_view name);
  void Flatten();

  std::vector<Symbol> symbols_;  // in file order
  std::vector<Piece> pieces_;    // disjoint, sorted by start
  std::string names_;
  std::string path_;
  size_t skipped_lines_ = 0;
};

// Finds and loads the perf map and jitdump of a live process (normalize::ProcessJitFiles: its
// own /tmp through /proc/PID/root with its namespaced pid, then with the host pid, then the
// host's /tmp). ErrorCode::kNotFound when there is neither.
Result<PerfMap> LoadPerfMapForProcess(pid_t pid);

// The answer for `address` from the entry covering it: its name (as written: JIT names are not
// mangled), start, size and offset; module = the map's path. The one form every path gives.
SymbolizedAddress PerfMapAnswer(const PerfMapSymbol& symbol, uint64_t address,
                                const std::string& module);

}  // namespace stacksym::symbolize
