// `stacksym cache list|build FILE...|prune` — look at and manage the directory of persisted
// symbol indexes (one per build ID) that the symbolizing commands use, with the memos of the
// names their lookups demangled, and of the persisted unwind tables `record` uses (one per
// build ID too).
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "cache_options.h"
#include "command.h"
#include "stacksym/symbol_cache.h"
#include "symbolize_output.h"

// Named for the file: the CLI compiles in unity batches (cli/CMakeLists.txt).
namespace stacksym::cli::cmd_cache {
namespace {

std::string CacheDir(const std::string& dir) { return dir.empty() ? DefaultSymbolCacheDir() : dir; }

std::string When(int64_t ns) {
  time_t t = static_cast<time_t>(ns / 1000000000);
  struct tm tm;
  char buf[32];
  if (gmtime_r(&t, &tm) == nullptr || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
    return "?";
  }
  return buf;
}

// path, bytes, last use, build ID, binary, debug file (indexes; "-" for the other kinds) or
// BROKEN: why, kind ("index", "unwind" or "names").
void PrintEntry(const SymbolCacheEntry& e) {
  std::string debug = e.kind != "index"      ? "-"
                      : e.debug_file.empty() ? "no-debug-info"
                                             : e.debug_file;
  if (!e.problem.empty()) debug = "BROKEN: " + e.problem;
  std::printf("%s\t%" PRIu64 "\t%s\t%s\t%s\t%s\t%s\n", e.path.c_str(), e.bytes,
              When(e.used_ns).c_str(), e.build_id.empty() ? "-" : e.build_id.c_str(),
              e.binary.empty() ? "-" : e.binary.c_str(), debug.c_str(), e.kind.c_str());
}

struct ListArgs {
  std::string dir;
  bool sections = false;
};

// Where an index's bytes go: one indented line per section, with its share of the file.
void PrintSections(const SymbolCacheEntry& e) {
  for (const auto& [name, size] : e.sections) {
    std::printf(
        "  %-18s %12" PRIu64 " %5.1f%%\n", name.c_str(), size,
        e.bytes > 0 ? 100.0 * static_cast<double>(size) / static_cast<double>(e.bytes) : 0.0);
  }
}

int RunList(const ListArgs& a) {
  std::string dir = CacheDir(a.dir);
  auto entries = ListSymbolCache(dir);
  if (!entries) {
    std::fprintf(stderr, "stacksym cache list: %s\n", entries.error().ToString().c_str());
    return kExitBadInput;
  }
  auto tables = ListUnwindTableCache(dir);
  if (!tables) {
    std::fprintf(stderr, "stacksym cache list: %s\n", tables.error().ToString().c_str());
    return kExitBadInput;
  }
  auto memos = ListNameMemoCache(dir);
  if (!memos) {
    std::fprintf(stderr, "stacksym cache list: %s\n", memos.error().ToString().c_str());
    return kExitBadInput;
  }
  uint64_t total = 0;
  for (const auto* list : {&*entries, &*tables, &*memos}) {
    for (const SymbolCacheEntry& e : *list) {
      PrintEntry(e);
      if (a.sections) PrintSections(e);
      total += e.bytes;
    }
  }
  std::fprintf(stderr, "%zu indexes, %zu unwind tables, %zu name memos, %" PRIu64 " bytes in %s\n",
               entries->size(), tables->size(), memos->size(), total, dir.c_str());
  return kExitOk;
}

struct BuildArgs {
  std::string dir;
  std::vector<std::string> files;
  SymbolizeCliOptions symbolize;
};

int RunBuild(const BuildArgs& a) {
  KeepFreedMemoryForReuse();
  SymbolizeOptions options = a.symbolize.ToSymbolizeOptions();
  options.cache_dir = CacheDir(a.dir);
  int status = kExitOk;
  for (const std::string& file : a.files) {
    // The symbol index, then the unwind table `record` loads.
    auto entry = BuildSymbolIndex(file, options);
    if (!entry) {
      std::fprintf(stderr, "stacksym cache build: %s\n", entry.error().ToString().c_str());
      status = kExitBadInput;
      continue;
    }
    PrintEntry(*entry);
    auto table = BuildUnwindTableFile(file, options.cache_dir, options.cache_max_bytes);
    if (!table) {
      std::fprintf(stderr, "stacksym cache build: %s\n", table.error().ToString().c_str());
      status = kExitBadInput;
      continue;
    }
    PrintEntry(*table);
  }
  return status;
}

struct PruneArgs {
  std::string dir;
  uint64_t max_bytes = uint64_t{1} << 30;
};

int RunPrune(const PruneArgs& a) {
  std::string dir = CacheDir(a.dir);
  auto result = PruneSymbolCache(dir, a.max_bytes);
  if (!result) {
    std::fprintf(stderr, "stacksym cache prune: %s\n", result.error().ToString().c_str());
    return kExitBadInput;
  }
  std::printf("removed %zu files (%" PRIu64 " bytes); %" PRIu64 " bytes kept in %s\n",
              result->removed_files, result->removed_bytes, result->kept_bytes, dir.c_str());
  return kExitOk;
}

const char* kDirHelp = "Cache directory (default $XDG_CACHE_HOME/stacksym or ~/.cache/stacksym)";

CommandRegistrar list_registrar(
    "cache list",
    "List the persisted symbol indexes and unwind tables: file, bytes, last use, build ID, "
    "binary, debug file, kind",
    [](CLI::App& app) -> CommandRun {
      auto a = std::make_shared<ListArgs>();
      app.add_option("--cache-dir", a->dir, kDirHelp);
      app.add_flag("--sections", a->sections,
                   "Also print each index's sections and their sizes (where the bytes go)");
      return [a] { return RunList(*a); };
    });

CommandRegistrar build_registrar(
    "cache build",
    "Index ELF files now (whole binary) and store their unwind tables, so that later "
    "symbolization and recording are warm",
    [](CLI::App& app) -> CommandRun {
      auto a = std::make_shared<BuildArgs>();
      app.add_option("FILE", a->files, "ELF files")->required();
      AddDebugDirOptions(app, &a->symbolize.debug_dirs);
      app.add_option("--threads", a->symbolize.threads, "Threads (default: one per CPU)")
          ->check(CLI::Range(0u, 1024u));
      app.add_option("--cache-dir", a->dir, kDirHelp);
      return [a] { return RunBuild(*a); };
    });

CommandRegistrar prune_registrar("cache prune",
                                 "Remove least recently used indexes and unwind tables beyond a "
                                 "size",
                                 [](CLI::App& app) -> CommandRun {
                                   auto a = std::make_shared<PruneArgs>();
                                   app.add_option("--cache-dir", a->dir, kDirHelp);
                                   app.add_option("--max-bytes", a->max_bytes,
                                                  "Size to keep (default 1 GiB; 0 empties it)");
                                   return [a] { return RunPrune(*a); };
                                 });

}  // namespace
}  // namespace stacksym::cli::cmd_cache
