#include "symbolize/perf_map.h"

#include <algorithm>
#include <map>
#include <optional>
#include <span>

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

PerfMap PerfMap::Parse(std::string_view text) {
  PerfMap map;
  std::string_view rest = text, line;
  while (symbolize::NextLine(&rest, &line)) {
    std::string_view s = line;
    symbolize::SkipBlanks(&s);
    if (s.empty()) continue;
    uint64_t start = 0, size = 0;
    if (!symbolize::ConsumeHex(&s, &start) || symbolize::SkipBlanks(&s) == 0 ||
        !symbolize::ConsumeHex(&s, &size) || symbolize::SkipBlanks(&s) == 0 || size == 0) {
      ++map.skipped_lines_;
      continue;
    }
    std::string_view name = symbolize::TrimRight(s);
    if (name.empty() || map.names_.size() + name.size() > UINT32_MAX ||
        map.symbols_.size() >= UINT32_MAX) {
      ++map.skipped_lines_;
      continue;
    }
    uint64_t end = start > UINT64_MAX - size ? UINT64_MAX : start + size;
    map.symbols_.push_back(Symbol{start, end, static_cast<uint32_t>(map.names_.size()),
                                  static_cast<uint32_t>(name.size())});
    map.names_.append(name);
  }

  // Flatten newest-first: each symbol claims only the parts of its range no later line has
  // claimed. `covered` is the union of claimed ranges (merged, so each walk is amortized).
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
  return map;
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

Result<pid_t> NamespacedPid(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/status";
  Result<MappedFile> file = MappedFile::Open(path);
  if (!file) return std::move(file).error();
  std::string_view rest = AsText(file->bytes()), line;
  while (symbolize::NextLine(&rest, &line)) {
    constexpr std::string_view kKey = "NSpid:";
    if (line.substr(0, kKey.size()) != kKey) continue;
    std::string_view s = line.substr(kKey.size());
    uint64_t last = 0;
    bool any = false;
    while (symbolize::SkipBlanks(&s), !s.empty()) {
      uint64_t v = 0;
      if (!symbolize::ConsumeDecimal(&s, &v) || v > INT32_MAX) {
        return Error(ErrorCode::kMalformed, "bad NSpid line").WithFile(path);
      }
      last = v;
      any = true;
    }
    if (!any) return Error(ErrorCode::kMalformed, "empty NSpid line").WithFile(path);
    return static_cast<pid_t>(last);
  }
  return pid;  // kernels before 4.1 have no NSpid
}

Result<PerfMap> LoadPerfMapForProcess(pid_t pid) {
  if (pid <= 0) return Error(ErrorCode::kInvalidArgument, "invalid pid " + std::to_string(pid));
  std::string proc = "/proc/" + std::to_string(pid);
  std::vector<std::string> candidates;
  Result<pid_t> ns_pid = NamespacedPid(pid);
  if (ns_pid && *ns_pid != pid) {
    candidates.push_back(proc + "/root/tmp/perf-" + std::to_string(*ns_pid) + ".map");
  }
  candidates.push_back(proc + "/root/tmp/perf-" + std::to_string(pid) + ".map");
  candidates.push_back("/tmp/perf-" + std::to_string(pid) + ".map");
  std::optional<Error> unreadable;  // a map that exists but could not be read beats "none"
  for (const std::string& path : candidates) {
    Result<PerfMap> map = PerfMap::Load(path);
    if (map) return map;
    if (map.error().code != ErrorCode::kNotFound && !unreadable) unreadable = map.error();
  }
  if (unreadable) return *unreadable;
  std::string tried;
  for (const std::string& c : candidates) tried += (tried.empty() ? "" : ", ") + c;
  return Error(ErrorCode::kNotFound,
               "no perf map for pid " + std::to_string(pid) + " (tried " + tried + ")");
}

}  // namespace stacksym::symbolize
