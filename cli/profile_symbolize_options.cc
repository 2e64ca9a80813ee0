#include "profile_symbolize_options.h"

#include <cstdio>

#include "stacksym/remote.h"

namespace stacksym::cli {

Result<ProfileSymbolizeOptions> ProfileSymbolizeCliOptions::Resolve() const {
  ProfileSymbolizeOptions options;
  options.symbolize.debug_dirs = debug_dirs.Resolve(options.symbolize.debug_dirs);
  options.symbolize.cache_dir = cache.Resolve();
  options.symbolize.demangle = !no_demangle;
  options.symbolize.inlines = !no_inlines;
  if (!no_debuginfod) options.symbolize.fetcher = MakeDebuginfodFetcher({});
  options.kallsyms_path = kallsyms;
  options.vmlinux_path = vmlinux;
  options.perf_map_dirs = perf_map_dirs;
  options.resymbolize = resymbolize;
  if (!server.empty()) {
    Result<std::shared_ptr<FrameSymbolBackend>> backend = ConnectSymbolServer(server);
    if (!backend) return backend.error();
    options.server = *backend;
  }
  return options;
}

void AddProfileSymbolizeOptions(CLI::App& app, ProfileSymbolizeCliOptions* options,
                                const std::string& default_kallsyms) {
  AddDebugDirOptions(app, &options->debug_dirs);
  AddCacheOptions(app, &options->cache);
  options->kallsyms = default_kallsyms;
  app.add_option("--server", options->server,
                 "Symbolize user frames on this `stacksym serve` (http://host:port) first; "
                 "what it cannot name is looked up locally");
  app.add_flag("--no-debuginfod", options->no_debuginfod,
               "Do not fetch missing files from the servers in $DEBUGINFOD_URLS");
  app.add_option("--kallsyms", options->kallsyms,
                 default_kallsyms.empty()
                     ? "Kernel frames from this kallsyms file (same machine and boot only, e.g. "
                       "/proc/kallsyms); default: kernel frames left as they are"
                     : "Kernel frames from this kallsyms file (default " + default_kallsyms +
                           "; empty: kernel frames left as they are)");
  app.add_option("--vmlinux", options->vmlinux, "vmlinux with DWARF for kernel frames");
  app.add_option("--perf-map-dir", options->perf_map_dirs,
                 "JIT frames of a process whose perf map or jitdump the recording did not read: "
                 "from DIR/perf-PID.map and DIR/jit-PID.dump (repeatable; e.g. /tmp on the "
                 "machine that recorded)");
  app.add_flag("--no-demangle", options->no_demangle, "Keep linkage names");
  app.add_flag("--no-inlines", options->no_inlines, "No inlined frames");
  app.add_flag("--resymbolize", options->resymbolize, "Redo frames that already have symbols");
}

void PrintProfileSymbolizeStats(const char* command, const ProfileSymbolizeStats& stats) {
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  for (const std::string& message : stats.messages) {
    std::fprintf(stderr, "%s: %s\n", command, message.c_str());
  }
  std::fprintf(stderr,
               "%s: %llu of %llu frames symbolized (%llu kernel); modules: %llu found, %llu "
               "without a matching file",
               command, u(stats.symbolized), u(stats.frames), u(stats.kernel_frames),
               u(stats.modules_found), u(stats.modules_missing));
  if (stats.server_requests > 0) {
    std::fprintf(stderr, "; %llu frames named by the server in %llu requests", u(stats.from_server),
                 u(stats.server_requests));
  }
  if (stats.jit_frames > 0) {
    std::fprintf(stderr, "; %llu of %llu JIT frames named by perf maps or jitdumps",
                 u(stats.jit_named), u(stats.jit_frames));
  }
  std::fprintf(stderr, "\n");
}

}  // namespace stacksym::cli
