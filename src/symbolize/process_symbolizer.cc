// ProcessSymbolizer: normalize, then one source per module (ELF through map_files, the vDSO
// from process memory, perf maps for JIT code). Parsed sources are kept across calls,
// keyed by what identifies their content, so a profiler calling once per batch does not
// re-parse libc every time.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include "normalize/process_files.h"
#include "normalize/vma_sources.h"
#include "stacksym/mapped_file.h"
#include "stacksym/process.h"
#include "symbolize/perf_map.h"

namespace stacksym {

namespace {

std::optional<FileIdentity> StatIdentity(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentityOf(st);
}

bool SameFile(const std::string& a, const std::string& b) {
  std::optional<FileIdentity> ia = StatIdentity(a), ib = StatIdentity(b);
  return ia && ib && ia->dev == ib->dev && ia->inode == ib->inode;
}

// Reason for a source that could not be opened: the process may have gone meanwhile.
Reason ReasonForOpenError(pid_t pid, const Error& error) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return Reason::kProcessGone;
  if (error.code == ErrorCode::kMalformed || error.code == ErrorCode::kUnsupported) {
    return Reason::kFileUnavailable;
  }
  return normalize::ReasonForError(error);
}

}  // namespace

struct ProcessSymbolizerCaches {
  struct CachedElf {
    FileIdentity identity;
    std::unique_ptr<ElfSymbolizer> symbolizer;
    uint64_t last_use = 0;
    size_t bytes = 0;  // memory_bytes() when last used (it grows only when used)
  };
  std::vector<CachedElf> elf;  // small (options.cached_files): linear search
  uint64_t clock = 0;

  std::vector<uint8_t> vdso_image;
  std::unique_ptr<ElfSymbolizer> vdso;

  std::string perf_map_path;
  FileIdentity perf_map_identity;
  std::optional<symbolize::PerfMap> perf_map;
};

namespace {

// State of one SymbolizeNormalized call: which sources it opened (or failed to), layered on
// the cross-call caches.
class CallState {
 public:
  CallState(pid_t pid, const ProcessSymbolizerOptions& options, ProcessSymbolizerCaches* caches,
            ProcessSymbolizerStats* stats)
      : pid_(pid), options_(options), caches_(caches), stats_(stats) {
    symbolize_options_ = options.symbolize;
    // A container's own debug files live under its root; add that root's debug dir.
    std::string root = normalize::ProcRootPath(pid, "/");
    if (!SameFile(root, "/")) {
      std::vector<std::string> dirs;
      for (const std::string& d : symbolize_options_.debug_dirs) {
        dirs.push_back(d);
        dirs.push_back(normalize::ProcRootPath(pid, d));
      }
      symbolize_options_.debug_dirs = std::move(dirs);
    }
  }

  // The ElfSymbolizer for a file-backed module, or the Error it cannot be had with.
  Result<ElfSymbolizer*> ForElf(const Module& m) {
    auto key = std::make_pair(m.dev, m.inode);
    auto it = elf_.find(key);
    if (it == elf_.end()) it = elf_.emplace(key, FindOrOpenElf(m)).first;
    return it->second;
  }

  Result<ElfSymbolizer*> ForVdso(const Module& m) {
    if (!vdso_) vdso_.emplace(LoadVdso(m));
    return *vdso_;
  }

  const symbolize::PerfMap* perf_map() {
    if (!options_.perf_maps) return nullptr;
    if (!perf_map_loaded_) {
      perf_map_loaded_ = true;
      perf_map_ = LoadPerfMap();
    }
    return perf_map_;
  }

 private:
  Result<ElfSymbolizer*> FindOrOpenElf(const Module& m) {
    // The mapped file (process_files.h), looked up first only by identity: a file parsed by an
    // earlier call is reused without opening it again.
    Result<normalize::MappedFileRef> found =
        normalize::FindMappedFile(pid_, normalize::MappingOf(m));
    if (!found) return std::move(found).error();
    for (ProcessSymbolizerCaches::CachedElf& c : caches_->elf) {
      if (c.identity == found->identity) {
        c.last_use = ++caches_->clock;
        ++stats_->file_cache_hits;
        return c.symbolizer.get();
      }
    }
    Result<std::shared_ptr<ElfFile>> elf = normalize::OpenMappedFile(pid_, m, &*found);
    if (!elf) return std::move(elf).error();
    // Opened through map_files, the file's own directory is unknown to the debuglink search:
    // tell it the path the process maps it by, under the process's root (which reaches into
    // its mount namespace even when the root directory itself is ours). That holds even when
    // the file was deleted and its debug file was not.
    SymbolizeOptions options = symbolize_options_;
    if (!m.path.empty() && m.path.front() == '/') {
      options.known_path = m.path;
      options.known_root = normalize::ProcRootPath(pid_, "");
    }
    auto symbolizer = ElfSymbolizer::FromElf(std::move(*elf), options);
    if (!symbolizer) return std::move(symbolizer).error();
    ++stats_->files_opened;
    ElfSymbolizer* raw = symbolizer->get();
    if (options_.cached_files == 0) {
      call_owned_.push_back(std::move(*symbolizer));
      return raw;
    }
    auto& cache = caches_->elf;
    if (cache.size() >= options_.cached_files) {
      auto oldest = std::min_element(cache.begin(), cache.end(), [](const auto& a, const auto& b) {
        return a.last_use < b.last_use;
      });
      // Still referenced by this call? Then keep it alive until the call ends.
      call_owned_.push_back(std::move(oldest->symbolizer));
      cache.erase(oldest);
    }
    cache.push_back({(*symbolizer)->elf().identity(), std::move(*symbolizer), ++caches_->clock});
    return raw;
  }

