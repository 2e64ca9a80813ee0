// /proc/kallsyms → KallsymsTable: one pass over the text, one (usually skipped) sort, one pass
// to infer sizes. Lines look like "ffffffff81000000 T _stext" or
// "ffffffffc0a01000 t ext4_fill_super\t[ext4]".
#include <algorithm>
#include <string>
#include <unordered_map>

#include "base/hex.h"
#include "stacksym/kernel.h"
#include "stacksym/mapped_file.h"
#include "symbolize/text_scan.h"

namespace stacksym {

namespace {

// Lower ranks win when several symbols share an address.
int TypeRank(char type) {
  switch (type) {
    case 'T':
      return 0;
    case 'W':
    case 'w':
      return 1;
    case 't':
      return 2;
    default:
      return 3;
  }
}

}  // namespace

Result<KallsymsTable> KallsymsTable::Load(const std::string& path) {
  Result<MappedFile> file = MappedFile::Open(path);
  if (!file) return std::move(file).error();
  std::span<const uint8_t> bytes = file->bytes();
  return Parse(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

KallsymsTable KallsymsTable::Parse(std::string_view text) {
  KallsymsTable table;
  table.modules_.emplace_back();
  // ~40 bytes per line on a typical kernel; reserving avoids most regrowth.
  table.entries_.reserve(text.size() / 40 + 1);
  table.names_.reserve(text.size() / 3);

  std::unordered_map<std::string_view, uint16_t> module_indices;  // views into `text`
  bool any_nonzero = false;
  std::string_view last_module;
  uint16_t last_module_index = 0;
  std::string_view rest = text, line;
  while (symbolize::NextLine(&rest, &line)) {
    if (line.empty()) continue;
    uint64_t address = 0;
    std::string_view s = line;
    if (!symbolize::ConsumeHex(&s, &address) || symbolize::SkipBlanks(&s) == 0 || s.empty()) {
      ++table.skipped_lines_;
      continue;
    }
    char type = s[0];
    s.remove_prefix(1);
    if (symbolize::SkipBlanks(&s) == 0 || s.empty()) {
      ++table.skipped_lines_;
      continue;
    }
    size_t name_end = s.find_first_of(" \t");
    std::string_view name = s.substr(0, name_end);
    std::string_view module;
    if (name_end != std::string_view::npos) {
      std::string_view tail = s.substr(name_end);
      symbolize::SkipBlanks(&tail);
      tail = symbolize::TrimRight(tail);
      if (tail.size() >= 2 && tail.front() == '[' && tail.back() == ']') {
        module = tail.substr(1, tail.size() - 2);
      } else if (!tail.empty()) {
        ++table.skipped_lines_;
        continue;
      }
    }
    if (name.size() > UINT16_MAX || table.names_.size() + name.size() > UINT32_MAX) {
      ++table.skipped_lines_;
      continue;
    }
    uint16_t module_index = 0;
    if (!module.empty()) {
      if (module == last_module) {
        module_index = last_module_index;
      } else {
        auto it = module_indices.find(module);
        if (it == module_indices.end()) {
          if (table.modules_.size() > UINT16_MAX) {
            ++table.skipped_lines_;
            continue;
          }
          it = module_indices.emplace(module, static_cast<uint16_t>(table.modules_.size())).first;
          table.modules_.emplace_back(module);
        }
        module_index = it->second;
        last_module = module;
        last_module_index = module_index;
      }
    }
    any_nonzero |= address != 0;
    Entry e{};
    e.address = address;
    e.name_offset = static_cast<uint32_t>(table.names_.size());
    e.name_length = static_cast<uint16_t>(name.size());
    e.module = module_index;
    e.type = type;
    table.names_.append(name);
    table.entries_.push_back(e);
  }

  if (!table.entries_.empty() && !any_nonzero) {
    // kptr_restrict: every line reads 0000000000000000. Nothing here can answer an address.
    table.addresses_hidden_ = true;
    table.entries_.clear();
    table.entries_.shrink_to_fit();
    table.names_.clear();
    table.names_.shrink_to_fit();
    return table;
  }

  auto before = [](const Entry& a, const Entry& b) {
    if (a.address != b.address) return a.address < b.address;
    return TypeRank(a.type) < TypeRank(b.type);
  };
  // vmlinux symbols come sorted; modules and BPF programs are appended in load order.
  if (!std::is_sorted(table.entries_.begin(), table.entries_.end(), before)) {
    std::stable_sort(table.entries_.begin(), table.entries_.end(), before);
  }

  // Sizes: a symbol ends where the next higher address starts, if that symbol belongs to the
  // same module; otherwise (last of its module) the end is unknown and bounded.
  std::vector<Entry>& v = table.entries_;
  size_t i = 0;
  while (i < v.size()) {
    size_t group_end = i;
    while (group_end < v.size() && v[group_end].address == v[i].address) ++group_end;
    for (size_t k = i; k < group_end; ++k) {
      Entry& e = v[k];
      uint64_t span = kMaxUnsizedSpan;
      e.size_known = false;
      if (group_end < v.size()) {
        const Entry& next = v[group_end];
        e.size_known = next.module == e.module;
        span = e.size_known ? next.address - e.address
                            : std::min(next.address - e.address, kMaxUnsizedSpan);
      }
      if (e.address > UINT64_MAX - span) span = UINT64_MAX - e.address;  // top of memory
      e.span = static_cast<uint32_t>(std::min<uint64_t>(span, UINT32_MAX));
    }
    i = group_end;
  }
  table.entries_.shrink_to_fit();
  table.names_.shrink_to_fit();
  return table;
}

KernelSymbol KallsymsTable::ToSymbol(const Entry& e) const {
  KernelSymbol s;
  s.address = e.address;
  s.size = e.size_known ? e.span : 0;
  s.name = std::string_view(names_).substr(e.name_offset, e.name_length);
  s.module = modules_[e.module];
  s.type = e.type;
  return s;
}

KernelSymbol KallsymsTable::at(size_t index) const { return ToSymbol(entries_.at(index)); }

std::optional<KernelSymbol> KallsymsTable::Find(uint64_t addr) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), addr,
                             [](uint64_t a, const Entry& e) { return a < e.address; });
  if (it == entries_.begin()) return std::nullopt;
  --it;
  // Step back to the first (best-ranked) entry of the equal-address group.
  uint64_t start = it->address;
  while (it != entries_.begin() && (it - 1)->address == start) --it;
  if (addr - it->address >= it->span) return std::nullopt;
  return ToSymbol(*it);
}

