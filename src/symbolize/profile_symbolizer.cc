// SymbolizeProfile: the one pass that names a profile's frames. Frames are grouped once; user
// frames with a build ID go to the server first (when there is one), what it leaves unnamed goes
// to each module's local files, opened once per module; kernel frames go in one batch; JIT frames
// go to their process's perf map and jitdump, read once per process.
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "stacksym/build_id.h"
#include "stacksym/elf.h"
#include "stacksym/kernel.h"
#include "stacksym/mapped_file.h"
#include "stacksym/symbolize_profile.h"
#include "symbolize/perf_map.h"

namespace stacksym {
namespace {

bool Named(const std::optional<FrameSymbols>& symbols) {
  return symbols && !symbols->lines.empty();
}

// The frames a pass has to do, grouped: per user module (by index), and kernel.
struct FrameGroups {
  std::vector<std::vector<uint32_t>> by_module;
  std::vector<uint32_t> kernel;
  std::vector<uint32_t> all;  // every frame this pass looks at
};

// Frames that already have a name are kept unless `resymbolize`; the others lose what an
// earlier pass said of them (a reason), so that this pass's answer is the one left.
// Kernel frames are left alone when `kernel` is false.
FrameGroups GroupFrames(Profile& profile, bool resymbolize, bool kernel) {
  FrameGroups groups;
  groups.by_module.resize(profile.modules.size());
  for (uint32_t i = 0; i < profile.frames.size(); ++i) {
    const ProfileFrame& frame = profile.frames[i];
    // Python frames were named when recorded, from the process's memory: nothing to redo.
    if (frame.kind == FrameKind::kPython) continue;
    if (!resymbolize && Named(profile.symbols[i])) continue;
    if (frame.kind == FrameKind::kKernel && !kernel) continue;
    groups.all.push_back(i);
    profile.symbols[i].reset();
    switch (frame.kind) {
      case FrameKind::kKernel:
        groups.kernel.push_back(i);
        break;
      case FrameKind::kUser:
        if (frame.module < groups.by_module.size()) {
          groups.by_module[frame.module].push_back(i);
        } else {
          profile.symbols[i] = FrameSymbols{Reason::kCorruptData, {}};
        }
        break;
      case FrameKind::kUserRaw:
        profile.symbols[i] = FrameSymbols{Reason::kUnmapped, {}};
        break;
      case FrameKind::kPython:
        break;
    }
  }
  return groups;
}

// The server's pass: every module with a build ID, its distinct offsets in one query (modules
// that differ only by path share one). Frames it names are done; the others stay for local files
// (with the server's reason, kept if no local file is found either).
void AskServer(Profile& profile, FrameGroups& groups, const ProfileSymbolizeOptions& options,
               ProfileSymbolizeStats& stats) {
  std::map<std::vector<uint8_t>, std::map<uint64_t, std::vector<uint32_t>>> pairs;
  for (size_t m = 0; m < groups.by_module.size(); ++m) {
    const std::vector<uint8_t>& build_id = profile.modules[m].build_id;
    if (build_id.size() < 2 || groups.by_module[m].empty()) continue;
    auto& offsets = pairs[build_id];
    for (uint32_t frame : groups.by_module[m]) {
      offsets[profile.frames[frame].address].push_back(frame);
    }
  }
  if (pairs.empty()) return;
  std::vector<BuildIdQuery> queries;
  for (const auto& [build_id, offsets] : pairs) {
    BuildIdQuery& query = queries.emplace_back();
    query.build_id = build_id;
    for (const auto& entry : offsets) query.offsets.push_back(entry.first);
  }
  Result<void> asked = options.server->Symbolize(queries, options.symbolize);
  stats.server_requests = options.server->requests();
  if (!asked) {
    stats.server_error = asked.error().ToString();
    stats.messages.push_back(stats.server_error + " (frames looked up locally instead)");
    return;
  }
  for (BuildIdQuery& query : queries) {
    if (!query.message.empty()) {
      stats.messages.push_back(options.server->name() + ": build ID " + ToHex(query.build_id) +
                               ": " + query.message);
    }
    const auto& offsets = pairs[query.build_id];
    for (size_t k = 0; k < query.offsets.size() && k < query.answers.size(); ++k) {
      FrameSymbols& answer = query.answers[k];
      for (uint32_t frame : offsets.at(query.offsets[k])) {
        if (!answer.lines.empty()) ++stats.from_server;
        profile.symbols[frame] = answer;
      }
    }
  }
  // What the server named is done.
  for (std::vector<uint32_t>& frames : groups.by_module) {
    std::erase_if(frames, [&](uint32_t frame) { return Named(profile.symbols[frame]); });
  }
}

// A module's symbolizer from its local files, or why there is none.
struct ModuleSymbolizer {
  std::unique_ptr<ElfSymbolizer> symbolizer;  // null: none
  Reason missing = Reason::kNotFound;
  std::string message;  // why none, for an ELF module ("" for the vDSO, anonymous memory)
};

ModuleSymbolizer OpenModuleSymbolizer(const Profile& profile, const Module& module,
                                      const ProfileSymbolizeOptions& options) {
  ModuleSymbolizer out;
  std::shared_ptr<ElfFile> kept = profile.files.Find(module);
  Result<std::shared_ptr<ElfFile>> binary = Error(ErrorCode::kNotFound, "");
  if (module.kind == ModuleKind::kElf || kept) {
    binary = OpenModuleBinary(module.build_id, module.path, kept, options.symbolize);
  } else {
    out.missing = module.kind == ModuleKind::kVdso ? Reason::kVdso : Reason::kAnonymous;
  }
  Result<std::unique_ptr<ElfSymbolizer>> symbolizer = Error(ErrorCode::kNotFound, "");
  if (binary) {
    // A file opened through another path (map_files, a kept descriptor, a debug dir): its
    // .gnu_debuglink file is also looked for next to the path the process mapped it by.
    SymbolizeOptions symbolize = options.symbolize;
    if (symbolize.known_path.empty() && !module.path.empty() && module.path.front() == '/' &&
        module.path != (*binary)->path()) {
      symbolize.known_path = module.path;
    }
    symbolizer = ElfSymbolizer::FromElf(*binary, symbolize);
  }
  if (symbolizer) {
    out.symbolizer = std::move(*symbolizer);
  } else if (module.kind == ModuleKind::kElf) {
    out.message = (binary ? symbolizer.error() : binary.error()).message;
    if (binary) out.missing = Reason::kFileUnavailable;
  }
  return out;
}

// The frames of one user module, from its symbolizer (or the reason it has none).
void AnswerModule(Profile& profile, uint32_t m, const std::vector<uint32_t>& frames,
                  const ModuleSymbolizer& module, ProfileSymbolizeStats& stats) {
  if (!module.symbolizer) {
    ++stats.modules_missing;
    if (!module.message.empty()) {
      stats.messages.push_back(profile.modules[m].path + ": " + module.message);
    }
    for (uint32_t frame : frames) {
      // A reason the server gave stays (it had a look too).
      if (!profile.symbols[frame]) profile.symbols[frame] = FrameSymbols{module.missing, {}};
    }
    return;
  }
  ++stats.modules_found;
  std::vector<uint64_t> offsets;
  offsets.reserve(frames.size());
  for (uint32_t frame : frames) offsets.push_back(profile.frames[frame].address);
  std::vector<SymbolizedAddress> answers =
      module.symbolizer->SymbolizeBatch(offsets, AddressKind::kFileOffset);
  for (size_t k = 0; k < frames.size() && k < answers.size(); ++k) {
    profile.symbols[frames[k]] = ToFrameSymbols(std::move(answers[k]));
  }
}

// The JIT symbols of recorded process `pid`: the files the recorder read, else the first of
// options.perf_map_dirs with a perf map or jitdump of that pid.
Result<symbolize::PerfMap> LoadJitSymbols(const Profile& profile, uint32_t pid,
                                          const ProfileSymbolizeOptions& options,
                                          std::string* jitdump_error) {
  if (auto it = profile.jit_files.find(pid); it != profile.jit_files.end() && it->second) {
    Result<symbolize::PerfMap> map = symbolize::PerfMap::FromJitFiles(*it->second, jitdump_error);
    if (map || map.error().code != ErrorCode::kNotFound) return map;
  }
  for (const std::string& dir : options.perf_map_dirs) {
    JitFiles files;
    std::string base = dir + (dir.ends_with('/') ? "" : "/");
    if (Result<MappedFile> map = MappedFile::Open(base + "perf-" + std::to_string(pid) + ".map")) {
      files.perf_map_path = map->path();
      files.perf_map.assign(reinterpret_cast<const char*>(map->bytes().data()), map->size());
    }
    if (Result<MappedFile> dump = MappedFile::Open(base + "jit-" + std::to_string(pid) + ".dump")) {
      files.jitdump_path = dump->path();
      files.jitdump.assign(reinterpret_cast<const char*>(dump->bytes().data()), dump->size());
    }
    Result<symbolize::PerfMap> map = symbolize::PerfMap::FromJitFiles(files, jitdump_error);
    if (map || map.error().code != ErrorCode::kNotFound) return map;
  }
  return Error(ErrorCode::kNotFound,
               "no perf map or jitdump of pid " + std::to_string(pid) +
                   (options.perf_map_dirs.empty() ? " was read when recording"
                                                  : " was read when recording or is in the given "
                                                    "directories"));
}

// The frames of every JIT module (their groups emptied): each process's symbols loaded once.
void SymbolizeJit(Profile& profile, FrameGroups& groups, const ProfileSymbolizeOptions& options,
                  ProfileSymbolizeStats& stats) {
  std::map<uint32_t, std::vector<uint32_t>> by_pid;  // frames
  for (uint32_t m = 0; m < groups.by_module.size(); ++m) {
    if (groups.by_module[m].empty() || !profile.modules[m].IsJitCode()) continue;
    std::vector<uint32_t>& frames = by_pid[profile.modules[m].pid];
    frames.insert(frames.end(), groups.by_module[m].begin(), groups.by_module[m].end());
    groups.by_module[m].clear();
  }
  for (const auto& [pid, frames] : by_pid) {
    stats.jit_frames += frames.size();
    std::string jitdump_error;
    Result<symbolize::PerfMap> map = LoadJitSymbols(profile, pid, options, &jitdump_error);
    if (!jitdump_error.empty()) stats.messages.push_back(jitdump_error);
    if (!map) stats.messages.push_back("JIT code: " + map.error().ToString());
    for (uint32_t frame : frames) {
      uint64_t address = profile.frames[frame].address;
      std::optional<symbolize::PerfMapSymbol> symbol;
      if (map) symbol = map->Find(address);
      if (!symbol) {
        // A reason the server gave stays (it had a look too).
        if (!profile.symbols[frame]) profile.symbols[frame] = FrameSymbols{Reason::kAnonymous, {}};
        continue;
      }
      profile.symbols[frame] =
          ToFrameSymbols(symbolize::PerfMapAnswer(*symbol, address, map->path()));
      ++stats.jit_named;
    }
  }
}

Result<std::unique_ptr<KernelSymbolizer>> OpenKernel(const ProfileSymbolizeOptions& options) {
  KernelSymbolizerOptions kernel_options;
  kernel_options.kallsyms_path = options.kallsyms_path;
  kernel_options.vmlinux_path = options.vmlinux_path;
  kernel_options.symbolize = options.symbolize;
  return KernelSymbolizer::Open(kernel_options);
}

// Kernel frames in one batch (kallsyms, and vmlinux's DWARF when given).
void AnswerKernel(Profile& profile, const std::vector<uint32_t>& frames,
                  const Result<KernelSymbolizer*>& kernel, ProfileSymbolizeStats& stats) {
  stats.kernel_frames = frames.size();
  if (frames.empty()) return;
  if (!kernel) {
    stats.messages.push_back("kernel: " + kernel.error().ToString());
    for (uint32_t frame : frames) {
      if (!profile.symbols[frame])
        profile.symbols[frame] = FrameSymbols{Reason::kFileUnavailable, {}};
    }
    return;
  }
  std::vector<uint64_t> addresses;
  addresses.reserve(frames.size());
  for (uint32_t frame : frames) addresses.push_back(profile.frames[frame].address);
  std::vector<SymbolizedAddress> answers = (*kernel)->SymbolizeBatch(addresses);
  for (size_t k = 0; k < frames.size() && k < answers.size(); ++k) {
    profile.symbols[frames[k]] = ToFrameSymbols(std::move(answers[k]));
  }
}

void CountAnswers(const Profile& profile, const FrameGroups& groups, ProfileSymbolizeStats& stats) {
  for (uint32_t frame : groups.all) {
    if (Named(profile.symbols[frame])) {
      ++stats.symbolized;
    } else if (profile.symbols[frame]) {
      ++stats.failed;
    }
  }
}

}  // namespace

ProfileSymbolizeStats SymbolizeProfile(Profile& profile, const ProfileSymbolizeOptions& options) {
  ProfileSymbolizeStats stats;
  profile.symbols.resize(profile.frames.size());
  FrameGroups groups = GroupFrames(profile, options.resymbolize,
                                   !options.kallsyms_path.empty() || !options.vmlinux_path.empty());
  stats.frames = groups.all.size();
  if (options.server) AskServer(profile, groups, options, stats);
  SymbolizeJit(profile, groups, options, stats);
  for (uint32_t m = 0; m < groups.by_module.size(); ++m) {
    if (groups.by_module[m].empty()) continue;
    AnswerModule(profile, m, groups.by_module[m],
                 OpenModuleSymbolizer(profile, profile.modules[m], options), stats);
  }
  if (!groups.kernel.empty()) {
    Result<std::unique_ptr<KernelSymbolizer>> kernel = OpenKernel(options);
    AnswerKernel(profile, groups.kernel,
                 kernel ? Result<KernelSymbolizer*>(kernel->get()) : kernel.error(), stats);
  }
  CountAnswers(profile, groups, stats);
  return stats;
}

// The caches of a ProfileSymbolizer: symbolizers by build ID (a module without one is opened
// each time: its path alone does not say the file is the same), the kernel's, and the answers.
struct ProfileSymbolizer::Session {
  struct Cached {
    ModuleSymbolizer module;
    uint64_t bytes = 0;
    uint64_t last_use = 0;
    std::chrono::steady_clock::time_point opened;
  };
  // A module without a file is looked for again after this long (debuginfod may have it later).
  static constexpr std::chrono::seconds kRetryMissing{60};
  // kallsyms changes as modules and BPF programs come and go.
  static constexpr std::chrono::seconds kKernelRefresh{300};