  Result<ElfSymbolizer*> LoadVdso(const Module& m) {
    Result<std::shared_ptr<ElfFile>> elf = ReadVdsoImage(pid_, m.map_start, m.map_end);
    if (!elf) return std::move(elf).error();
    ++stats_->vdso_reads;
    // Every process of a kernel (and ABI) shares one vDSO image: reuse its symbolizer.
    std::span<const uint8_t> image = (*elf)->bytes();
    if (caches_->vdso && std::equal(image.begin(), image.end(), caches_->vdso_image.begin(),
                                    caches_->vdso_image.end())) {
      ++stats_->vdso_reuses;
      return caches_->vdso.get();
    }
    std::vector<uint8_t> bytes(image.begin(), image.end());
    auto symbolizer = ElfSymbolizer::FromElf(std::move(*elf), symbolize_options_);
    if (!symbolizer) return std::move(symbolizer).error();
    if (caches_->vdso) call_owned_.push_back(std::move(caches_->vdso));
    caches_->vdso = std::move(*symbolizer);
    caches_->vdso_image = std::move(bytes);
    return caches_->vdso.get();
  }

  const symbolize::PerfMap* LoadPerfMap() {
    // Reuse the cached map when the same file is unchanged (JITs append, changing size).
    if (caches_->perf_map) {
      std::optional<FileIdentity> id = StatIdentity(caches_->perf_map_path);
      if (id && *id == caches_->perf_map_identity && IsPerfMapPathOf(caches_->perf_map_path)) {
        return &*caches_->perf_map;
      }
    }
    Result<symbolize::PerfMap> map = symbolize::LoadPerfMapForProcess(pid_);
    if (!map) return nullptr;
    ++stats_->perf_map_loads;
    std::optional<FileIdentity> id = StatIdentity(map->path());
    caches_->perf_map_path = map->path();
    caches_->perf_map_identity = id.value_or(FileIdentity{});
    caches_->perf_map = std::move(*map);
    return &*caches_->perf_map;
  }

  // The cached path was found for this pid (it embeds "/proc/PID/" or "perf-PID.map").
  bool IsPerfMapPathOf(const std::string& path) const {
    std::string proc = "/proc/" + std::to_string(pid_) + "/";
    std::string host = "/tmp/perf-" + std::to_string(pid_) + ".map";
    return path.compare(0, proc.size(), proc) == 0 || path == host;
  }

  pid_t pid_;
  const ProcessSymbolizerOptions& options_;
  ProcessSymbolizerCaches* caches_;
  ProcessSymbolizerStats* stats_;
  SymbolizeOptions symbolize_options_;
  std::map<std::pair<uint64_t, uint64_t>, Result<ElfSymbolizer*>> elf_;
  std::optional<Result<ElfSymbolizer*>> vdso_;
  bool perf_map_loaded_ = false;
  const symbolize::PerfMap* perf_map_ = nullptr;
  // Symbolizers evicted from the caches while this call may still use them.
  std::vector<std::unique_ptr<ElfSymbolizer>> call_owned_;
};

}  // namespace

ProcessSymbolizer::ProcessSymbolizer(ProcessSymbolizerOptions options)
    : options_(std::move(options)),
      normalizer_(options_.normalize),
      caches_(std::make_unique<ProcessSymbolizerCaches>()) {}

ProcessSymbolizer::~ProcessSymbolizer() = default;

void ProcessSymbolizer::ClearCaches() { caches_ = std::make_unique<ProcessSymbolizerCaches>(); }

