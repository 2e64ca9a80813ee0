// `symbolize-profile`: symbols for a normalized-only profile, later and elsewhere, from files
// found by build ID.
#include <sys/stat.h>

#include <algorithm>

#include "output/kernel_frames.h"
#include "stacksym/elf.h"
#include "stacksym/kernel.h"
#include "stacksym/output.h"
#include "stacksym/symbolize.h"

namespace stacksym {
namespace {

std::string Hex(std::span<const uint8_t> bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The module's file: its recorded path when the build ID there matches, else
// <dir>/.build-id/xx/rest, then rest.debug, in each debug dir. The build ID is always checked,
// so a rebuilt binary at the same path is never used.
std::shared_ptr<ElfFile> FindModuleFile(const ProfileModule& module,
                                        const OfflineSymbolizeOptions& options,
                                        std::string* why_not) {
  std::vector<std::string> candidates;
  if (!module.path.empty() && module.path[0] == '/') candidates.push_back(module.path);
  std::string id = Hex(module.build_id);
  if (id.size() > 2) {
    for (const std::string& dir : options.debug_dirs) {
      std::string base = dir + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2);
      candidates.push_back(base);
      candidates.push_back(base + ".debug");
    }
  }
  std::string tried;
  for (const std::string& path : candidates) {
    if (!IsRegularFile(path)) continue;
    Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
    if (!elf) {
      tried += " " + path + " (" + elf.error().message + ")";
      continue;
    }
    std::span<const uint8_t> found = (*elf)->build_id();
    if (module.build_id.empty() ||
        std::equal(found.begin(), found.end(), module.build_id.begin(), module.build_id.end())) {
      return *elf;
    }
    tried += " " + path + " (build ID " + Hex(found) + ")";
  }
  if (options.fetcher && module.build_id.size() >= 2) {
    Result<std::string> fetched =
        options.fetcher->Fetch(module.build_id, BuildIdFetcher::Kind::kExecutable);
    Result<std::shared_ptr<ElfFile>> elf =
        fetched ? ElfFile::Open(*fetched) : Result<std::shared_ptr<ElfFile>>(fetched.error());
    if (elf) {
      std::span<const uint8_t> found = (*elf)->build_id();
      if (std::equal(found.begin(), found.end(), module.build_id.begin(), module.build_id.end())) {
        return *elf;
      }
      tried += " " + *fetched + " (build ID " + Hex(found) + ")";
    } else {
      tried += " fetch (" + elf.error().ToString() + ")";
    }
  }
  *why_not = module.path + " [build ID " + (id.empty() ? "none" : id) + "]: no matching file" +
             (tried.empty() ? "" : "; rejected:" + tried);
  return nullptr;
}

void FillFrom(SymbolizedAddress& r, FrameSymbols* symbols) {
  if (!r.frames.empty()) {
    symbols->lines = std::move(r.frames);
  } else if (!r.symbol.empty() || !r.raw_symbol.empty()) {
    SourceFrame line;
    line.function = r.symbol;
    line.raw_function = r.raw_symbol;
    symbols->lines.push_back(std::move(line));
  } else {
    symbols->reason = r.reason.value_or(Reason::kNoSymbol);
  }
}

}  // namespace

KernelFramesResult SymbolizeKernelFrames(Profile& profile, const std::string& kallsyms_path,
                                         bool resymbolize) {
  KernelFramesResult result;
  std::vector<uint32_t> frames;
  for (uint32_t i = 0; i < profile.frames.size(); ++i) {
    if (profile.frames[i].kind != FrameKind::kKernel) continue;
    if (profile.symbols[i] && !profile.symbols[i]->lines.empty() && !resymbolize) continue;
    frames.push_back(i);
  }
  if (frames.empty()) return result;
  result.frames = frames.size();
  KernelSymbolizerOptions kernel_options;
  kernel_options.kallsyms_path = kallsyms_path;
  Result<std::unique_ptr<KernelSymbolizer>> kernel = KernelSymbolizer::Open(kernel_options);
  if (!kernel) {
    result.messages.push_back("kernel: " + kernel.error().ToString());
    return result;
  }
  for (uint32_t i : frames) {
    SymbolizedAddress r = (*kernel)->Symbolize(profile.frames[i].address);
    FrameSymbols symbols;
    FillFrom(r, &symbols);
    if (!symbols.lines.empty()) ++result.symbolized;
    profile.symbols[i] = std::move(symbols);
  }
  return result;
}

OfflineSymbolizeStats SymbolizeProfileOffline(Profile& profile,
                                              const OfflineSymbolizeOptions& options) {
  OfflineSymbolizeStats stats;
  profile.symbols.resize(profile.frames.size());
  // Frames to do, grouped by module.
  std::vector<std::vector<uint32_t>> by_module(profile.modules.size());
  for (uint32_t i = 0; i < profile.frames.size(); ++i) {
    const ProfileFrame& frame = profile.frames[i];
    if (frame.kind != FrameKind::kUser || frame.module >= profile.modules.size()) continue;
    if (profile.symbols[i] && !profile.symbols[i]->lines.empty() && !options.resymbolize) {
      continue;
    }
    by_module[frame.module].push_back(i);
  }

  SymbolizeOptions symbolize_options;
  symbolize_options.demangle = options.demangle;
  symbolize_options.inlines = options.inlines;
  symbolize_options.debug_dirs = options.debug_dirs;
  symbolize_options.cache_dir = options.cache_dir;
  symbolize_options.fetcher = options.fetcher;

  for (size_t m = 0; m < profile.modules.size(); ++m) {
    const std::vector<uint32_t>& frames = by_module[m];
    if (frames.empty()) continue;
    stats.frames += frames.size();
    std::string why_not;
    std::shared_ptr<ElfFile> elf = FindModuleFile(profile.modules[m], options, &why_not);
    Result<std::unique_ptr<ElfSymbolizer>> symbolizer =
        elf ? ElfSymbolizer::FromElf(elf, symbolize_options)
            : Result<std::unique_ptr<ElfSymbolizer>>(MakeError(ErrorCode::kNotFound, why_not));
    if (!symbolizer) {
      ++stats.modules_missing;
      stats.messages.push_back(elf ? profile.modules[m].path + ": " + symbolizer.error().ToString()
                                   : why_not);
      for (uint32_t i : frames) {
        if (!profile.symbols[i]) profile.symbols[i] = FrameSymbols{Reason::kNotFound, {}};
      }
      continue;
    }
    ++stats.modules_found;
    std::vector<uint64_t> offsets;
    offsets.reserve(frames.size());
    for (uint32_t i : frames) offsets.push_back(profile.frames[i].address);
    std::vector<SymbolizedAddress> results =
        (*symbolizer)->SymbolizeBatch(offsets, AddressKind::kFileOffset);
    for (size_t k = 0; k < frames.size() && k < results.size(); ++k) {
      SymbolizedAddress& r = results[k];
      FrameSymbols symbols;
      FillFrom(r, &symbols);
      if (!symbols.lines.empty()) ++stats.symbolized;
      profile.symbols[frames[k]] = std::move(symbols);
    }
  }
  if (!options.kallsyms_path.empty()) {
    KernelFramesResult kernel =
        SymbolizeKernelFrames(profile, options.kallsyms_path, options.resymbolize);
    stats.kernel_frames += kernel.frames;
    stats.symbolized += kernel.symbolized;
    for (std::string& m : kernel.messages) stats.messages.push_back(std::move(m));
  }
  return stats;
}

}  // namespace stacksym
