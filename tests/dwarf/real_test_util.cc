#include "real_test_util.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace stacksym::testing {

namespace fs = std::filesystem;

RealTempDir::RealTempDir() {
  const char* base = getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/stacksym-real-XXXXXX";
  if (mkdtemp(templ.data()) != nullptr) path_ = templ;
}

RealTempDir::~RealTempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string RealTempDir::Make(const std::string& relative) const {
  fs::path full = fs::path(path_) / relative;
  std::error_code ec;
  fs::create_directories(full.parent_path(), ec);
  return full.string();
}

std::string RealFixture(const std::string& name) {
  return std::string(STACKSYM_FIXTURE_DIR) + "/" + name;
}

bool RealCopy(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::create_directories(fs::path(to).parent_path(), ec);
  return fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec) && !ec;
}

bool RealWriteFile(const std::string& path, const std::string& contents) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  return static_cast<bool>(out);
}

std::string RealRun(const std::string& command, const std::string& input, int* exit_code) {
  // The input goes through a file so that a large input and a large output cannot deadlock.
  char in_path[] = "/tmp/stacksym-real-in-XXXXXX";
  int fd = mkstemp(in_path);
  if (fd < 0) {
    if (exit_code) *exit_code = -1;
    return {};
  }
  size_t written = 0;
  while (written < input.size()) {
    ssize_t n = write(fd, input.data() + written, input.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  close(fd);
  std::string full = command + " < " + in_path;
  FILE* pipe = popen(full.c_str(), "r");
  std::string out;
  if (pipe == nullptr) {
    unlink(in_path);
    if (exit_code) *exit_code = -1;
    return out;
  }
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  int status = pclose(pipe);
  unlink(in_path);
  if (exit_code) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

bool RealToolExists(const std::string& tool) {
  int code = 0;
  RealRun("command -v " + tool + " >/dev/null 2>&1", "", &code);
  return code == 0;
}

}  // namespace stacksym::testing
