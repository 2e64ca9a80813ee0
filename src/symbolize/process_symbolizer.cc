// ProcessSymbolizer: normalize, then one source per module (ELF through map_files, the vDSO
// from process memory, perf maps for JIT code).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <utility>

#include "stacksym/process.h"
#include "symbolize/perf_map.h"

namespace stacksym {

namespace {

// A vDSO is one or two pages; anything much larger is not a vDSO image.
constexpr uint64_t kMaxVdsoBytes = uint64_t{16} << 20;

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// State of one SymbolizeNormalized call: the sources opened for it, opened once.
class CallState {
 public:
  CallState(pid_t pid, const ProcessSymbolizerOptions& options) : pid_(pid), options_(options) {
    symbolize_options_ = options.symbolize;
    // A container's own debug files live under its root; add that root's debug dir.
    std::string root = ProcRootPath(pid, "/");
    if (!SameFile(root, "/")) {
      std::vector<std::string> dirs;
      for (const std::string& d : symbolize_options_.debug_dirs) {
        dirs.push_back(d);
        dirs.push_back(ProcRootPath(pid, d));
      }
      symbolize_options_.debug_dirs = std::move(dirs);
    }
  }

  // The ElfSymbolizer for a file-backed module, or the Reason it cannot be had.
  Result<ElfSymbolizer*> ForElf(const NormalizedModule& m) {
    auto key = std::make_pair(m.dev, m.inode);
    auto it = elf_.find(key);
    if (it == elf_.end()) it = elf_.emplace(key, OpenElf(m)).first;
    if (!it->second) return it->second.error();
    return it->second->get();
  }

  Result<ElfSymbolizer*> ForVdso(const NormalizedModule& m) {
    if (!vdso_) {
      Result<std::shared_ptr<ElfFile>> image = ReadVdsoImage(pid_, m.map_start, m.map_end);
      if (image) {
        vdso_.emplace(ElfSymbolizer::FromElf(std::move(*image), symbolize_options_));
      } else {
        vdso_.emplace(std::move(image).error());
      }
    }
    if (!*vdso_) return vdso_->error();
    return vdso_->value().get();
  }

  const PerfMap* perf_map() {
    if (!options_.perf_maps) return nullptr;
    if (!perf_map_) perf_map_.emplace(LoadPerfMapForProcess(pid_));
    return *perf_map_ ? &perf_map_->value() : nullptr;
  }

 private:
  Result<std::unique_ptr<ElfSymbolizer>> OpenElf(const NormalizedModule& m) {
    // map_files names the mapped file itself: right in any mount namespace, and still there
    // after the file was deleted or replaced on disk.
    Result<std::shared_ptr<ElfFile>> elf =
        ElfFile::Open(MapFilesPath(pid_, m.map_start, m.map_end));
    if (!elf && !m.deleted && !m.path.empty()) {
      // Without CAP_SYS_ADMIN map_files is closed; the path in the process's root is next
      // best, if it still names the mapped inode.
      Result<std::shared_ptr<ElfFile>> by_path = ElfFile::Open(ProcRootPath(pid_, m.path));
      if (by_path && (m.inode == 0 || (*by_path)->identity().inode == m.inode)) {
        elf = std::move(by_path);
      }
    }
    if (!elf) return std::move(elf).error();
    return ElfSymbolizer::FromElf(std::move(*elf), symbolize_options_);
  }

  pid_t pid_;
  const ProcessSymbolizerOptions& options_;
  SymbolizeOptions symbolize_options_;
  std::map<std::pair<uint64_t, uint64_t>, Result<std::unique_ptr<ElfSymbolizer>>> elf_;
  std::optional<Result<std::unique_ptr<ElfSymbolizer>>> vdso_;
  std::optional<Result<PerfMap>> perf_map_;
};

// Reason for a source that could not be opened: the process may have gone meanwhile.
Reason ReasonForOpenError(pid_t pid, const Error& error) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return Reason::kProcessGone;
  if (error.code == ErrorCode::kMalformed || error.code == ErrorCode::kUnsupported) {
    return Reason::kFileUnavailable;
  }
  return ReasonForError(error);
}

}  // namespace

Result<std::shared_ptr<ElfFile>> ReadVdsoImage(pid_t pid, uint64_t vma_start, uint64_t vma_end) {
  if (vma_end <= vma_start || vma_end - vma_start > kMaxVdsoBytes) {
    return Error(ErrorCode::kInvalidArgument, "implausible vDSO range");
  }
  std::string path = "/proc/" + std::to_string(pid) + "/mem";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "cannot open").WithFile(path);
  std::vector<uint8_t> bytes(vma_end - vma_start);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n =
        ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(vma_start + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : ESRCH;  // a read of 0 bytes: the address space is gone
      ::close(fd);
      return ErrnoError(err == EIO ? ESRCH : err, "cannot read the vDSO").WithFile(path);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return ElfFile::FromBytes(bytes, "[vdso]");
}

ProcessSymbolizer::ProcessSymbolizer(ProcessSymbolizerOptions options)
    : options_(std::move(options)), normalizer_(options_.normalize) {}

ProcessSymbolizer::~ProcessSymbolizer() = default;

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

  CallState state(batch.pid, options_);
  // JIT code: the perf map answers, else `fallback`.
  auto from_perf_map = [&](uint32_t i, Reason fallback, const std::string& module) {
    SymbolizedAddress& r = out[i];
    if (const PerfMap* map = state.perf_map()) {
      if (std::optional<PerfMapSymbol> sym = map->Find(addrs[i])) {
        r.symbol = r.raw_symbol = std::string(sym->name);
        r.symbol_address = sym->start;
        r.symbol_size = sym->size;
        r.offset = addrs[i] - sym->start;
        r.module = map->path();
        last_sources_[i] = SymbolSource::kPerfMap;
        return;
      }
    }
    r.reason = fallback;
    r.module = module;
  };

  for (size_t m = 0; m < batch.modules.size(); ++m) {
    if (by_module[m].empty()) continue;
    const NormalizedModule& module = batch.modules[m];
    std::string label = module.deleted ? module.path + " (deleted)" : module.path;
    switch (module.kind) {
      case ModuleKind::kElf:
      case ModuleKind::kVdso: {
        bool vdso = module.kind == ModuleKind::kVdso;
        Result<ElfSymbolizer*> sym = vdso ? state.ForVdso(module) : state.ForElf(module);
        for (uint32_t i : by_module[m]) {
          if (!sym) {
            // Not an ELF file we can read (a memfd JIT region, say): the perf map may know.
            from_perf_map(i, ReasonForOpenError(batch.pid, sym.error()), label);
            continue;
          }
          out[i] = (*sym)->Symbolize(batch.addresses[i].file_offset, AddressKind::kFileOffset);
          out[i].input = addrs[i];
          out[i].module = label;
          last_sources_[i] = vdso ? SymbolSource::kVdso : SymbolSource::kElf;
        }
        break;
      }
      case ModuleKind::kAnonymous:
      case ModuleKind::kUnknown:
        for (uint32_t i : by_module[m]) from_perf_map(i, Reason::kAnonymous, label);
        break;
    }
  }
  return out;
}

}  // namespace stacksym
