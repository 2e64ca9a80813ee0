// --output-dir: one pprof file per window (stacksym-<start>.pb.gz, start as UTC
// YYYYMMDDThhmmss.mmmZ), written whole (temporary file, then rename) so that a reader never sees
// half of one; past max_bytes the oldest of these files go, however many are left.
#pragma once

#include <cstdint>
#include <string>

#include "stacksym/profile.h"
#include "stacksym/result.h"

namespace stacksym::agent {

class OutputDir {
 public:
  static Result<OutputDir> Open(const std::string& dir, uint64_t max_bytes);
  // Writes the window; returns the file's path.
  Result<std::string> Write(const Profile& window);
  uint64_t files_removed() const { return files_removed_; }

 private:
  void Trim();
  std::string dir_;
  uint64_t max_bytes_ = 0;
  uint64_t files_removed_ = 0;
};

// "stacksym-20261128T064512.345Z.pb.gz" for a window starting at `start_ns` (wall clock).
std::string WindowFileName(uint64_t start_ns);

}  // namespace stacksym::agent
