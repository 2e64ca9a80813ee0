// Format names, and reading/writing profile files in any supported format.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "output/gzip.h"
#include "stacksym/output.h"

namespace stacksym {
namespace {

Result<void> WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "write " + path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

// Temp file in the same directory + rename: readers never see half a profile.
Result<void> WriteFileAtomically(const std::string& path, std::string_view data) {
  if (path == "-") return WriteAll(STDOUT_FILENO, data, "stdout");
  std::string temp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0) return ErrnoError(errno, "create " + temp);
  ::fchmod(fd, 0644);
  Result<void> written = WriteAll(fd, data, temp);
  if (::close(fd) != 0 && written) written = ErrnoError(errno, "close " + temp);
  if (written && ::rename(temp.c_str(), path.c_str()) != 0) {
    written = ErrnoError(errno, "rename " + temp + " to " + path);
  }
  if (!written) ::unlink(temp.c_str());
  return written;
}

Result<std::string> ReadWholeFile(const std::string& path) {
  int fd = path == "-" ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "open " + path);
  std::string data;
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      if (fd != STDIN_FILENO) ::close(fd);
      return ErrnoError(err, "read " + path);
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  if (fd != STDIN_FILENO) ::close(fd);
  return data;
}

bool LooksLikeText(std::span<const uint8_t> bytes) {
  for (uint8_t b : bytes.first(std::min<size_t>(bytes.size(), 4096))) {
    if (b < 0x09 || (b > 0x0d && b < 0x20)) return false;
  }
  return true;
}

}  // namespace

const char* ProfileFormatName(ProfileFormat format) {
  switch (format) {
    case ProfileFormat::kPprof:
      return "pprof";
    case ProfileFormat::kFolded:
      return "folded";
    case ProfileFormat::kHtml:
      return "html";
    case ProfileFormat::kSvg:
      return "svg";
  }
  return "?";
}

Result<ProfileFormat> ParseProfileFormat(std::string_view name) {
  for (ProfileFormat f :
       {ProfileFormat::kPprof, ProfileFormat::kFolded, ProfileFormat::kHtml, ProfileFormat::kSvg}) {
    if (name == ProfileFormatName(f)) return f;
  }
  return MakeError(ErrorCode::kInvalidArgument, "unknown profile format \"" + std::string(name) +
                                                    "\" (known: pprof, folded, html, svg)");
}

std::optional<ProfileFormat> ProfileFormatFromPath(std::string_view path) {
  if (path.ends_with(".pb.gz") || path.ends_with(".pb") || path.ends_with(".pprof")) {
    return ProfileFormat::kPprof;
  }
  if (path.ends_with(".folded") || path.ends_with(".txt")) return ProfileFormat::kFolded;
  if (path.ends_with(".html") || path.ends_with(".htm")) return ProfileFormat::kHtml;
  if (path.ends_with(".svg")) return ProfileFormat::kSvg;
  return std::nullopt;
}

Result<void> WriteProfileAs(const Profile& profile, ProfileFormat format, const std::string& path,
                            const WriteOptions& given) {
  WriteOptions options = given;
  if (options.sample_type) {
    Result<SampleType> type = ChooseSampleType(profile, options.sample_type);
    if (!type) return std::move(type).error();
    options.folded.sample_type = options.flame_graph.sample_type = *type;
  }
  for (std::optional<SampleType> type :
       {options.folded.sample_type, options.flame_graph.sample_type}) {
    if (Result<SampleType> checked = ChooseSampleType(profile, type); !checked) {
      return std::move(checked).error();
    }
  }
  std::string data;
  switch (format) {
    case ProfileFormat::kPprof: {
      Result<std::string> encoded = EncodePprof(profile);
      if (!encoded) return std::move(encoded).error();
      data = std::move(*encoded);
      break;
    }
    case ProfileFormat::kFolded:
      data = FormatFolded(profile, options.folded);
      break;
    case ProfileFormat::kHtml:
      data = RenderFlameGraphHtml(profile, options.flame_graph);
      break;
    case ProfileFormat::kSvg:
      data = RenderFlameGraphSvg(profile, options.flame_graph);
      break;
  }
  Result<void> written = WriteFileAtomically(path, data);
  if (!written) return std::move(written).error().WithFile(path);
  return {};
}

Result<void> WriteProfile(const Profile& profile, const std::string& path,
                          const WriteOptions& options) {
  std::optional<ProfileFormat> format = ProfileFormatFromPath(path);
  if (!format) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "cannot tell the output format from the file name \"" + path +
                         "\" (use .pb.gz, .folded, .html or .svg)");
  }
  return WriteProfileAs(profile, *format, path, options);
}

Result<Profile> ParseProfileBytes(std::span<const uint8_t> bytes) {
  if (output::IsGzip(bytes) || !LooksLikeText(bytes)) return DecodePprof(bytes);
  return ParseFolded({reinterpret_cast<const char*>(bytes.data()), bytes.size()});
}

Result<Profile> ReadProfile(const std::string& path) {
  Result<std::string> data = ReadWholeFile(path);
  if (!data) return std::move(data).error();
  Result<Profile> profile =
      ParseProfileBytes({reinterpret_cast<const uint8_t*>(data->data()), data->size()});
  if (!profile) return std::move(profile).error().WithFile(path);
  return profile;
}

}  // namespace stacksym
