// The symbolize-once pass: frames are grouped by module, each module is opened once and its
// distinct addresses go through one SymbolizeBatch call.
#include "stacksym/symbolize_profile.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "stacksym/build_id.h"
#include "stacksym/kernel.h"

namespace stacksym {
namespace {

bool BuildIdMatches(const ElfFile& elf, const std::vector<uint8_t>& want) {
  if (want.empty()) return true;
  auto id = elf.build_id();
  return std::equal(id.begin(), id.end(), want.begin(), want.end());
}

// Opens the module's file: the one handed in, else its path when the build ID matches, else the
// binary found by build ID in the debug dirs. Reason when none is usable.
std::shared_ptr<ElfFile> OpenModule(const ProfileModule& m, size_t index,
                                    const SymbolizeProfileOptions& options, Reason* reason) {
  if (index < options.module_files.size() && options.module_files[index]) {
    return options.module_files[index];
  }
  *reason = Reason::kFileUnavailable;
  if (m.kind != ProfileModuleKind::kElf) {
    *reason = m.kind == ProfileModuleKind::kVdso ? Reason::kVdso : Reason::kAnonymous;
    return nullptr;
  }
  if (!m.path.empty()) {
    Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(m.path);
    if (elf && BuildIdMatches(**elf, m.build_id)) return *elf;
  }
  if (m.build_id.size() >= 2) {
    // The binary itself by build ID (a debug-only file cannot place file offsets).
    Result<std::string> path = FindBinaryByBuildId(m.build_id, options.symbolize.debug_dirs);
    if (path) {
      Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(*path);
      if (elf) return *elf;
    }
    *reason = Reason::kNotFound;
  }
  return nullptr;
}

}  // namespace

SymbolizeProfileStats SymbolizeProfile(Profile& profile, const SymbolizeProfileOptions& options) {
  SymbolizeProfileStats stats;
  profile.symbols.resize(profile.frames.size());
  // Frames that need work, grouped: per user module, and kernel.
  std::vector<std::vector<uint32_t>> by_module(profile.modules.size());
  std::vector<uint32_t> kernel_frames;
  for (uint32_t i = 0; i < profile.frames.size(); ++i) {
    if (options.only_missing && profile.symbols[i]) continue;
    const ProfileFrame& f = profile.frames[i];
    ++stats.frames;
    switch (f.kind) {
      case FrameKind::kKernel:
        kernel_frames.push_back(i);
        break;
      case FrameKind::kUser:
        if (f.module < by_module.size()) {
          by_module[f.module].push_back(i);
        } else {
          profile.symbols[i] = FrameSymbols{Reason::kCorruptData, {}};
        }
        break;
      case FrameKind::kUserRaw:
        profile.symbols[i] = FrameSymbols{Reason::kUnmapped, {}};
        break;
    }
  }

  std::vector<uint64_t> addrs;
  for (size_t m = 0; m < by_module.size(); ++m) {
    const std::vector<uint32_t>& frames = by_module[m];
    if (frames.empty()) continue;
    Reason reason = Reason::kFileUnavailable;
    std::shared_ptr<ElfFile> elf = OpenModule(profile.modules[m], m, options, &reason);
    std::unique_ptr<ElfSymbolizer> sym;
    if (elf) {
      // A file handed in was opened through another path (map_files, a kept fd): its
      // debuglink file is also looked for next to the path the process mapped it by.
      SymbolizeOptions symbolize = options.symbolize;
      const std::string& mapped = profile.modules[m].path;
      if (symbolize.known_path.empty() && !mapped.empty() && mapped.front() == '/' &&
          mapped != elf->path()) {
        symbolize.known_path = mapped;
      }
      Result<std::unique_ptr<ElfSymbolizer>> s = ElfSymbolizer::FromElf(elf, symbolize);
      if (s) sym = std::move(*s);
    }
    if (!sym) {
      ++stats.modules_missing;
      for (uint32_t i : frames) profile.symbols[i] = FrameSymbols{reason, {}};
      continue;
    }
    ++stats.modules_opened;
    addrs.clear();
    for (uint32_t i : frames) addrs.push_back(profile.frames[i].address);
    std::vector<SymbolizedAddress> out = sym->SymbolizeBatch(addrs, AddressKind::kFileOffset);
    for (size_t k = 0; k < frames.size() && k < out.size(); ++k) {
      profile.symbols[frames[k]] = ToFrameSymbols(std::move(out[k]));
    }
  }

  if (!kernel_frames.empty()) {
    std::unique_ptr<KernelSymbolizer> ksym;
    if (options.kernel) {
      KernelSymbolizerOptions kopts;
      kopts.kallsyms_path = options.kallsyms_path;
      kopts.vmlinux_path = options.vmlinux_path;
      kopts.symbolize = options.symbolize;
      Result<std::unique_ptr<KernelSymbolizer>> k = KernelSymbolizer::Open(kopts);
      if (k) ksym = std::move(*k);
    }
    if (ksym) {
      addrs.clear();
      for (uint32_t i : kernel_frames) addrs.push_back(profile.frames[i].address);
      std::vector<SymbolizedAddress> out = ksym->SymbolizeBatch(addrs);
      for (size_t k = 0; k < kernel_frames.size() && k < out.size(); ++k) {
        profile.symbols[kernel_frames[k]] = ToFrameSymbols(std::move(out[k]));
      }
    } else {
      for (uint32_t i : kernel_frames) {
        profile.symbols[i] = FrameSymbols{Reason::kFileUnavailable, {}};
      }
    }
  }

  for (const auto& s : profile.symbols) {
    if (!s) continue;
    if (s->reason) {
      ++stats.failed;
    } else {
      ++stats.symbolized;
    }
  }
  return stats;
}

}  // namespace stacksym