  ProfileSymbolizeOptions options;
  uint64_t max_bytes = 0;
  size_t max_frames = 0;
  std::unordered_map<std::string, Cached> modules;
  uint64_t bytes = 0;
  uint64_t peak_bytes = 0;  // the most `modules` held at once during the last Symbolize
  uint64_t clock = 0;
  std::unique_ptr<KernelSymbolizer> kernel;
  std::optional<Error> kernel_error;
  std::chrono::steady_clock::time_point kernel_opened;
  std::unordered_map<std::string, FrameSymbols> remembered, older;

  static std::string FrameKey(const Profile& profile, const ProfileFrame& frame) {
    std::string key(1, frame.kind == FrameKind::kKernel ? 'k' : 'u');
    if (frame.kind == FrameKind::kUser) {
      const std::vector<uint8_t>& id = profile.modules[frame.module].build_id;
      key.append(reinterpret_cast<const char*>(id.data()), id.size());
    }
    key.append(reinterpret_cast<const char*>(&frame.address), sizeof(frame.address));
    return key;
  }
  // Frames whose answer is remembered: only user frames of modules with a build ID, and kernel's.
  static bool Rememberable(const Profile& profile, const ProfileFrame& frame) {
    if (frame.kind == FrameKind::kKernel) return true;
    return frame.kind == FrameKind::kUser && frame.module < profile.modules.size() &&
           profile.modules[frame.module].build_id.size() >= 2;
  }
  const FrameSymbols* Recall(const std::string& key) {
    if (auto it = remembered.find(key); it != remembered.end()) return &it->second;
    auto it = older.find(key);
    if (it == older.end()) return nullptr;
    const FrameSymbols* kept = &(remembered[key] = std::move(it->second));
    older.erase(it);
    return kept;
  }
  void Remember(std::string key, const FrameSymbols& symbols) {
    if (remembered.size() >= max_frames) {
      older = std::move(remembered);
      remembered.clear();
    }
    remembered.emplace(std::move(key), symbols);
  }