Result<std::vector<SymbolizedAddress>> ProcessSymbolizer::Symbolize(
    pid_t pid, std::span<const uint64_t> addrs) {
  if (pid <= 0) return Error(ErrorCode::kInvalidArgument, "invalid pid " + std::to_string(pid));
  Result<NormalizedBatch> batch = normalizer_.Normalize(pid, addrs);
  if (!batch) return std::move(batch).error();
  return SymbolizeNormalized(*batch, addrs);
}

std::vector<SymbolizedAddress> ProcessSymbolizer::SymbolizeNormalized(
    const NormalizedBatch& batch, std::span<const uint64_t> addrs) {
  size_t n = std::min(addrs.size(), batch.addresses.size());
  std::vector<SymbolizedAddress> out(addrs.size());
  last_sources_.assign(addrs.size(), SymbolSource::kNone);
  std::vector<std::vector<uint32_t>> by_module(batch.modules.size());
  for (size_t i = 0; i < addrs.size(); ++i) {
    out[i].input = addrs[i];
    out[i].vaddr = addrs[i];
    if (i >= n) {
      out[i].reason = Reason::kUnmapped;
      continue;
    }
    const NormalizedAddress& a = batch.addresses[i];
    if (a.ok() && a.module < batch.modules.size()) {
      by_module[a.module].push_back(static_cast<uint32_t>(i));
    } else {
      out[i].reason = a.ok() ? Reason::kCorruptData : a.reason;
    }
  }

  const uint64_t call_start = caches_->clock;  // entries used from here on are re-measured
  CallState state(batch.pid, options_, caches_.get(), &stats_);
  // JIT code: the perf map answers, else `fallback`.
  auto from_perf_map = [&](uint32_t i, Reason fallback, const std::string& module) {
    SymbolizedAddress& r = out[i];
    if (const symbolize::PerfMap* map = state.perf_map()) {
      if (std::optional<symbolize::PerfMapSymbol> sym = map->Find(addrs[i])) {
        r = symbolize::PerfMapAnswer(*sym, addrs[i], map->path());
        last_sources_[i] = SymbolSource::kPerfMap;
        return;
      }
    }
    r.reason = fallback;
    r.module = module;
  };

  for (size_t m = 0; m < batch.modules.size(); ++m) {
    if (by_module[m].empty()) continue;
    const Module& module = batch.modules[m];
    std::string label = module.deleted ? module.path + " (deleted)" : module.path;
    switch (module.kind) {
      case ModuleKind::kElf:
      case ModuleKind::kVdso: {
        bool vdso = module.kind == ModuleKind::kVdso;
        Result<ElfSymbolizer*> sym = vdso ? state.ForVdso(module) : state.ForElf(module);
        if (!sym) {
          // Not an ELF file we can read (a memfd JIT region, say): the perf map may know.
          for (uint32_t i : by_module[m]) {
            from_perf_map(i, ReasonForOpenError(batch.pid, sym.error()), label);
          }
          break;
        }
        // One batch per module: its DWARF units are parsed, and names resolved, on all cores.
        std::vector<uint64_t> offsets;
        offsets.reserve(by_module[m].size());
        for (uint32_t i : by_module[m]) offsets.push_back(batch.addresses[i].file_offset);
        std::vector<SymbolizedAddress> answers =
            (*sym)->SymbolizeBatch(offsets, AddressKind::kFileOffset);
        for (size_t k = 0; k < answers.size(); ++k) {
          uint32_t i = by_module[m][k];
          out[i] = std::move(answers[k]);
          out[i].input = addrs[i];
          out[i].module = label;
          last_sources_[i] = vdso ? SymbolSource::kVdso : SymbolSource::kElf;
        }
        break;
      }
      case ModuleKind::kAnonymous:
      case ModuleKind::kKernel:  // (the normalizer never answers with the kernel)
      case ModuleKind::kUnknown:
        for (uint32_t i : by_module[m]) from_perf_map(i, Reason::kAnonymous, label);
        break;
    }
  }
  TrimCaches(call_start);
  return out;
}

void ProcessSymbolizer::TrimCaches(uint64_t call_start) {
  auto& cache = caches_->elf;
  size_t total = 0;
  for (auto& c : cache) {
    if (c.last_use > call_start) c.bytes = c.symbolizer->memory_bytes();
    total += c.bytes;
  }
  while (total > options_.cached_bytes && !cache.empty()) {
    auto oldest = std::min_element(cache.begin(), cache.end(), [](const auto& a, const auto& b) {
      return a.last_use < b.last_use;
    });
    total -= oldest->bytes;
    cache.erase(oldest);
    ++stats_.evicted_for_memory;
  }
  stats_.cached_bytes = total;
}

}  // namespace stacksym
