#include "dwarf/debug_file_finder.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <utility>

#include "base/byte_cursor.h"
#include "base/hex.h"

namespace stacksym::dwarf {

namespace {

namespace fs = std::filesystem;

std::string JoinPath(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  std::string out(dir);
  if (out.back() != '/') out += '/';
  while (!name.empty() && name.front() == '/') name.remove_prefix(1);
  out += name;
  return out;
}

std::string DirName(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

std::string_view BaseName(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The directory of `path` made absolute lexically, and once more with symlinks resolved when
// that differs (a debug file opened through a .build-id symlink names its dwz file relative to
// where it really lives).
std::vector<std::string> DirectoriesOf(const std::string& path) {
  std::vector<std::string> dirs;
  std::error_code ec;
  fs::path absolute = fs::absolute(fs::path(path), ec);
  if (ec) absolute = fs::path(path);
  dirs.push_back(DirName(absolute.lexically_normal().string()));
  fs::path canonical = fs::canonical(fs::path(path), ec);
  if (!ec) {
    std::string real_dir = DirName(canonical.string());
    if (real_dir != dirs.front()) dirs.push_back(std::move(real_dir));
  }
  return dirs;
}

// <dir>/.build-id/xx/rest.debug; `build_id` has at least 2 bytes.
std::string BuildIdDebugPath(const std::string& debug_dir, std::span<const uint8_t> build_id) {
  return BuildIdPaths(debug_dir, build_id)[1];
}

bool SameFile(const ElfFile& a, const ElfFile& b) {
  const FileIdentity& x = a.identity();
  const FileIdentity& y = b.identity();
  if (x.inode == 0 && x.dev == 0) return false;  // in-memory images have no identity
  return x.dev == y.dev && x.inode == y.inode;
}

// Tries candidate paths in order, recording outcomes; remembers the first hard failure so that
// it can be reported when nothing is found.
class CandidateSearch {
 public:
  explicit CandidateSearch(FinderTrace* trace) : trace_(trace) {}

  // Opens `path` if it is an existing regular file not already tried. nullptr: skip it.
  std::shared_ptr<ElfFile> Open(const std::string& path) {
    if (std::find(tried_.begin(), tried_.end(), path) != tried_.end()) return nullptr;
    tried_.push_back(path);
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      Record(path, FinderCandidate::Outcome::kMissing, "");
      return nullptr;
    }
    Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
    if (!elf) {
      Error error = std::move(elf).error();
      Record(path, FinderCandidate::Outcome::kUnreadable, error.ToString());
      if (!first_error_) first_error_ = std::move(error).WithFile(path);
      return nullptr;
    }
    return *std::move(elf);
  }

  // Why a candidate was turned down; nullopt accepts it.
  struct Rejection {
    FinderCandidate::Outcome outcome;
    std::string detail;
  };

  // Opens `path` and returns it if it is not `self` (a file is never its own debug file) and
  // `check` finds nothing wrong; otherwise records why and returns nullptr.
  template <class Check>
  std::shared_ptr<ElfFile> Try(const std::string& path, const ElfFile& self, Check&& check) {
    std::shared_ptr<ElfFile> elf = Open(path);
    if (!elf) return nullptr;
    if (SameFile(*elf, self)) {
      Record(path, FinderCandidate::Outcome::kSameFile, "");
      return nullptr;
    }
    if (std::optional<Rejection> rejection = check(*elf)) {
      Record(path, rejection->outcome, std::move(rejection->detail));
      return nullptr;
    }
    return elf;
  }

  void Record(const std::string& path, FinderCandidate::Outcome outcome, std::string detail) {
    if (trace_ != nullptr) trace_->candidates.push_back({path, outcome, std::move(detail)});
  }

  Result<std::shared_ptr<ElfFile>> Accept(std::shared_ptr<ElfFile> elf) {
    Record(elf->path(), FinderCandidate::Outcome::kAccepted, "");
    return elf;
  }

  // Nothing matched: the first hard failure, or "not found" as nullptr.
  Result<std::shared_ptr<ElfFile>> NothingFound() {
    if (first_error_) return std::move(*first_error_);
    return std::shared_ptr<ElfFile>();
  }

 private:
  FinderTrace* trace_;
  std::vector<std::string> tried_;
  std::optional<Error> first_error_;
};

bool BuildIdEquals(const ElfFile& elf, std::span<const uint8_t> expected) {
  std::span<const uint8_t> actual = elf.build_id();
  return !expected.empty() &&
         std::equal(actual.begin(), actual.end(), expected.begin(), expected.end());
}

// Whether `candidate` is the supplementary file identified by `expected` (a build ID from
// .gnu_debugaltlink, or a .debug_sup checksum, which dwz also sets to the build ID when the
// file has one, and records in the supplementary file's own .debug_sup otherwise).
bool SupplementaryMatches(const ElfFile& candidate, std::span<const uint8_t> expected) {
  if (BuildIdEquals(candidate, expected)) return true;
  Result<std::span<const uint8_t>> sup = candidate.SectionData(".debug_sup");
  if (!sup || sup->empty()) return false;
  Result<DebugSup> parsed = ParseDebugSup(*sup);
  return parsed && parsed->is_supplementary &&
         std::equal(parsed->checksum.begin(), parsed->checksum.end(), expected.begin(),
                    expected.end());
}

// The debug file the fetcher has for `build_id` (after every local candidate failed); a
// fetch that fails is recorded as a missing candidate named after the source, with its reason.
std::shared_ptr<ElfFile> TryFetcher(const BuildIdFetcher* fetcher,
                                    std::span<const uint8_t> build_id, const ElfFile& self,
                                    CandidateSearch& search) {
  if (fetcher == nullptr || build_id.size() < 2) return nullptr;
  Result<std::string> path = fetcher->Fetch(build_id, BuildIdFetcher::Kind::kDebugInfo);
  if (!path) {
    search.Record("fetch:" + ToHex(build_id), FinderCandidate::Outcome::kMissing,
                  path.error().ToString());
    return nullptr;
  }
  return search.Try(*path, self,
                    [&](const ElfFile& e) -> std::optional<CandidateSearch::Rejection> {
                      if (BuildIdEquals(e, build_id)) return std::nullopt;
                      return CandidateSearch::Rejection{FinderCandidate::Outcome::kWrongBuildId,
                                                        e.build_id_hex()};
                    });
}

}  // namespace

const char* FinderOutcomeName(FinderCandidate::Outcome outcome) {
  switch (outcome) {
    case FinderCandidate::Outcome::kAccepted:
      return "accepted";
    case FinderCandidate::Outcome::kMissing:
      return "missing";
    case FinderCandidate::Outcome::kUnreadable:
      return "unreadable";
    case FinderCandidate::Outcome::kWrongBuildId:
      return "wrong_build_id";
    case FinderCandidate::Outcome::kWrongCrc:
      return "wrong_crc";
    case FinderCandidate::Outcome::kSameFile:
      return "same_file";
  }
  return "unknown";
}

Result<DebugSup> ParseDebugSup(std::span<const uint8_t> section) {
  ByteCursor c(section);
  uint16_t version = c.U16();
  DebugSup sup;
  sup.is_supplementary = c.U8() != 0;
  sup.filename = std::string(c.CStr());
  uint64_t checksum_len = c.Uleb128();
  std::span<const uint8_t> checksum = c.Bytes(checksum_len);
  if (!c.ok()) {
    return MakeError(ErrorCode::kMalformed, "truncated .debug_sup").WithSection(".debug_sup");
  }
  if (version != 5) {
    return MakeError(ErrorCode::kUnsupported,
                     ".debug_sup version " + std::to_string(version) + " (expected 5)")
        .WithSection(".debug_sup");
  }
  sup.checksum.assign(checksum.begin(), checksum.end());
  return sup;
}

DebugFileFinder::DebugFileFinder(std::vector<std::string> debug_dirs, std::string known_path,
                                 std::string known_root,
                                 std::shared_ptr<const BuildIdFetcher> fetcher)
    : debug_dirs_(std::move(debug_dirs)),
      known_path_(std::move(known_path)),
      known_root_(std::move(known_root)),
      fetcher_(std::move(fetcher)) {}

Result<std::shared_ptr<ElfFile>> DebugFileFinder::FindSeparateDebugFile(const ElfFile& binary,
                                                                        FinderTrace* trace) const {
  CandidateSearch search(trace);
  std::span<const uint8_t> build_id = binary.build_id();
  if (build_id.size() >= 2) {
    for (const std::string& dir : debug_dirs_) {
      std::shared_ptr<ElfFile> elf =
          search.Try(BuildIdDebugPath(dir, build_id), binary,
                     [&](const ElfFile& e) -> std::optional<CandidateSearch::Rejection> {
                       if (BuildIdEquals(e, build_id)) return std::nullopt;
                       return CandidateSearch::Rejection{FinderCandidate::Outcome::kWrongBuildId,
                                                         e.build_id_hex()};
                     });
      if (elf) return search.Accept(std::move(elf));
    }
  }

  const std::optional<DebugLink>& link = binary.debuglink();
  if (link && !link->name.empty()) {
    std::vector<std::string> paths;
    // Where to look next to the binary, and the directories to mirror under debug dirs. The
    // two differ for a known path under another root: next to it is <root>/<dir>, while a
    // debug dir (itself under that root when it is a container's) mirrors <dir>.
    std::vector<std::string> binary_dirs = DirectoriesOf(binary.path());
    std::vector<std::string> mirrored_dirs = binary_dirs;
    if (!known_path_.empty() && known_path_.front() == '/') {
      std::string dir = DirName(fs::path(known_path_).lexically_normal().string());
      std::string there = known_root_.empty() ? dir : JoinPath(known_root_, dir);
      if (std::find(binary_dirs.begin(), binary_dirs.end(), there) == binary_dirs.end()) {
        binary_dirs.push_back(there);
      }
      if (std::find(mirrored_dirs.begin(), mirrored_dirs.end(), dir) == mirrored_dirs.end()) {
        mirrored_dirs.push_back(dir);
      }
    }
    for (const std::string& dir : binary_dirs) {
      paths.push_back(JoinPath(dir, link->name));
      paths.push_back(JoinPath(JoinPath(dir, ".debug"), link->name));
    }
    for (const std::string& debug_dir : debug_dirs_) {
      for (const std::string& dir : mirrored_dirs) {
        paths.push_back(JoinPath(JoinPath(debug_dir, dir), link->name));
      }
    }
    for (const std::string& path : paths) {
      std::shared_ptr<ElfFile> elf = search.Try(
          path, binary, [&](const ElfFile& e) -> std::optional<CandidateSearch::Rejection> {
            uint32_t crc = DebugLinkCrc32(e.bytes());
            if (crc == link->crc) return std::nullopt;
            return CandidateSearch::Rejection{
                FinderCandidate::Outcome::kWrongCrc,
                "crc 0x" + HexU32Padded(crc) + ", expected 0x" + HexU32Padded(link->crc)};
          });
      if (elf) return search.Accept(std::move(elf));
    }
  }
  if (std::shared_ptr<ElfFile> fetched = TryFetcher(fetcher_.get(), build_id, binary, search)) {
    return search.Accept(std::move(fetched));
  }
  return search.NothingFound();
}

Result<std::shared_ptr<ElfFile>> DebugFileFinder::FindSupplementaryFile(const ElfFile& debug_file,
                                                                        FinderTrace* trace) const {
  std::string name;
  std::vector<uint8_t> expected;
  if (const std::optional<DebugAltLink>& alt = debug_file.debugaltlink(); alt) {
    name = alt->name;
    expected = alt->build_id;
  } else {
    Result<std::span<const uint8_t>> section = debug_file.SectionData(".debug_sup");
    if (!section) return std::move(section).error().WithFile(debug_file.path());
    if (section->empty()) return std::shared_ptr<ElfFile>();
    Result<DebugSup> sup = ParseDebugSup(*section);
    if (!sup) return std::move(sup).error().WithFile(debug_file.path());
    if (sup->is_supplementary) return std::shared_ptr<ElfFile>();  // it is one itself
    name = std::move(sup->filename);
    expected = std::move(sup->checksum);
  }
  if (expected.empty()) {
    // Without an identity nothing could be verified; refusing is safer than guessing.
    return MakeError(ErrorCode::kMalformed, "supplementary file reference has no build ID")
        .WithFile(debug_file.path());
  }

  CandidateSearch search(trace);
  std::vector<std::string> paths;
  if (!name.empty()) {
    if (name.front() == '/') {
      paths.push_back(name);
    } else {
      for (const std::string& dir : DirectoriesOf(debug_file.path())) {
        paths.push_back(JoinPath(dir, name));
      }
    }
  }
  if (expected.size() >= 2) {
    for (const std::string& dir : debug_dirs_) paths.push_back(BuildIdDebugPath(dir, expected));
  }
  for (const std::string& path : paths) {
    std::shared_ptr<ElfFile> elf = search.Try(
        path, debug_file, [&](const ElfFile& e) -> std::optional<CandidateSearch::Rejection> {
          if (SupplementaryMatches(e, expected)) return std::nullopt;
          return CandidateSearch::Rejection{FinderCandidate::Outcome::kWrongBuildId,
                                            e.build_id_hex()};
        });
    if (elf) return search.Accept(std::move(elf));
  }
  if (std::shared_ptr<ElfFile> fetched = TryFetcher(fetcher_.get(), expected, debug_file, search)) {
    return search.Accept(std::move(fetched));
  }
  return search.NothingFound();
}

Result<std::shared_ptr<ElfFile>> DebugFileFinder::FindDwo(const ElfFile& binary,
                                                          std::string_view comp_dir,
                                                          std::string_view dwo_name,
                                                          FinderTrace* trace) const {
  if (dwo_name.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "empty split DWARF object name");
  }
  CandidateSearch search(trace);
  std::vector<std::string> paths;
  if (dwo_name.front() == '/') {
    paths.emplace_back(dwo_name);
  } else if (!comp_dir.empty()) {
    paths.push_back(JoinPath(comp_dir, dwo_name));
  } else {
    paths.emplace_back(dwo_name);
  }
  if (dwo_beside_binary_) {
    for (const std::string& dir : DirectoriesOf(binary.path())) {
      paths.push_back(JoinPath(dir, BaseName(dwo_name)));
    }
  }
  for (const std::string& path : paths) {
    std::shared_ptr<ElfFile> elf =
        search.Try(path, binary, [](const ElfFile&) -> std::optional<CandidateSearch::Rejection> {
          return std::nullopt;  // the caller checks the DWO id
        });
    if (elf) return search.Accept(std::move(elf));
  }
  return search.NothingFound();
}

Result<std::shared_ptr<ElfFile>> DebugFileFinder::FindDwp(const ElfFile& file,
                                                          FinderTrace* trace) const {
  CandidateSearch search(trace);
  std::vector<std::string> paths;
  if (!dwp_path_.empty()) {
    paths.push_back(dwp_path_);
  } else {
    paths.push_back(file.path() + ".dwp");
    std::error_code ec;
    fs::path canonical = fs::canonical(fs::path(file.path()), ec);
    if (!ec && canonical.string() != file.path()) paths.push_back(canonical.string() + ".dwp");
  }
  for (const std::string& path : paths) {
    std::shared_ptr<ElfFile> elf = search.Open(path);
    if (elf) return search.Accept(std::move(elf));
  }
  return search.NothingFound();
}

}  // namespace stacksym::dwarf
