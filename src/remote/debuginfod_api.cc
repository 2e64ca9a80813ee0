#include "remote/debuginfod_api.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include "stacksym/build_id.h"
#include "stacksym/elf.h"
#include "stacksym/hex.h"

namespace stacksym::remote {
namespace {

// Bytes of one file to send: all of it, or one section's.
struct FileRange {
  std::string path;
  bool whole = true;
  uint64_t offset = 0;  // when not whole
  uint64_t length = 0;  // when not whole
};

Result<std::string> FindArtifactFile(BuildIdArtifact artifact, std::span<const uint8_t> build_id,
                                     const DebuginfodApiOptions& options) {
  if (artifact == BuildIdArtifact::kExecutable) {
    return FindBinaryByBuildId(build_id, options.debug_dirs, options.fetcher.get());
  }
  return FindDebugFileByBuildId(build_id, options.debug_dirs, options.fetcher.get());
}

// The bytes of section `name` in the file at `path`, when it has the section with bytes in the
// file (an SHT_NOBITS section, as a debug file's .text is, has none): the section as stored,
// compressed or not, as debuginfod sends it.
std::optional<FileRange> SectionRange(const std::string& path, const std::string& name) {
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
  if (!elf) return std::nullopt;
  const ElfSection* section = (*elf)->FindSection(name);
  if (section == nullptr || section->type == SHT_NOBITS) return std::nullopt;
  return FileRange{path, false, section->offset, section->size};
}

// debuginfod's order: the debuginfo file's section, else the executable's.
Result<FileRange> FindSection(std::span<const uint8_t> build_id, const std::string& name,
                              const DebuginfodApiOptions& options) {
  std::string tried;
  for (BuildIdArtifact artifact : {BuildIdArtifact::kDebugInfo, BuildIdArtifact::kExecutable}) {
    Result<std::string> path = FindArtifactFile(artifact, build_id, options);
    if (!path) {
      if (path.error().code != ErrorCode::kNotFound) return path.error();
      tried += "\n" + path.error().message;
      continue;
    }
    if (std::optional<FileRange> range = SectionRange(*path, name)) return *std::move(range);
    tried += "\n" + *path + ": no section " + name + " with bytes in the file";
  }
  return Error(ErrorCode::kNotFound,
               "no section " + name + " for build ID " + ToHex(build_id) + tried);
}

Result<FileRange> Locate(const BuildIdPath& request, const DebuginfodApiOptions& options) {
  switch (request.artifact) {
    case BuildIdArtifact::kDebugInfo:
    case BuildIdArtifact::kExecutable: {
      Result<std::string> path = FindArtifactFile(request.artifact, request.build_id, options);
      if (!path) return path.error();
      return FileRange{*std::move(path)};
    }
    case BuildIdArtifact::kSection:
      return FindSection(request.build_id, request.section, options);
    case BuildIdArtifact::kSource:
      break;
  }
  return Error(ErrorCode::kNotFound, "source files are not served here");
}

// RFC 9110's IMF-fixdate, as Last-Modified wants it.
std::string HttpDate(time_t when) {
  tm utc{};
  gmtime_r(&when, &utc);
  char out[64];
  size_t n = std::strftime(out, sizeof out, "%a, %d %b %Y %H:%M:%S GMT", &utc);
  return std::string(out, n);
}

void Text(HttpResponse& response, int status, const std::string& message) {
  response.Set(status, message + "\n", "text/plain; charset=utf-8");
}

// Opens the file and hands it to the transport to stream; the range is checked against the
// file as opened (it may have changed since it was found).
void StreamFile(const FileRange& range, HttpResponse& response) {
  // O_NONBLOCK: a FIFO put where a file was expected must not hold a worker (no effect on
  // a regular file's reads).
  int fd = ::open(range.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Text(response, 500, range.path + ": cannot be opened");
  auto body = std::make_shared<HttpFileBody>(fd, 0, 0);  // closes fd from here on
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return Text(response, 500, range.path + ": not a readable file");
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  body->offset = range.whole ? 0 : range.offset;
  body->length = range.whole ? size : range.length;
  if (body->offset > size || body->length > size - body->offset) {
    return Text(response, 500, range.path + ": changed while it was being read");
  }
  response.status = 200;
  response.content_type = "application/octet-stream";
  response.headers.emplace_back("X-DEBUGINFOD-SIZE", std::to_string(body->length));
  response.headers.emplace_back("X-DEBUGINFOD-FILE", range.path);
  response.headers.emplace_back("Last-Modified", HttpDate(st.st_mtime));
  response.file = std::move(body);
}

int StatusFor(const Error& error) {
  switch (error.code) {
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kInvalidArgument:
      return 400;
    default:
      return 500;
  }
}

}  // namespace

std::optional<BuildIdArtifact> AnswerBuildIdRequest(std::string_view path,
                                                    const DebuginfodApiOptions& options,
                                                    HttpResponse& response) {
  Result<BuildIdPath> request = ParseBuildIdPath(path);
  if (!request) {
    Text(response, 400, request.error().message);
    return std::nullopt;
  }
  Result<FileRange> range = Locate(*request, options);
  if (!range) {
    Text(response, StatusFor(range.error()), range.error().message);
  } else {
    StreamFile(*range, response);
  }
  return request->artifact;
}

}  // namespace stacksym::remote
