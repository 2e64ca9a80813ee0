#include "index/index_identity.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

namespace stacksym::index {
namespace {

std::string IdentityText(const FileIdentity& id) {
  return std::to_string(id.dev) + " " + std::to_string(id.inode) + " " + std::to_string(id.size) +
         " " + std::to_string(id.mtime_ns);
}

// Splits "a b c d rest" into four numbers and the rest.
bool ParseIdentity(std::string_view text, FileIdentity* id, std::string_view* rest) {
  uint64_t values[4] = {};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 4; ++i) {
    auto [next, ec] = std::from_chars(p, end, values[i]);
    if (ec != std::errc()) return false;
    p = next;
    if (p < end && *p == ' ') ++p;
  }
  id->dev = values[0];
  id->inode = values[1];
  id->size = values[2];
  id->mtime_ns = static_cast<int64_t>(values[3]);
  *rest = std::string_view(p, static_cast<size_t>(end - p));
  return true;
}

template <class Fn>
void ForEachLine(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    size_t space = line.find(' ');
    if (space != std::string_view::npos) fn(line.substr(0, space), line.substr(space + 1));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// What the debuglink and .dwp searches depend on: the binary's directory and the path (and
// root) the process knows it by.
std::string LocationOf(const ElfFile& binary, const dwarf::DebugFileSearch& search) {
  return DirOf(binary.path()) + "|" + search.known_path + "|" + search.known_root;
}

// The debug file paths the finder tries by build ID (none without one).
std::vector<std::string> BuildIdDebugPaths(const ElfFile& binary,
                                           const dwarf::DebugFileSearch& search) {
  std::vector<std::string> out;
  for (const std::string& dir : search.debug_dirs) {
    std::vector<std::string> paths = BuildIdPaths(dir, binary.build_id());
    if (!paths.empty()) out.push_back(std::move(paths[1]));
  }
  return out;
}

}  // namespace

std::string DescribeSources(const ElfFile& binary, const dwarf::DebugFileSearch& search,
                            const std::string& debug_path, const std::vector<SourceFile>& files) {
  std::string out = "binary " + binary.path() + "\n";
  if (!debug_path.empty()) out += "debug " + debug_path + "\n";
  for (const SourceFile& f : files) out += "file " + IdentityText(f.identity) + " " + f.path + "\n";
  if (binary.build_id().empty()) {
    out += "noid " + IdentityText(binary.identity()) + "\n";
  }
  // DWARF in the binary or under a build-ID path is found wherever the binary is; by
  // .gnu_debuglink, not at all, or with split DWARF, the answer depends on where it is.
  const std::vector<std::string> by_build_id = BuildIdDebugPaths(binary, search);
  bool in_place = debug_path == binary.path() || std::find(by_build_id.begin(), by_build_id.end(),
                                                           debug_path) != by_build_id.end();
  bool split = false;
  for (const SourceFile& f : files) split |= f.path != debug_path;
  if (!in_place || split) out += "location " + LocationOf(binary, search) + "\n";
  if (!debug_path.empty()) return out;
  // No DWARF was found: where the finder would have looked, so that a debug file installed
  // later makes the index stale.
  for (const std::string& path : by_build_id) out += "absent " + path + "\n";
  if (binary.debuglink()) {
    const std::string& name = binary.debuglink()->name;
    std::vector<std::string> dirs = {DirOf(binary.path())};
    if (!search.known_path.empty()) dirs.push_back(search.known_root + DirOf(search.known_path));
    for (const std::string& dir : dirs) {
      out += "absent " + dir + "/" + name + "\n";
      out += "absent " + dir + "/.debug/" + name + "\n";
      for (const std::string& root : search.debug_dirs)
        out += "absent " + root + dir + "/" + name + "\n";
    }
  }
  return out;
}

Result<void> CheckSources(std::string_view identity, const ElfFile& binary,
                          const dwarf::DebugFileSearch& search) {
  Result<void> result;
  ForEachLine(identity, [&](std::string_view key, std::string_view value) {
    if (!result) return;
    auto stale = [&](std::string what) {
      result = Error(ErrorCode::kInvalidArgument, "index is stale: " + what);
    };
    if (key == "file") {
      FileIdentity want;
      std::string_view path;
      struct stat st;
      if (!ParseIdentity(value, &want, &path)) return stale("unreadable identity line");
      if (::stat(std::string(path).c_str(), &st) != 0 || FileIdentityOf(st) != want) {
        return stale(std::string(path) + " changed");
      }
    } else if (key == "absent") {
      struct stat st;
      if (::stat(std::string(value).c_str(), &st) == 0) {
        return stale(std::string(value) + " appeared");
      }
    } else if (key == "location") {
      if (value != LocationOf(binary, search)) return stale("built for the binary elsewhere");
    } else if (key == "noid") {
      FileIdentity want;
      std::string_view rest;
      if (!ParseIdentity(value, &want, &rest) || want != binary.identity()) {
        return stale(binary.path() + " changed");
      }
    }
  });
  return result;
}

std::string IdentityValue(std::string_view identity, std::string_view key) {
  std::string out;
  bool found = false;
  ForEachLine(identity, [&](std::string_view k, std::string_view v) {
    if (!found && k == key) {
      out = std::string(v);
      found = true;
    }
  });
  return out;
}

}  // namespace stacksym::index
