// The flags of profile symbolization, shared by `record` and `symbolize-profile` so that both
// take the same ones and turn them into the same ProfileSymbolizeOptions: debug dirs, cache,
// debuginfod, a symbolization server, kernel files, demangling and inlines.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cache_options.h"
#include "debug_dir_options.h"
#include "stacksym/result.h"
#include "stacksym/symbolize_profile.h"

namespace stacksym::cli {

struct ProfileSymbolizeCliOptions {
  DebugDirCliOptions debug_dirs;
  CacheCliOptions cache;
  std::string server;  // symbolize user frames on this `stacksym serve` first
  bool no_debuginfod = false;
  std::string kallsyms;  // kernel frames; the default is the command's
  std::string vmlinux;
  std::vector<std::string> perf_map_dirs;  // JIT frames: DIR/perf-PID.map, DIR/jit-PID.dump
  bool no_demangle = false;
  bool no_inlines = false;
  bool resymbolize = false;

  // The options these flags ask for; an error for a server URL that cannot be used.
  Result<ProfileSymbolizeOptions> Resolve() const;
};

// Adds the flags; `default_kallsyms` is what --kallsyms defaults to (record: the running
// kernel's; symbolize-profile: none, as the profile may come from another machine).
void AddProfileSymbolizeOptions(CLI::App& app, ProfileSymbolizeCliOptions* options,
                                const std::string& default_kallsyms);

// The pass's summary and its messages on stderr, each line prefixed by `command`.
void PrintProfileSymbolizeStats(const char* command, const ProfileSymbolizeStats& stats);

}  // namespace stacksym::cli
