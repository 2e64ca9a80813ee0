#include "normalize/maps_text.h"

#include <sys/sysmacros.h>

#include <cstring>

#include "normalize/vma_sources.h"

namespace stacksym::normalize {
namespace {

constexpr std::string_view kDeletedSuffix = " (deleted)";

// A forward scanner over one line [pos, end); every read is bounds-checked.
struct LineScanner {
  const char* pos;
  const char* end;
  bool ok = true;

  // Hex digits up to `stop` (which must follow). At most 16 digits.
  uint64_t Hex(char stop) {
    uint64_t v = 0;
    int digits = 0;
    while (pos < end && *pos != stop) {
      char c = *pos;
      unsigned d;
      if (c >= '0' && c <= '9') {
        d = static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<unsigned>(c - 'A' + 10);
      } else {
        ok = false;
        return 0;
      }
      if (++digits > 16) {
        ok = false;
        return 0;
      }
      v = (v << 4) | d;
      ++pos;
    }
    if (digits == 0 || pos >= end) {
      ok = false;
      return 0;
    }
    ++pos;  // the stop character
    return v;
  }

  // Decimal digits up to a space or the end of the line (inode is the last fixed field).
  uint64_t Decimal() {
    uint64_t v = 0;
    int digits = 0;
    while (pos < end && *pos != ' ') {
      char c = *pos;
      if (c < '0' || c > '9' || ++digits > 20) {
        ok = false;
        return 0;
      }
      uint64_t next = v * 10 + static_cast<uint64_t>(c - '0');
      if (next / 10 != v) {  // overflow
        ok = false;
        return 0;
      }
      v = next;
      ++pos;
    }
    if (digits == 0) ok = false;
    return v;
  }

  uint32_t Perms() {
    if (end - pos < 5 || pos[4] != ' ') {
      ok = false;
      return 0;
    }
    uint32_t p = 0;
    if (pos[0] == 'r')
      p |= kVmaRead;
    else if (pos[0] != '-')
      ok = false;
    if (pos[1] == 'w')
      p |= kVmaWrite;
    else if (pos[1] != '-')
      ok = false;
    if (pos[2] == 'x')
      p |= kVmaExec;
    else if (pos[2] != '-')
      ok = false;
    if (pos[3] == 's')
      p |= kVmaShared;
    else if (pos[3] != 'p')
      ok = false;
    pos += 5;
    return p;
  }
};

// Replaces each "\012" with '\n' inside [name, name + size); returns the new size.
size_t UnescapeNewlines(char* name, size_t size) {
  size_t out = 0;
  for (size_t in = 0; in < size;) {
    if (name[in] == '\\' && size - in >= 4 && name[in + 1] == '0' && name[in + 2] == '1' &&
        name[in + 3] == '2') {
      name[out++] = '\n';
      in += 4;
    } else {
      name[out++] = name[in++];
    }
  }
  return out;
}

enum class LineResult { kOk, kFiltered, kMalformed };

LineResult ParseLine(char* line, char* line_end, const char* base, const MapsParseOptions& options,
                     MapsEntry* e) {
  LineScanner s{line, line_end};
  e->start = s.Hex('-');
  e->end = s.Hex(' ');
  if (!s.ok || e->end < e->start) return LineResult::kMalformed;
  e->perms = s.Perms();
  e->offset = s.Hex(' ');
  uint64_t major = s.Hex(':');
  uint64_t minor = s.Hex(' ');
  if (!s.ok || major > 0xfffff || minor > 0xfffff) return LineResult::kMalformed;
  e->dev = makedev(static_cast<unsigned>(major), static_cast<unsigned>(minor));
  e->inode = s.Decimal();
  if (!s.ok) return LineResult::kMalformed;
  while (s.pos < line_end && *s.pos == ' ') ++s.pos;
  char* name = line + (s.pos - line);
  size_t size = static_cast<size_t>(line_end - name);
  if (size > 0 && std::memchr(name, '\\', size) != nullptr) size = UnescapeNewlines(name, size);
  std::string_view view(name, size);
  e->deleted = false;
  if ((e->inode != 0 || e->dev != 0) && view.size() > kDeletedSuffix.size() &&
      view.ends_with(kDeletedSuffix)) {
    size -= kDeletedSuffix.size();
    e->deleted = true;
  }
  if (options.skip_gate && std::string_view(name, size) == "[vsyscall]") {
    return LineResult::kFiltered;
  }
  if (options.executable_only && (e->perms & kVmaExec) == 0) return LineResult::kFiltered;
  uint64_t name_offset = static_cast<uint64_t>(name - base);
  if (name_offset > UINT32_MAX || size > UINT32_MAX) return LineResult::kMalformed;
  e->name_offset = static_cast<uint32_t>(name_offset);
  e->name_size = static_cast<uint32_t>(size);
  return LineResult::kOk;
}

}  // namespace

size_t ParseMapsLines(std::span<char> text, size_t from, bool final,
                      const MapsParseOptions& options, std::vector<MapsEntry>* out,
                      MapsParseStats* stats) {
  char* base = text.data();
  char* end = base + text.size();
  char* pos = base + (from < text.size() ? from : text.size());
  while (pos < end) {
    char* nl = static_cast<char*>(std::memchr(pos, '\n', static_cast<size_t>(end - pos)));
    if (nl == nullptr) {
      if (!final) break;
      nl = end;
    }
    if (nl > pos) {
      ++stats->lines;
      MapsEntry e;
      switch (ParseLine(pos, nl, base, options, &e)) {
        case LineResult::kOk:
          out->push_back(e);
          break;
        case LineResult::kFiltered:
          break;
        case LineResult::kMalformed:
          ++stats->malformed;
          break;
      }
    }
    pos = nl < end ? nl + 1 : end;
  }
  return static_cast<size_t>(pos - base);
}

}  // namespace stacksym::normalize