  Cached& Module(const Profile& profile, const stacksym::Module& module) {
    auto now = std::chrono::steady_clock::now();
    std::string key(module.build_id.begin(), module.build_id.end());
    auto [it, inserted] = modules.try_emplace(key);
    Cached& c = it->second;
    if (inserted || (!c.module.symbolizer && now - c.opened >= kRetryMissing)) {
      bytes -= c.bytes;
      c = Cached{OpenModuleSymbolizer(profile, module, options), 0, 0, now};
    }
    c.last_use = ++clock;
    return c;
  }
  void Measure(Cached& c) {
    uint64_t now = c.module.symbolizer ? c.module.symbolizer->memory_bytes() : 0;
    bytes = bytes - c.bytes + now;
    c.bytes = now;
    peak_bytes = std::max(peak_bytes, bytes);
  }
  void Trim() {
    while (bytes > max_bytes && modules.size() > 1) {
      auto oldest = modules.begin();
      for (auto it = modules.begin(); it != modules.end(); ++it) {
        if (it->second.last_use < oldest->second.last_use) oldest = it;
      }
      bytes -= oldest->second.bytes;
      modules.erase(oldest);
    }
  }
  Result<KernelSymbolizer*> Kernel() {
    auto now = std::chrono::steady_clock::now();
    if ((!kernel && !kernel_error) || now - kernel_opened >= kKernelRefresh) {
      // Answers from the old symbols are forgotten with it.
      std::erase_if(remembered, [](const auto& e) { return e.first[0] == 'k'; });
      std::erase_if(older, [](const auto& e) { return e.first[0] == 'k'; });
      kernel.reset();
      kernel_error.reset();
      Result<std::unique_ptr<KernelSymbolizer>> opened = OpenKernel(options);
      if (opened) {
        kernel = std::move(*opened);
      } else {
        kernel_error = opened.error();
      }
      kernel_opened = now;
    }
    if (kernel) return kernel.get();
    return *kernel_error;
  }
};

ProfileSymbolizer::ProfileSymbolizer(ProfileSymbolizeOptions options, uint64_t max_cached_bytes,
                                     size_t max_remembered_frames)
    : session_(std::make_unique<Session>()) {
  session_->options = std::move(options);
  session_->max_bytes = max_cached_bytes;
  session_->max_frames = std::max<size_t>(1, max_remembered_frames);
}

ProfileSymbolizer::~ProfileSymbolizer() = default;

size_t ProfileSymbolizer::cached_symbolizers() const { return session_->modules.size(); }
uint64_t ProfileSymbolizer::cached_bytes() const { return session_->bytes; }

uint64_t ProfileSymbolizer::peak_cached_bytes() const { return session_->peak_bytes; }
size_t ProfileSymbolizer::remembered_frames() const {
  return session_->remembered.size() + session_->older.size();
}

ProfileSymbolizeStats ProfileSymbolizer::Symbolize(Profile& profile) {
  Session& s = *session_;
  const ProfileSymbolizeOptions& options = s.options;
  ProfileSymbolizeStats stats;
  s.peak_bytes = s.bytes;
  profile.symbols.resize(profile.frames.size());
  FrameGroups groups = GroupFrames(profile, options.resymbolize,
                                   !options.kallsyms_path.empty() || !options.vmlinux_path.empty());
  stats.frames = groups.all.size();
  // Answers remembered from earlier profiles first.
  auto recalled = [&](uint32_t frame) {
    const ProfileFrame& f = profile.frames[frame];
    if (!Session::Rememberable(profile, f)) return false;
    const FrameSymbols* known = s.Recall(Session::FrameKey(profile, f));
    if (known) profile.symbols[frame] = *known;
    return known != nullptr;
  };
  for (std::vector<uint32_t>& frames : groups.by_module) std::erase_if(frames, recalled);
  std::erase_if(groups.kernel, recalled);
  if (options.server) AskServer(profile, groups, options, stats);
  SymbolizeJit(profile, groups, options, stats);
  for (uint32_t m = 0; m < groups.by_module.size(); ++m) {
    if (groups.by_module[m].empty()) continue;
    const stacksym::Module& module = profile.modules[m];
    if (module.build_id.size() < 2) {
      AnswerModule(profile, m, groups.by_module[m], OpenModuleSymbolizer(profile, module, options),
                   stats);
      continue;
    }
    Session::Cached& cached = s.Module(profile, module);
    AnswerModule(profile, m, groups.by_module[m], cached.module, stats);
    s.Measure(cached);
    // Bounded module by module, not once a profile is done: a window of a build host meets
    // dozens of new binaries, each read whole, and held them all until its end (662 MB). The
    // pages a kept one read leave the resident set at once too; the page cache keeps them.
    if (cached.module.symbolizer) cached.module.symbolizer->ReleasePages();
    s.Trim();
  }
  if (!groups.kernel.empty()) AnswerKernel(profile, groups.kernel, s.Kernel(), stats);
  for (uint32_t frame : groups.all) {
    const ProfileFrame& f = profile.frames[frame];
    if (Named(profile.symbols[frame]) && Session::Rememberable(profile, f)) {
      s.Remember(Session::FrameKey(profile, f), *profile.symbols[frame]);
    }
  }
  CountAnswers(profile, groups, stats);
  return stats;
}

}  // namespace stacksym
