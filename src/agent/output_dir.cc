#include "agent/output_dir.h"

#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "stacksym/output.h"

namespace stacksym::agent {
namespace {

constexpr std::string_view kPrefix = "stacksym-";
constexpr std::string_view kSuffix = ".pb.gz";

bool IsWindowFile(const std::string& name) {
  return name.size() > kPrefix.size() + kSuffix.size() && name.starts_with(kPrefix) &&
         name.ends_with(kSuffix);
}

}  // namespace

std::string WindowFileName(uint64_t start_ns) {
  time_t seconds = static_cast<time_t>(start_ns / 1000000000ull);
  tm utc;
  gmtime_r(&seconds, &utc);
  char buf[64];
  std::snprintf(buf, sizeof buf, "stacksym-%04d%02d%02dT%02d%02d%02d.%03uZ.pb.gz",
                utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                utc.tm_sec, static_cast<unsigned>(start_ns / 1000000ull % 1000));
  return buf;
}

Result<OutputDir> OutputDir::Open(const std::string& dir, uint64_t max_bytes) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return MakeError(ErrorCode::kInvalidArgument, "--output-dir " + dir + ": not a directory" +
                                                      (ec ? " (" + ec.message() + ")" : ""));
  }
  OutputDir out;
  out.dir_ = dir;
  out.max_bytes_ = max_bytes;
  return out;
}

Result<std::string> OutputDir::Write(const Profile& window) {
  Result<std::string> bytes = EncodePprof(window, /*gzip=*/true);
  if (!bytes) return bytes.error();
  std::string path = dir_ + "/" + WindowFileName(window.start_time_ns);
  std::string temporary = path + ".tmp";
  FILE* f = std::fopen(temporary.c_str(), "wb");
  if (!f) return ErrnoError(errno, temporary);
  bool ok = std::fwrite(bytes->data(), 1, bytes->size(), f) == bytes->size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(temporary.c_str(), path.c_str()) != 0) {
    Error error = ErrnoError(errno, path);
    std::remove(temporary.c_str());
    return error;
  }
  Trim();
  return path;
}

// The oldest window files (by name, which sorts by time) go until the rest fit.
void OutputDir::Trim() {
  if (max_bytes_ == 0) return;
  std::vector<std::pair<std::string, uint64_t>> files;
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    std::string name = entry.path().filename().string();
    if (!IsWindowFile(name)) continue;
    uint64_t size = entry.file_size(ec);
    if (ec) continue;
    files.emplace_back(name, size);
    total += size;
  }
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i + 1 < files.size() && total > max_bytes_; ++i) {
    if (std::remove((dir_ + "/" + files[i].first).c_str()) == 0) {
      total -= files[i].second;
      ++files_removed_;
    }
  }
}

}  // namespace stacksym::agent