std::vector<KernelSymbol> KallsymsTable::FindByName(std::string_view name) const {
  std::vector<KernelSymbol> out;
  for (const Entry& e : entries_) {
    if (e.name_length == name.size() &&
        std::string_view(names_).substr(e.name_offset, e.name_length) == name) {
      out.push_back(ToSymbol(e));
    }
  }
  return out;
}

size_t KallsymsTable::memory_bytes() const {
  size_t n = entries_.capacity() * sizeof(Entry) + names_.capacity();
  for (const std::string& m : modules_) n += sizeof(std::string) + m.capacity();
  return n;
}

std::optional<BpfProgramName> ParseBpfProgramSymbol(std::string_view symbol) {
  constexpr std::string_view kPrefix = "bpf_prog_";
  if (symbol.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view rest = symbol.substr(kPrefix.size());
  if (rest.size() < 16) return std::nullopt;
  for (size_t i = 0; i < 16; ++i) {
    if (HexDigit(rest[i]) < 0) return std::nullopt;
  }
  BpfProgramName out;
  out.tag = rest.substr(0, 16);
  rest.remove_prefix(16);
  if (!rest.empty()) {
    if (rest[0] != '_') return std::nullopt;
    out.name = rest.substr(1);
  }
  return out;
}

}  // namespace stacksym
