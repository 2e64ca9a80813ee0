// libFuzzer target for the /proc/PID/maps text parser (src/normalize/maps_text.h): arbitrary
// bytes must never crash it, every entry's name must lie inside the buffer, and parsing in two
// chunks (split at a point chosen by the input) must give exactly what one pass gives. The same
// bytes as /proc/PID/cgroup text (capture/process_info.h): a container ID found is 64 lowercase
// hex digits taken from the input.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "capture/process_info.h"
#include "normalize/maps_text.h"

using stacksym::normalize::MapsEntry;
using stacksym::normalize::MapsParseOptions;
using stacksym::normalize::MapsParseStats;
using stacksym::normalize::ParseMapsLines;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view cgroup(reinterpret_cast<const char*>(data), size);
  std::string id = stacksym::capture::ContainerIdFromCgroup(cgroup);
  if (!id.empty()) {
    if (id.size() != 64 || cgroup.find(id) == std::string_view::npos) abort();
    for (char c : id) {
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) abort();
    }
  }
  MapsParseOptions options;
  options.executable_only = (data[0] & 1) != 0;
  options.skip_gate = (data[0] & 2) != 0;
  std::vector<char> whole(data + 1, data + size);
  std::vector<MapsEntry> a;
  MapsParseStats sa;
  ParseMapsLines(std::span<char>(whole.data(), whole.size()), 0, true, options, &a, &sa);
  for (const MapsEntry& e : a) {
    if (static_cast<size_t>(e.name_offset) + e.name_size > whole.size()) abort();
    if (e.end < e.start) abort();
  }

  size_t split = whole.empty() ? 0 : (static_cast<size_t>(data[0]) * 131) % (whole.size() + 1);
  std::vector<char> chunked(data + 1, data + 1 + split);
  std::vector<MapsEntry> b;
  MapsParseStats sb;
  size_t pos =
      ParseMapsLines(std::span<char>(chunked.data(), chunked.size()), 0, false, options, &b, &sb);
  if (pos > chunked.size()) abort();
  chunked.insert(chunked.end(), data + 1 + split, data + size);
  ParseMapsLines(std::span<char>(chunked.data(), chunked.size()), pos, true, options, &b, &sb);
  if (a.size() != b.size() || sa.malformed != sb.malformed || sa.lines != sb.lines) abort();
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].start != b[i].start || a[i].end != b[i].end || a[i].inode != b[i].inode ||
        a[i].name_size != b[i].name_size ||
        std::memcmp(whole.data() + a[i].name_offset, chunked.data() + b[i].name_offset,
                    a[i].name_size) != 0) {
      abort();
    }
  }
  return 0;
}
