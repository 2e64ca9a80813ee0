// Go test programs built at test time with Debian's golang-go, from tests/elf/fixtures/go_prog,
// once per test process and variant, in a temporary directory that goes with the process.
//
//   GoBuilds& go = GoBuilds::Get();
//   if (!go.have_go()) GTEST_SKIP() << "needs Go (Debian package golang-go)";
//   std::string stripped = go.Build("stripped", "CGO_ENABLED=0", "-ldflags='-s -w'");
//   ASSERT_FALSE(stripped.empty()) << go.error();
#pragma once

#include <map>
#include <string>

namespace stacksym::testing {

class GoBuilds {
 public:
  static GoBuilds& Get();
  bool have_go() const { return have_go_; }
  // What the failed builds printed.
  const std::string& error() const { return error_; }
  // The program built as `CGO_SETTING go build FLAGS`, made the first time a variant is asked
  // for; empty when it could not be built.
  std::string Build(const std::string& variant, const std::string& cgo_setting,
                    const std::string& flags);

 private:
  GoBuilds();
  ~GoBuilds();

  bool have_go_ = false;
  std::string dir_, env_, error_;
  std::map<std::string, std::string> paths_;
};

}  // namespace stacksym::testing
