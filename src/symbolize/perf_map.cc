#include "symbolize/perf_map.h"

#include <algorithm>
#include <map>
#include <optional>
#include <span>

#include "normalize/jit_files.h"
#include "stacksym/mapped_file.h"
#include "symbolize/text_scan.h"

namespace stacksym::symbolize {

namespace {

std::string_view AsText(std::span<const uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

Result<PerfMap> PerfMap::Load(const std::string& path) {
  Result<MappedFile> file = MappedFile::Open(path);
  if (!file) return std::move(file).error();
  PerfMap map = Parse(AsText(file->bytes()));
  map.path_ = path;
  return map;
}

bool PerfMap::Add(uint64_t start, uint64_t size, std::string_view name) {
  if (size == 0 || name.empty() || names_.size() + name.size() > UINT32_MAX ||
      symbols_.size() >= UINT32_MAX) {
    ++skipped_lines_;
    return false;
  }
  uint64_t end = start > UINT64_MAX - size ? UINT64_MAX : start + size;
  symbols_.push_back(
      Symbol{start, end, static_cast<uint32_t>(names_.size()), static_cast<uint32_t>(name.size())});
  names_.append(name);
  return true;
}

PerfMap PerfMap::Parse(std::string_view text, std::span<const JitCodeLoad> loads) {
  PerfMap map;
  std::string_view rest = text, line;
  while (symbolize::NextLine(&rest, &line)) {
    std::string_view s = line;
    symbolize::SkipBlanks(&s);
    if (s.empty()) continue;
    uint64_t start = 0, size = 0;
    if (!symbolize::ConsumeHex(&s, &start) || symbolize::SkipBlanks(&s) == 0 ||
        !symbolize::ConsumeHex(&s, &size) || symbolize::SkipBlanks(&s) == 0) {
      ++map.skipped_lines_;
      continue;
    }
    map.Add(start, size, symbolize::TrimRight(s));
  }
  for (const JitCodeLoad& load : loads) map.Add(load.code_addr, load.code_size, load.name);
  map.Flatten();
  return map;
}

Result<PerfMap> PerfMap::FromJitFiles(const JitFiles& files, std::string* jitdump_error) {
  if (files.perf_map_path.empty() && files.jitdump_path.empty()) {
    return Error(ErrorCode::kNotFound, "no perf map or jitdump");
  }
  Result<JitDump> dump = JitDump{};
  if (!files.jitdump_path.empty()) {
    dump =
        ReadJitDump({reinterpret_cast<const uint8_t*>(files.jitdump.data()), files.jitdump.size()});
    if (!dump) {
      if (jitdump_error) *jitdump_error = files.jitdump_path + ": " + dump.error().ToString();
      dump = JitDump{};
    }
  }
  PerfMap map = Parse(files.perf_map, dump->loads);
  map.path_ = !files.perf_map_path.empty() ? files.perf_map_path : files.jitdump_path;
  return map;
}

// Flatten newest-first: each symbol claims only the parts of its range no later entry has
// claimed. `covered` is the union of claimed ranges (merged, so each walk is amortized).
void PerfMap::Flatten() {
  PerfMap& map = *this;
  std::map<uint64_t, uint64_t> covered;
  for (size_t n = map.symbols_.size(); n-- > 0;) {
    const Symbol& sym = map.symbols_[n];
    uint32_t index = static_cast<uint32_t>(n);
    uint64_t merged_start = sym.start, merged_end = sym.end, cur = sym.start;
    auto it = covered.upper_bound(sym.start);
    if (it != covered.begin()) {
      auto prev = std::prev(it);
      if (prev->second >= sym.start) {
        merged_start = prev->first;
        merged_end = std::max(merged_end, prev->second);
        cur = std::max(cur, prev->second);
        covered.erase(prev);
      }
    }
    while (it != covered.end() && it->first <= sym.end) {
      if (cur < it->first) map.pieces_.push_back(Piece{cur, it->first, index});
      cur = std::max(cur, it->second);
      merged_end = std::max(merged_end, it->second);
      it = covered.erase(it);
    }
    if (cur < sym.end) map.pieces_.push_back(Piece{cur, sym.end, index});
    covered[merged_start] = merged_end;
  }
  std::sort(map.pieces_.begin(), map.pieces_.end(),
            [](const Piece& a, const Piece& b) { return a.start < b.start; });
  map.pieces_.shrink_to_fit();
}

std::optional<PerfMapSymbol> PerfMap::Find(uint64_t addr) const {
  auto it = std::upper_bound(pieces_.begin(), pieces_.end(), addr,
                             [](uint64_t a, const Piece& p) { return a < p.start; });
  if (it == pieces_.begin()) return std::nullopt;
  --it;
  if (addr >= it->end) return std::nullopt;
  const Symbol& sym = symbols_[it->symbol];
  return PerfMapSymbol{sym.start, sym.end - sym.start,
                       std::string_view(names_).substr(sym.name_offset, sym.name_length)};
}

Result<PerfMap> LoadPerfMapForProcess(pid_t pid) {
  Result<normalize::ProcessJitFiles> process = normalize::ProcessJitFiles::Open(pid);
  if (!process) return std::move(process).error();
  JitFiles files = process->Read();
  Result<PerfMap> map = PerfMap::FromJitFiles(files);
  if (!map && map.error().code == ErrorCode::kNotFound) {
    return Error(ErrorCode::kNotFound,
                 "no perf map or jitdump for pid " + std::to_string(pid) + " (looked in /proc/" +
                     std::to_string(pid) + "/root/tmp with its namespaced pid " +
                     std::to_string(process->namespaced_pid()) + ", and in /tmp)");
  }
  return map;
}

SymbolizedAddress PerfMapAnswer(const PerfMapSymbol& symbol, uint64_t address,
                                const std::string& module) {
  SymbolizedAddress r;
  r.input = r.vaddr = address;
  r.symbol = r.raw_symbol = std::string(symbol.name);
  r.symbol_address = symbol.start;
  r.symbol_size = symbol.size;
  r.offset = address - symbol.start;
  r.module = module;
  return r;
}

}  // namespace stacksym::symbolize
