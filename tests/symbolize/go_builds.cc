#include "go_builds.h"

#include <unistd.h>

#include <filesystem>

#include "test_util.h"

namespace stacksym::testing {

GoBuilds& GoBuilds::Get() {
  static GoBuilds builds;
  return builds;
}

GoBuilds::GoBuilds() {
  have_go_ = !RunCommand("command -v go").empty();
  if (!have_go_) return;
  dir_ = ::testing::TempDir() + "/go-builds-" + std::to_string(getpid());
  std::filesystem::create_directories(dir_);
  // Module mode with a private cache, and never a toolchain download.
  env_ = "cd " + std::string(STACKSYM_SOURCE_DIR) +
         "/tests/elf/fixtures/go_prog && GOCACHE=" + dir_ + "/cache GOPATH=" + dir_ +
         "/gopath GOFLAGS=-mod=mod GO111MODULE=on " + "GOTOOLCHAIN=local ";
}

GoBuilds::~GoBuilds() {
  if (!dir_.empty()) std::filesystem::remove_all(dir_);
}

std::string GoBuilds::Build(const std::string& variant, const std::string& cgo_setting,
                            const std::string& flags) {
  if (!have_go_) return "";
  if (auto it = paths_.find(variant); it != paths_.end()) return it->second;
  std::string out = dir_ + "/" + variant;
  int code = -1;
  std::string log =
      RunCommand(env_ + cgo_setting + " go build " + flags + " -o " + out + " . 2>&1", &code);
  if (code != 0) {
    error_ += variant + ": " + log + "\n";
    out.clear();
  }
  paths_[variant] = out;
  return out;
}

}  // namespace stacksym::testing
