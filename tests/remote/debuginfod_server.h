// Debian's `debuginfod` server for tests, on the loopback of a private network namespace: the
// test process moves itself into a namespace of its own first, where only its loopback exists,
// so the server (which listens on every interface) is reachable from nowhere else.
#pragma once

#include <sys/types.h>

#include <string>

namespace stacksym::testing {

// Moves this process into a private network namespace with its loopback up; false (why in
// *why) when that is not allowed.
bool EnterPrivateNetwork(std::string* why);

// True when Debian's debuginfod is installed.
bool HaveDebuginfod();

class DebuginfodServer {
 public:
  // Starts `debuginfod` serving `dir` (its log and database in `work`); waits, at most 30 s,
  // until it answers for the hex build ID `build_id`. False when it did not come up.
  bool Start(const std::string& dir, const std::string& work, const std::string& build_id);
  void Stop();
  ~DebuginfodServer() { Stop(); }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace stacksym::testing
