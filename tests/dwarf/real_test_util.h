// Helpers shared by the real_* tests (debug-file finding, split DWARF, end-to-end runs):
// temporary directory trees, file copies, and running a shell command for its output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stacksym::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class RealTempDir {
 public:
  RealTempDir();
  ~RealTempDir();
  RealTempDir(const RealTempDir&) = delete;
  RealTempDir& operator=(const RealTempDir&) = delete;
  const std::string& path() const { return path_; }
  // path() + "/" + relative, creating the parent directories.
  std::string Make(const std::string& relative) const;

 private:
  std::string path_;
};

std::string RealFixture(const std::string& name);  // STACKSYM_FIXTURE_DIR/name
// Copies `from` to `to` (parents created); returns false on failure.
bool RealCopy(const std::string& from, const std::string& to);
bool RealWriteFile(const std::string& path, const std::string& contents);
// Runs `command` through sh, feeding `input` on stdin; returns stdout. *exit_code gets the
// exit status (-1 when it could not run).
std::string RealRun(const std::string& command, const std::string& input, int* exit_code);
bool RealToolExists(const std::string& tool);

}  // namespace stacksym::testing
